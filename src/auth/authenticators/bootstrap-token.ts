/**
 * --enable-bootstrap-token-auth: bearer tokens `<id>.<secret>` checked against the Secrets
 * kube-system/bootstrap-token-<id>, read from an in-process copy of the Secrets (Kubernetes reads
 * an informer's lister for the same reason: no store read per request). The user is
 * system:bootstrap:<id> in system:bootstrappers plus the token's extra groups.
 *
 * Every refusal answers "not ours" (Kubernetes returns no user and no error), so the request is
 * 401 unless another authenticator knows the token; the reason is logged at debug level without
 * the secret. The secret is compared in constant time.
 */
import { timingSafeEqual } from 'node:crypto';
import type { Logger } from 'pino';
import type { KubeObject } from '../../api/resources/types.js';
import type { TokenAuthenticator } from '../authenticator.js';
import type { UserInfo } from '../user.js';
import {
  BOOTSTRAP_TOKEN_NAMESPACE, BOOTSTRAP_USER_PREFIX, KEY_TOKEN_ID, KEY_TOKEN_SECRET, KEY_USAGE_AUTHENTICATION,
  bootstrapGroups, isBootstrapTokenSecret, isExpired, parseBootstrapToken, secretData, secretNameOf,
} from '../bootstrap/token-secret.js';

/** Where Secrets are read from: by `namespace/name`, as StoreMirror keys them. */
export interface SecretSource {
  readonly objects: ReadonlyMap<string, KubeObject>;
}

export interface BootstrapTokenAuthenticatorOptions {
  /** The Secrets; undefined until storage is open (tokens are then not ours). */
  secrets: () => SecretSource | undefined;
  now?: () => number;
  log?: Logger;
}

/** Constant-time equality of two strings (a length difference is not hidden, as in Go's subtle). */
function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length === y.length && timingSafeEqual(x, y);
}

export class BootstrapTokenAuthenticator implements TokenAuthenticator {
  readonly name = 'bootstrap-token';

  constructor(private readonly o: BootstrapTokenAuthenticatorOptions) {}

  async authenticateToken(token: string): Promise<UserInfo | undefined> {
    const parsed = parseBootstrapToken(token);
    if (!parsed) return undefined;
    const name = secretNameOf(parsed.id);
    const secret = this.o.secrets()?.objects.get(`${BOOTSTRAP_TOKEN_NAMESPACE}/${name}`);
    const refuse = (why: string): undefined => {
      this.o.log?.debug({ secret: `${BOOTSTRAP_TOKEN_NAMESPACE}/${name}` }, `bootstrap token refused: ${why}`);
      return undefined;
    };
    if (!secret) return refuse('no such secret');
    if (secret.metadata?.deletionTimestamp) return refuse('secret is being deleted');
    if (!isBootstrapTokenSecret(secret)) return refuse('secret is not of type bootstrap.kubernetes.io/token');
    if (!sameSecret(secretData(secret, KEY_TOKEN_SECRET), parsed.secret)) return refuse(`wrong ${KEY_TOKEN_SECRET}`);
    if (secretData(secret, KEY_TOKEN_ID) !== parsed.id) return refuse(`${KEY_TOKEN_ID} does not match the name`);
    if (isExpired(secret, this.o.now?.() ?? Date.now())) return refuse('expired');
    if (secretData(secret, KEY_USAGE_AUTHENTICATION) !== 'true') return refuse(`not marked ${KEY_USAGE_AUTHENTICATION}=true`);
    const groups = bootstrapGroups(secret);
    if (!groups) return refuse('auth-extra-groups has a group not starting with system:bootstrappers:');
    return { name: BOOTSTRAP_USER_PREFIX + parsed.id, groups };
  }
}

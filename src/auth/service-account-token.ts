/**
 * Service-account tokens as bearer credentials (the API server's authenticator).
 *
 * Two kinds of JWT are accepted, both signed by one of the verification keys:
 *  - bound tokens (TokenRequest, projected volumes): `iss` one of the configured issuers,
 *    `aud` naming at least one API audience, `exp`/`nbf` honoured (60 s leeway), and the
 *    private claim `kubernetes.io` {namespace, serviceaccount {name, uid}, pod?, secret?, node?};
 *  - legacy tokens (token Secrets written by the token controller): `iss`
 *    "kubernetes/serviceaccount", claims `kubernetes.io/serviceaccount/*`, no expiry.
 * With lookup on (--service-account-lookup), the service account must still exist with the
 * token's uid, and so must the bound pod/secret/node (not being deleted); a legacy token must
 * still be the `token` of its Secret. The user is system:serviceaccount:NS:NAME (uid = the
 * account's uid) in groups system:serviceaccounts and system:serviceaccounts:NS; bound tokens
 * add the pod (and node) to `extra` as Kubernetes does.
 *
 * A token that is not a JWT, or names an issuer we do not serve, is "not ours" (undefined) so
 * other token authenticators may try it. A token that is ours but fails a check is also
 * undefined (the bearer chain then answers 401); the reason is logged at debug level.
 * Stateless apart from the key list: safe for concurrent use.
 */
import { compactVerify, decodeProtectedHeader } from 'jose';
import { pino, type Logger } from 'pino';
import type { TokenAuthenticator } from './authenticator.js';
import type { VerificationKey } from './service-account-keys.js';
import type { UserInfo } from './user.js';

export const LEGACY_SA_ISSUER = 'kubernetes/serviceaccount';
export const SA_USER_PREFIX = 'system:serviceaccount:';
export const SA_ALL_GROUP = 'system:serviceaccounts';
export const SA_GROUP_PREFIX = 'system:serviceaccounts:';
/** Extra keys Kubernetes sets for bound tokens. */
export const EXTRA_POD_NAME = 'authentication.kubernetes.io/pod-name';
export const EXTRA_POD_UID = 'authentication.kubernetes.io/pod-uid';
export const EXTRA_NODE_NAME = 'authentication.kubernetes.io/node-name';
export const EXTRA_NODE_UID = 'authentication.kubernetes.io/node-uid';
export const EXTRA_CREDENTIAL_ID = 'authentication.kubernetes.io/credential-id';

const LEEWAY_SECONDS = 60;

export interface RefClaim { name: string; uid: string }

/** The `kubernetes.io` private claim of bound tokens. */
export interface KubernetesClaim {
  namespace: string;
  serviceaccount: RefClaim;
  pod?: RefClaim;
  secret?: RefClaim;
  node?: RefClaim;
}

export interface BoundTokenClaims {
  iss: string;
  sub: string;
  aud: string[];
  exp: number;
  iat: number;
  nbf: number;
  jti?: string;
  'kubernetes.io': KubernetesClaim;
}

/** What lookup needs of a stored object. */
export interface LookedUpObject {
  uid: string;
  /** metadata.deletionTimestamp is set. */
  deleting: boolean;
}

/** Reads the objects a token names; undefined when one does not exist. */
export interface ServiceAccountLookup {
  serviceAccount(namespace: string, name: string): Promise<LookedUpObject | undefined>;
  pod(namespace: string, name: string): Promise<LookedUpObject | undefined>;
  /** `token` is the decoded data.token of the Secret, if any. */
  secret(namespace: string, name: string): Promise<(LookedUpObject & { token?: string }) | undefined>;
  node(name: string): Promise<LookedUpObject | undefined>;
}

export interface ServiceAccountTokenAuthenticatorOptions {
  readonly keys: readonly VerificationKey[];
  /** Issuers of bound tokens we accept (--service-account-issuer). */
  readonly issuers: readonly string[];
  /** API audiences (--service-account-api-audiences, else the issuer). */
  readonly audiences: readonly string[];
  /** Accept legacy Secret-based tokens. @default true */
  readonly acceptLegacy?: boolean;
  /**
   * With --service-account-lookup: returns the lookup (undefined while the store is not ready,
   * which fails the token). Omit to switch lookup off.
   */
  readonly lookup?: () => ServiceAccountLookup | undefined;
  /** Seconds since the epoch. */
  readonly now?: () => number;
  readonly log?: Logger;
}

type Dict = Record<string, unknown>;
const isDict = (v: unknown): v is Dict => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

class TokenInvalid extends Error {}

function refOf(v: unknown): RefClaim | undefined {
  if (!isDict(v)) return undefined;
  return { name: str(v.name), uid: str(v.uid) };
}

function audiencesOf(v: unknown): string[] {
  if (typeof v === 'string') return [v];
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

export function serviceAccountUser(namespace: string, name: string, uid: string, extra?: Record<string, string[]>): UserInfo {
  const u: UserInfo = { name: `${SA_USER_PREFIX}${namespace}:${name}`, groups: [SA_ALL_GROUP, `${SA_GROUP_PREFIX}${namespace}`] };
  if (uid) u.uid = uid;
  if (extra && Object.keys(extra).length) u.extra = extra;
  return u;
}

export class ServiceAccountTokenAuthenticator implements TokenAuthenticator {
  readonly name = 'serviceaccount-token';
  private readonly log: Logger;
  private readonly now: () => number;

  constructor(private readonly o: ServiceAccountTokenAuthenticatorOptions) {
    this.log = o.log ?? pino({ level: 'silent' });
    this.now = o.now ?? ((): number => Math.floor(Date.now() / 1000));
  }

  async authenticateToken(token: string): Promise<UserInfo | undefined> {
    const parts = token.split('.');
    if (parts.length !== 3) return undefined;
    let payload: Dict;
    try {
      const p: unknown = JSON.parse(Buffer.from(parts[1] ?? '', 'base64url').toString('utf8'));
      if (!isDict(p)) return undefined;
      payload = p;
    } catch {
      return undefined;
    }
    const iss = str(payload.iss);
    const legacy = iss === LEGACY_SA_ISSUER;
    if (legacy ? this.o.acceptLegacy === false : !this.o.issuers.includes(iss)) return undefined;
    try {
      await this.verifySignature(token);
      return legacy ? await this.legacyUser(token, payload) : await this.boundUser(payload);
    } catch (e) {
      if (!(e instanceof TokenInvalid)) throw e;
      this.log.debug({ reason: e.message }, 'service-account token rejected');
      return undefined;
    }
  }

  private async verifySignature(token: string): Promise<void> {
    let kid = '';
    let alg = '';
    try {
      const h = decodeProtectedHeader(token);
      kid = h.kid ?? '';
      alg = h.alg ?? '';
    } catch {
      throw new TokenInvalid('malformed JWS header');
    }
    // A matching key id first, then every other key of the right algorithm (old tokens may
    // carry no kid, and Kubernetes tries every key).
    const candidates = this.o.keys.filter((k) => k.alg === alg).sort((a, b) => Number(b.kid === kid) - Number(a.kid === kid));
    for (const k of candidates) {
      try {
        await compactVerify(token, k.key, { algorithms: [k.alg] });
        return;
      } catch { /* try the next key */ }
    }
    throw new TokenInvalid('invalid signature');
  }

  private async lookup(): Promise<ServiceAccountLookup | undefined> {
    if (!this.o.lookup) return undefined;
    const l = this.o.lookup();
    if (!l) throw new TokenInvalid('service account lookup is not ready yet');
    return l;
  }

  private async checkAccount(l: ServiceAccountLookup, ns: string, name: string, uid: string): Promise<void> {
    const sa = await l.serviceAccount(ns, name);
    if (!sa) throw new TokenInvalid(`serviceaccounts "${name}" not found`);
    if (sa.deleting) throw new TokenInvalid(`service account ${ns}/${name} has been deleted`);
    if (uid && sa.uid !== uid) throw new TokenInvalid(`service account UID (${sa.uid}) does not match claim (${uid})`);
  }

  private async boundUser(p: Dict): Promise<UserInfo> {
    const now = this.now();
    const exp = typeof p.exp === 'number' ? p.exp : undefined;
    if (exp === undefined) throw new TokenInvalid('bound token has no exp claim');
    if (now > exp + LEEWAY_SECONDS) throw new TokenInvalid('service account token has expired');
    if (typeof p.nbf === 'number' && now + LEEWAY_SECONDS < p.nbf) throw new TokenInvalid('service account token is not valid yet');
    const aud = audiencesOf(p.aud);
    if (!aud.some((a) => this.o.audiences.includes(a))) throw new TokenInvalid(`token audiences ${JSON.stringify(aud)} do not include an API audience`);
    const k = p['kubernetes.io'];
    if (!isDict(k)) throw new TokenInvalid('token has no kubernetes.io claim');
    const ns = str(k.namespace);
    const sa = refOf(k.serviceaccount);
    if (!ns || !sa?.name) throw new TokenInvalid('token does not name a namespace and service account');
    if (str(p.sub) !== `${SA_USER_PREFIX}${ns}:${sa.name}`) throw new TokenInvalid('sub claim does not match the service account');
    const pod = refOf(k.pod);
    const secret = refOf(k.secret);
    const node = refOf(k.node);
    const l = await this.lookup();
    if (l) {
      await this.checkAccount(l, ns, sa.name, sa.uid);
      const check = async (what: string, ref: RefClaim | undefined, get: (name: string) => Promise<LookedUpObject | undefined>): Promise<void> => {
        if (!ref) return;
        const o = await get(ref.name);
        if (!o) throw new TokenInvalid(`${what} "${ref.name}" not found`);
        if (o.deleting) throw new TokenInvalid(`${what} "${ref.name}" is being deleted`);
        if (ref.uid && o.uid !== ref.uid) throw new TokenInvalid(`${what} "${ref.name}" UID (${o.uid}) does not match claim (${ref.uid})`);
      };
      await check('pods', pod, (n) => l.pod(ns, n));
      await check('secrets', secret, (n) => l.secret(ns, n));
      await check('nodes', node, (n) => l.node(n));
    }
    const extra: Record<string, string[]> = {};
    if (pod) { extra[EXTRA_POD_NAME] = [pod.name]; extra[EXTRA_POD_UID] = [pod.uid]; }
    if (node) { extra[EXTRA_NODE_NAME] = [node.name]; extra[EXTRA_NODE_UID] = [node.uid]; }
    const jti = str(p.jti);
    if (jti) extra[EXTRA_CREDENTIAL_ID] = [`JTI=${jti}`];
    return serviceAccountUser(ns, sa.name, sa.uid, extra);
  }

  private async legacyUser(token: string, p: Dict): Promise<UserInfo> {
    const ns = str(p['kubernetes.io/serviceaccount/namespace']);
    const name = str(p['kubernetes.io/serviceaccount/service-account.name']);
    const uid = str(p['kubernetes.io/serviceaccount/service-account.uid']);
    const secretName = str(p['kubernetes.io/serviceaccount/secret.name']);
    if (!ns || !name || !uid || !secretName) throw new TokenInvalid('legacy token misses service-account claims');
    if (str(p.sub) !== `${SA_USER_PREFIX}${ns}:${name}`) throw new TokenInvalid('sub claim does not match the service account');
    const l = await this.lookup();
    if (l) {
      const secret = await l.secret(ns, secretName);
      if (!secret) throw new TokenInvalid(`secrets "${secretName}" not found`);
      if (secret.deleting) throw new TokenInvalid(`token secret ${ns}/${secretName} is being deleted`);
      if (secret.token !== token) throw new TokenInvalid(`token does not match the one in secret ${ns}/${secretName}`);
      await this.checkAccount(l, ns, name, uid);
    }
    return serviceAccountUser(ns, name, uid);
  }
}

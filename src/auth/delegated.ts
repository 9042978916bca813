/**
 * Delegated authentication and authorization of a component's own secure port (the controller
 * manager's and the scheduler's), as Kubernetes' components do it
 * (k8s.io/apiserver DelegatingAuthenticationOptions / DelegatingAuthorizationOptions):
 *  - who: a client certificate verified against the cluster CA (CommonName → user,
 *    Organizations → groups); a bearer token checked by a TokenReview at the API server
 *    (answers cached 10 s); anything else is system:anonymous;
 *  - may they: the always-allowed paths (/healthz, /readyz, /livez) pass, as does the
 *    system:masters group; everything else is a SubjectAccessReview at the API server
 *    (non-resource attributes: the path and the lower-case method; answers cached 10 s).
 * The reviews go through the component's own client, whose role (system:kube-controller-manager,
 * system:kube-scheduler) grants creating them. A failed review is a 500 "Authorization error"
 * (never cached); bad credentials are a 401, a denial a 403 with Kubernetes' wording.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { pino, type Logger } from 'pino';
import type { KubeObject } from '../api/resources/types.js';
import { AnonymousAuthenticator } from './anonymous.js';
import type { AuthRequest, Authenticator, TokenAuthenticator } from './authenticator.js';
import { BearerTokenAuthenticator } from './bearer-token.js';
import { UnionAuthenticator } from './union-authenticator.js';
import { userFromReview } from './review-user.js';
import type { UserInfo } from './user.js';
import { TtlCache } from '../util/ttl-cache.js';
import { X509Authenticator } from './x509.js';

/** Creates an object through the API (a RestClient's create fits). */
export type ReviewCreate = <T extends KubeObject>(ref: { group: string; version: string; resource: string }, obj: KubeObject) => Promise<T>;

/** Kubernetes' --authorization-always-allow-paths default. */
export const ALWAYS_ALLOW_PATHS: readonly string[] = ['/healthz', '/readyz', '/livez'];
/** Kubernetes' DelegatingAuthorizationOptions.AlwaysAllowGroups default. */
export const ALWAYS_ALLOW_GROUPS: readonly string[] = ['system:masters'];
/** Kubernetes' delegated cache TTLs (token reviews; allowed and denied access reviews). */
const CACHE_TTL_MS = 10_000;

type Dict = Record<string, unknown>;
const isDict = (v: unknown): v is Dict => typeof v === 'object' && v !== null && !Array.isArray(v);



/** Bearer tokens checked by TokenReview (authentication.k8s.io/v1). */
export class TokenReviewAuthenticator implements TokenAuthenticator {
  readonly name = 'token-review';
  private readonly cache = new TtlCache<UserInfo | null>();
  constructor(private readonly create: ReviewCreate) {}

  async authenticateToken(token: string): Promise<UserInfo | undefined> {
    const key = createHash('sha256').update(token).digest('base64url');
    const user = await this.cache.get(key, async () => {
      const tr = await this.create<KubeObject & { status?: Dict }>({ group: 'authentication.k8s.io', version: 'v1', resource: 'tokenreviews' },
        { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } });
      const status = isDict(tr.status) ? tr.status : {};
      return status.authenticated === true ? userFromReview(status.user) ?? null : null;
    }, () => CACHE_TTL_MS);
    return user ?? undefined;
  }
}

export interface DelegatedAccessOptions {
  create: ReviewCreate;
  /** The listener verifies client certificates against the cluster CA. */
  clientCa: boolean;
  log?: Logger;
}

export type DelegatedResult =
  | { ok: true; user?: UserInfo }
  | { ok: false; code: 401 | 403 | 500; message: string };

export interface DelegatedAccess {
  /** Authenticates and authorizes one request for `path`. Never throws. */
  check(req: IncomingMessage, path: string): Promise<DelegatedResult>;
}

function authRequestOf(req: IncomingMessage): AuthRequest {
  const sock = req.socket as Partial<TLSSocket>;
  const peer = typeof sock.getPeerCertificate === 'function' ? sock.getPeerCertificate() : undefined;
  const out: AuthRequest = { headers: req.headers };
  if (peer) {
    out.tls = { authorized: sock.authorized === true, peerCertificate: peer };
    if (sock.authorizationError) out.tls.authorizationError = String(sock.authorizationError);
  }
  return out;
}

export function delegatedAccess(o: DelegatedAccessOptions): DelegatedAccess {
  const log = o.log ?? pino({ level: 'silent' });
  const chain: Authenticator[] = [];
  if (o.clientCa) chain.push(new X509Authenticator());
  chain.push(new BearerTokenAuthenticator([new TokenReviewAuthenticator(o.create)]));
  const authenticator = new UnionAuthenticator(chain, new AnonymousAuthenticator());
  const decisions = new TtlCache<boolean>();

  const review = async (user: UserInfo, path: string, verb: string): Promise<boolean> => {
    const spec: Dict = {
      user: user.name, groups: user.groups, ...(user.uid ? { uid: user.uid } : {}),
      ...(user.extra && Object.keys(user.extra).length ? { extra: user.extra } : {}),
      nonResourceAttributes: { path, verb },
    };
    return decisions.get(JSON.stringify(spec), async () => {
      const sar = await o.create<KubeObject & { status?: Dict }>({ group: 'authorization.k8s.io', version: 'v1', resource: 'subjectaccessreviews' },
        { apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec });
      return isDict(sar.status) && sar.status.allowed === true;
    }, () => CACHE_TTL_MS);
  };

  return {
    async check(req, path) {
      if (ALWAYS_ALLOW_PATHS.includes(path)) return { ok: true };
      let user: UserInfo;
      try {
        const r = await authenticator.authenticate(authRequestOf(req));
        if (!r.ok) {
          log.debug({ path, err: r.error }, 'authentication failed');
          return { ok: false, code: 401, message: 'Unauthorized' };
        }
        user = r.user;
      } catch (e) {
        log.warn({ path, err: (e as Error).message }, 'authentication error');
        return { ok: false, code: 401, message: 'Unauthorized' };
      }
      if (user.groups.some((g) => ALWAYS_ALLOW_GROUPS.includes(g))) return { ok: true, user };
      const verb = (req.method ?? 'GET').toLowerCase();
      try {
        if (await review(user, path, verb)) return { ok: true, user };
      } catch (e) {
        log.warn({ path, user: user.name, err: (e as Error).message }, 'authorization error');
        return { ok: false, code: 500, message: `Internal Server Error: "${path}": subjectaccessreviews failed` };
      }
      return { ok: false, code: 403, message: `forbidden: User "${user.name}" cannot ${verb} path "${path}"` };
    },
  };
}

/**
 * The secure port's gate of a component (controller manager, scheduler): with delegated access,
 * `serve` runs once the caller is authenticated and authorized for `path`; without it, only a
 * client certificate the listener verified against the cluster CA lets a caller in.
 * `refuse` answers a refusal (status code and text).
 */
export function gateSecurePort(access: DelegatedAccess | undefined, req: IncomingMessage, path: string,
  serve: () => void, refuse: (code: number, text: string) => void): void {
  if (!access) {
    if ((req.socket as TLSSocket).authorized) serve();
    else refuse(401, 'Unauthorized: a client certificate signed by the cluster CA is required\n');
    return;
  }
  access.check(req, path).then((r) => {
    if (r.ok) serve();
    else refuse(r.code, `${r.message}\n`);
  }, (e: Error) => refuse(500, `${e.message}\n`));
}

/**
 * Authentication: the configured authenticators (client certificate, bearer token, ...) in
 * order, anonymous last when enabled. Bad credentials, or none with anonymous off, get 401.
 */
import type { TLSSocket } from 'node:tls';
import type { AuthRequest, Authenticator } from '../../../auth/authenticator.js';
import { errors } from '../../../api/meta/status.js';
import type { UserInfo } from '../../../auth/user.js';
import type { ApiRequest } from '../context.js';
import type { Exchange, Filter } from './filter.js';

/** The TLS socket under a request (for HTTP/2 streams, their session's socket). */
export function tlsSocketOf(req: ApiRequest): TLSSocket | undefined {
  const sock = req.socket as TLSSocket | undefined;
  return sock && typeof sock.getPeerCertificate === 'function' ? sock : undefined;
}

/** TLS facts do not change over a connection: read the peer certificate once per socket. */
const tlsFacts = new WeakMap<TLSSocket, NonNullable<AuthRequest['tls']>>();

export function authRequestOf(req: ApiRequest): AuthRequest {
  const sock = tlsSocketOf(req);
  const out: AuthRequest = { headers: req.headers, rawHeaders: req.rawHeaders };
  if (sock) {
    let facts = tlsFacts.get(sock);
    if (!facts) {
      // With its issuer chain: an authenticator checks the chain leads to its own CA (ca-bundle.ts).
      facts = { authorized: sock.authorized, peerCertificate: sock.getPeerCertificate(true) };
      if (sock.authorizationError) facts.authorizationError = String(sock.authorizationError);
      tlsFacts.set(sock, facts);
    }
    out.tls = facts;
  }
  return out;
}

/**
 * Users authenticated by their connection's client certificate, per connection. A valid
 * certificate decides over bearer tokens, and the certificate cannot change on a connection,
 * so every later request on it without an Authorization header gets the same user (with one,
 * HTTP basic — tried before the certificate — may name another). Not kept for a trusted front
 * proxy's connection, whose requests each name their user (result.perRequest). Frozen: shared
 * by those requests.
 */
const certificateUsers = new WeakMap<TLSSocket, { user: UserInfo; notAfter: number }>();

/** Told of each refused request before its 401 (audit records failed authentication). */
export type OnRefused = (x: Exchange) => void | Promise<void>;

export function authentication(authenticator: Authenticator, onRefused?: OnRefused): Filter {
  return {
    name: 'authentication',
    run(x: Exchange, next: () => Promise<void>): Promise<void> {
      const sock = tlsSocketOf(x.req);
      const known = sock && x.req.headers['authorization'] === undefined ? certificateUsers.get(sock) : undefined;
      // A connection whose certificate already named its user passes on without a promise of its
      // own, until the certificate expires (then it is authenticated again, and refused).
      if (known && Date.now() <= known.notAfter) return authenticated(authenticator, x, known.user, next);
      return authenticateAndRun(authenticator, x, sock, next, onRefused);
    },
  };
}

async function authenticateAndRun(authenticator: Authenticator, x: Exchange, sock: TLSSocket | undefined, next: () => Promise<void>, onRefused: OnRefused | undefined): Promise<void> {
  const r = await authenticator.authenticate(authRequestOf(x.req));
  if (!r.ok) {
    x.ctx.log.debug({ reason: r.error ?? 'no credentials' }, 'unable to authenticate the request');
    if (onRefused) await onRefused(x);
    throw errors.unauthorized('Unauthorized');
  }
  const user = r.user;
  if (sock && r.method === 'x509' && !r.perRequest) {
    const notAfter = Date.parse(sock.getPeerCertificate().valid_to);
    certificateUsers.set(sock, { user: freezeUser(user), notAfter: Number.isFinite(notAfter) ? notAfter : 0 });
  }
  await authenticated(authenticator, x, user, next);
}

function authenticated(authenticator: Authenticator, x: Exchange, user: UserInfo, next: () => Promise<void>): Promise<void> {
  x.ctx.user = user;
  // Credentials stop here: nothing downstream (proxies above all) may see or forward them,
  // front-proxy identity headers included, whoever authenticated the request.
  if (x.req.headers['authorization'] !== undefined) delete x.req.headers['authorization'];
  authenticator.clearIdentityHeaders?.(x.req.headers);
  return next();
}

function freezeUser(u: UserInfo): UserInfo {
  Object.freeze(u.groups);
  if (u.extra) Object.freeze(u.extra);
  return Object.freeze(u);
}

/**
 * The authentication chain: each authenticator in order, the first user wins. When none
 * succeeds, any error (bad certificate, unknown token) fails the request; only a request with no
 * credentials at all falls through to the anonymous authenticator, if configured. Every
 * authenticated (non-anonymous) user also joins system:authenticated.
 */
import type { AuthRequest, AuthResult, Authenticator } from './authenticator.js';
import { AUTHENTICATED_GROUP, UNAUTHENTICATED_GROUP, type UserInfo } from './user.js';

export class UnionAuthenticator implements Authenticator {
  readonly name = 'union';
  readonly clearIdentityHeaders?: (headers: AuthRequest['headers']) => void;

  constructor(private readonly chain: Authenticator[], private readonly anonymous?: Authenticator, clearIdentityHeaders?: (headers: AuthRequest['headers']) => void) {
    if (clearIdentityHeaders) this.clearIdentityHeaders = clearIdentityHeaders;
  }

  async authenticate(req: AuthRequest): Promise<AuthResult> {
    const errors: string[] = [];
    for (let i = 0; i < this.chain.length; i++) {
      const r = await this.chain[i]!.authenticate(req);
      if (r.ok) return withAuthenticatedGroup(this.earlierTrusts(i, req) ? { ...r, perRequest: true } : r);
      if (r.error) errors.push(r.error);
    }
    if (errors.length) return { ok: false, error: errors.join('; ') };
    if (this.anonymous) return this.anonymous.authenticate(req);
    return { ok: false };
  }

  /** Whether an authenticator before the i-th could name another user for a later request on this connection. */
  private earlierTrusts(i: number, req: AuthRequest): boolean {
    for (let j = 0; j < i; j++) if (this.chain[j]!.trustsConnection?.(req)) return true;
    return false;
  }
}

function withAuthenticatedGroup(r: AuthResult & { ok: true }): AuthResult {
  const user = r.user;
  const groups = user.groups;
  if (groups.includes(AUTHENTICATED_GROUP) || groups.includes(UNAUTHENTICATED_GROUP)) return r;
  // A frozen user (a static token's) is the same on every request: so is its extended form.
  if (Object.isFrozen(user)) {
    let joined = joinedUsers.get(user);
    if (!joined) joinedUsers.set(user, joined = Object.freeze({ ...user, groups: Object.freeze([...groups, AUTHENTICATED_GROUP]) as string[] }));
    return { ...r, user: joined };
  }
  return { ...r, user: { ...user, groups: [...groups, AUTHENTICATED_GROUP] } };
}

const joinedUsers = new WeakMap<UserInfo, UserInfo>();

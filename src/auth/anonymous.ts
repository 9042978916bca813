/** --anonymous-auth: a request nothing else authenticated (and nothing rejected) is system:anonymous. */
import type { AuthResult, Authenticator } from './authenticator.js';
import { ANONYMOUS_USER_NAME, UNAUTHENTICATED_GROUP } from './user.js';

export class AnonymousAuthenticator implements Authenticator {
  readonly name = 'anonymous';
  async authenticate(): Promise<AuthResult> {
    return { ok: true, method: this.name, user: { name: ANONYMOUS_USER_NAME, groups: [UNAUTHENTICATED_GROUP] } };
  }
}

/** --authorization-mode=AlwaysAllow: every request is allowed. */
import type { AuthorizationResult, Authorizer } from './authorizer.js';

export class AlwaysAllowAuthorizer implements Authorizer {
  readonly name = 'AlwaysAllow';
  authorize(): AuthorizationResult {
    return { decision: 'allow', reason: '' };
  }
}

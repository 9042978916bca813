/**
 * --authorization-mode=AlwaysDeny: never allows. Like Kubernetes it answers "no opinion" (so a
 * later mode may still allow) with the reason shown in the 403.
 */
import type { AuthorizationResult, Authorizer } from './authorizer.js';

export class AlwaysDenyAuthorizer implements Authorizer {
  readonly name = 'AlwaysDeny';
  authorize(): AuthorizationResult {
    return { decision: 'noOpinion', reason: 'Everything is forbidden.' };
  }
}

/** Members of the privileged groups (system:masters) are allowed everything, before any mode. */
import type { AuthorizationAttributes, AuthorizationResult, Authorizer } from './authorizer.js';
import { PRIVILEGED_GROUP } from './user.js';

const ALLOW: AuthorizationResult = Object.freeze({ decision: 'allow', reason: '' });
const NO_OPINION: AuthorizationResult = Object.freeze({ decision: 'noOpinion', reason: '' });

export class PrivilegedGroupsAuthorizer implements Authorizer {
  readonly name = 'PrivilegedGroups';
  constructor(private readonly groups: string[] = [PRIVILEGED_GROUP]) {}
  authorize(attrs: AuthorizationAttributes): AuthorizationResult {
    const hit = attrs.user.groups.some((g) => this.groups.includes(g));
    return hit ? ALLOW : NO_OPINION;
  }
}

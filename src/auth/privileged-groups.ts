/** Members of the privileged groups (system:masters) are allowed everything, before any mode. */
import type { AuthorizationAttributes, AuthorizationResult, Authorizer } from './authorizer.js';
import { PRIVILEGED_GROUP } from './user.js';

export class PrivilegedGroupsAuthorizer implements Authorizer {
  readonly name = 'PrivilegedGroups';
  constructor(private readonly groups: string[] = [PRIVILEGED_GROUP]) {}
  async authorize(attrs: AuthorizationAttributes): Promise<AuthorizationResult> {
    const hit = attrs.user.groups.some((g) => this.groups.includes(g));
    return hit ? { decision: 'allow', reason: '' } : { decision: 'noOpinion', reason: '' };
  }
}

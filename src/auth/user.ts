/** Who is asking: from a client certificate (CN, O), a token, or anonymous. */
export interface UserInfo {
  name: string;
  uid?: string;
  groups: string[];
  extra?: Record<string, string[]>;
}

export const ANONYMOUS_USER_NAME = 'system:anonymous';
export const UNAUTHENTICATED_GROUP = 'system:unauthenticated';
export const AUTHENTICATED_GROUP = 'system:authenticated';
/** Members are allowed everything by every authorizer chain. */
export const PRIVILEGED_GROUP = 'system:masters';

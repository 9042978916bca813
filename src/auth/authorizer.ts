/**
 * Authorizer: decides whether a user may do a verb on a resource or a non-resource path.
 * `noOpinion` passes the question to the next authorizer in the chain; when every authorizer
 * has no opinion, the request is forbidden.
 */
import type { UserInfo } from './user.js';

export interface AuthorizationAttributes {
  user: UserInfo;
  verb: string;
  isResourceRequest: boolean;
  /** For non-resource requests. */
  path: string;
  namespace: string;
  apiGroup: string;
  apiVersion: string;
  resource: string;
  subresource: string;
  name: string;
}

export type Decision = 'allow' | 'deny' | 'noOpinion';

export interface AuthorizationResult {
  decision: Decision;
  /** Why; appended to the 403 message. */
  reason: string;
}

export interface Authorizer {
  readonly name: string;
  /** A plain result when the answer needs no I/O (callers await it either way). */
  authorize(attrs: AuthorizationAttributes): AuthorizationResult | Promise<AuthorizationResult>;
}

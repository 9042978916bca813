/**
 * Which node a user is, as Kubernetes' default node identifier: a user in group
 * `system:nodes` whose name is `system:node:<name>`. A member of the group with another user
 * name is a node that cannot be told apart (`nodeName` ''), which the Node authorizer and
 * NodeRestriction refuse; anyone else is not a node and left alone.
 */
import type { UserInfo } from '../../user.js';

export const NODES_GROUP = 'system:nodes';
export const NODE_USER_PREFIX = 'system:node:';

export interface NodeIdentity {
  readonly isNode: boolean;
  /** '' when the user is in the nodes group but its name does not say which node. */
  readonly nodeName: string;
}

const NOT_A_NODE: NodeIdentity = { isNode: false, nodeName: '' };

export function nodeIdentity(user: UserInfo | undefined): NodeIdentity {
  if (!user || !user.name.startsWith(NODE_USER_PREFIX)) return NOT_A_NODE;
  if (!user.groups.includes(NODES_GROUP)) return NOT_A_NODE;
  return { isNode: true, nodeName: user.name.slice(NODE_USER_PREFIX.length) };
}

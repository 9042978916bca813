/** SelfSubjectReview (`kubectl auth whoami`): the requesting user's attributes as the server sees them. */
import type { KubeObject } from '../../../api/resources/types.js';
import type { UserInfo } from '../../../auth/user.js';
import { checkedBody, reply, userInfoJson } from './review-common.js';
import { selfSubjectReviews } from './review-resources.js';

export function selfSubjectReview(body: unknown, requester: UserInfo): KubeObject {
  const def = selfSubjectReviews;
  const req = checkedBody(def, body ?? {});
  return reply(def, req, { status: { userInfo: userInfoJson(requester) } });
}

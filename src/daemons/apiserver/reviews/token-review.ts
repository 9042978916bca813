/**
 * TokenReview: is spec.token a valid bearer token, and whom does it identify? The token is run
 * through the same authentication chain as a request carrying `Authorization: Bearer <token>`
 * (token file, and any further token authenticators), without TLS facts, so only token
 * authenticators can answer. The anonymous fallback never counts as authenticated here.
 *
 * Audiences: the token authenticators in use are audience-agnostic, so a token is valid for the
 * server's own audiences (`apiAudiences`). With requested audiences (spec.audiences, else the
 * API audiences) and API audiences configured, the token is valid only for their intersection;
 * an empty intersection is an unauthenticated answer.
 */
import { errors } from '../../../api/meta/status.js';
import type { KubeObject } from '../../../api/resources/types.js';
import type { Authenticator } from '../../../auth/authenticator.js';
import { ANONYMOUS_USER_NAME } from '../../../auth/user.js';
import { checkedBody, recordOf, reply, stringOf, stringsOf, userInfoJson, type JsonRecord } from './review-common.js';
import { tokenReviews } from './review-resources.js';

export async function tokenReview(body: unknown, authenticator: Authenticator, apiAudiences: readonly string[] = []): Promise<KubeObject> {
  const def = tokenReviews;
  const req = checkedBody(def, body);
  const spec = recordOf(req.spec);
  const token = stringOf(spec.token);
  if (!token) throw errors.badRequest('token is required for TokenReview in authentication');
  const requested = stringsOf(spec.audiences);
  const targets = requested.length ? requested : [...apiAudiences];
  const status: JsonRecord = { authenticated: false, user: {} };
  let audiences: string[] | undefined;
  if (targets.length && apiAudiences.length) {
    audiences = targets.filter((a) => apiAudiences.includes(a));
    if (audiences.length === 0) {
      status.error = `token audiences ${JSON.stringify(apiAudiences)} is invalid for the target audiences ${JSON.stringify(targets)}`;
      return reply(def, req, { spec, status });
    }
  } else if (targets.length) {
    audiences = targets;
  }
  let result;
  try {
    result = await authenticator.authenticate({ headers: { authorization: `Bearer ${token}` } });
  } catch (e) {
    status.error = e instanceof Error ? e.message : String(e);
    return reply(def, req, { spec, status });
  }
  if (result.ok && result.user.name !== ANONYMOUS_USER_NAME) {
    status.authenticated = true;
    status.user = userInfoJson(result.user);
    if (audiences) status.audiences = audiences;
  } else if (!result.ok && result.error) {
    status.error = result.error;
  }
  return reply(def, req, { spec, status });
}

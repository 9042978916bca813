/**
 * The review resources' one entry point: `handles` says whether a group/version/resource is a
 * review kind, `serve` answers a create (POST) of one with the reply object (201). The REST
 * layer reads and decodes the body and encodes the reply in the negotiated format.
 * Stateless: safe to call concurrently.
 */
import { errors } from '../../../api/meta/status.js';
import type { KubeObject } from '../../../api/resources/types.js';
import type { Authenticator } from '../../../auth/authenticator.js';
import type { Authorizer } from '../../../auth/authorizer.js';
import type { RequestContext } from '../context.js';
import { localSubjectAccessReview, selfSubjectAccessReview, subjectAccessReview } from './access-review.js';
import { reviewResources } from './review-resources.js';
import { selfSubjectRulesReview } from './rules-review.js';
import { selfSubjectReview } from './self-subject-review.js';
import { tokenReview } from './token-review.js';

export interface ReviewHandlerOptions {
  authorizer: Authorizer;
  authenticator: Authenticator;
  /** --authorization-mode list: lets SelfSubjectRulesReview say when its answer is complete. */
  authorizationModes?: readonly string[];
  /** The server's own token audiences (--api-audiences), for TokenReview. */
  apiAudiences?: readonly string[];
}

export interface ReviewHandler {
  handles(group: string, version: string, resource: string): boolean;
  serve(ctx: RequestContext, body: unknown): Promise<{ status: number; object: KubeObject }>;
}

export function createReviewHandler(o: ReviewHandlerOptions): ReviewHandler {
  const served = new Set(reviewResources.flatMap((d) => d.versions.map((v) => `${d.group}/${v}/${d.plural}`)));
  const handles = (group: string, version: string, resource: string): boolean => served.has(`${group}/${version}/${resource}`);
  return {
    handles,
    async serve(ctx, body) {
      const i = ctx.info;
      if (!handles(i.apiGroup, i.apiVersion, i.resource)) throw new Error(`not a review resource: ${i.apiGroup}/${i.apiVersion}/${i.resource}`);
      if (i.verb !== 'create' || i.name || i.subresource) {
        throw errors.methodNotAllowed(i.verb, i.resource);
      }
      const object = await answer(ctx, body);
      return { status: 201, object };
    },
  };

  async function answer(ctx: RequestContext, body: unknown): Promise<KubeObject> {
    switch (ctx.info.resource) {
      case 'selfsubjectaccessreviews': return selfSubjectAccessReview(body, ctx.user, o.authorizer);
      case 'subjectaccessreviews': return subjectAccessReview(body, o.authorizer);
      case 'localsubjectaccessreviews': return localSubjectAccessReview(body, ctx.info.namespace, o.authorizer);
      case 'selfsubjectrulesreviews': return selfSubjectRulesReview(body, ctx.user, o.authorizer, o.authorizationModes);
      case 'selfsubjectreviews': return selfSubjectReview(body, ctx.user);
      case 'tokenreviews': return tokenReview(body, o.authenticator, o.apiAudiences);
      default: throw new Error(`unhandled review resource ${ctx.info.resource}`);
    }
  }
}

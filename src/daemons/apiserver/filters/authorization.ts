/** Authorization: the configured modes decide; anything but "allow" is 403 Forbidden in Kubernetes' words. */
import { ApiError } from '../../../api/meta/status.js';
import type { AuthorizationAttributes, AuthorizationResult, Authorizer } from '../../../auth/authorizer.js';
import type { RequestContext } from '../context.js';
import { verbForMethod } from '../request-info.js';
import type { Exchange, Filter } from './filter.js';

/**
 * The verb authorizers see for a streaming subresource (request info's `connect`), as
 * Kubernetes authorizes it: exec, attach and portforward need `create` whatever the method
 * (websocket GETs too, as Kubernetes' AuthorizePodWebsocketUpgradeCreatePermission); proxies
 * the verb of their HTTP method.
 */
export function connectVerb(subresource: string, method: string | undefined): string {
  if (subresource !== 'proxy') return 'create';
  return verbForMethod(method ?? 'GET') || 'get';
}

export function attributesOf(ctx: RequestContext, method?: string): AuthorizationAttributes {
  const i = ctx.info;
  return {
    user: ctx.user, verb: i.verb === 'connect' ? connectVerb(i.subresource, method) : i.verb, isResourceRequest: i.isResourceRequest, path: i.path,
    namespace: i.namespace, apiGroup: i.apiGroup, apiVersion: i.apiVersion,
    resource: i.resource, subresource: i.subresource, name: i.name,
  };
}

/** `pods "x" is forbidden: User "u" cannot get resource "pods" in API group "" in the namespace "ns"[: reason]`. */
export function forbiddenError(a: AuthorizationAttributes, reason: string): ApiError {
  let what: string;
  if (!a.isResourceRequest) {
    what = `User "${a.user.name}" cannot ${a.verb} path "${a.path}"`;
  } else {
    const resource = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
    const scope = a.namespace ? `in the namespace "${a.namespace}"` : 'at the cluster scope';
    what = `User "${a.user.name}" cannot ${a.verb} resource "${resource}" in API group "${a.apiGroup}" ${scope}`;
  }
  if (reason) what += `: ${reason}`;
  const qualified = a.resource ? (a.apiGroup ? `${a.resource}.${a.apiGroup}` : a.resource) : '';
  const message = !qualified ? `forbidden: ${what}`
    : a.name ? `${qualified} "${a.name}" is forbidden: ${what}`
      : `${qualified} is forbidden: ${what}`;
  // In Go's order, empty members left out (omitempty), as every encoding and audit show them.
  const details: { name?: string; group?: string; kind?: string } = {};
  if (a.name) details.name = a.name;
  if (a.apiGroup) details.group = a.apiGroup;
  if (a.resource) details.kind = a.resource;
  return new ApiError(403, 'Forbidden', message, details);
}

const DECISION_ANNOTATION = 'authorization.k8s.io/decision';
const REASON_ANNOTATION = 'authorization.k8s.io/reason';

export function authorization(authorizer: Authorizer): Filter {
  return {
    name: 'authorization',
    // Not an async function: with a synchronous answer (the common modes) the request pays no
    // promise of its own here.
    run(x: Exchange, next: () => Promise<void>): Promise<void> {
      const attrs = attributesOf(x.ctx, x.req.method);
      const decided = (r: AuthorizationResult): Promise<void> => {
        // Audit shows every decision and its reason (Kubernetes' authorization.k8s.io/* annotations).
        const rec = x.ctx.audit;
        if (rec) {
          rec.annotate(DECISION_ANNOTATION, r.decision === 'allow' ? 'allow' : 'forbid');
          rec.annotate(REASON_ANNOTATION, r.reason);
        }
        if (r.decision === 'allow') return next();
        x.ctx.log.debug({ reason: r.reason }, 'forbidden');
        return Promise.reject(forbiddenError(attrs, r.reason));
      };
      let r: AuthorizationResult | Promise<AuthorizationResult>;
      try {
        r = authorizer.authorize(attrs);
        if (!(r instanceof Promise)) return decided(r);
      } catch (e) {
        return Promise.reject(e);
      }
      return r.then(decided);
    },
  };
}

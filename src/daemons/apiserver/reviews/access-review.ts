/**
 * SelfSubjectAccessReview, SubjectAccessReview and LocalSubjectAccessReview: ask the configured
 * authorizer one question (a resource or a non-resource request) for a user and answer with
 * status.allowed / denied / reason / evaluationError. Nothing is stored.
 */
import { errors, fieldErrors, type FieldError } from '../../../api/meta/status.js';
import type { KubeObject, ResourceDefinition } from '../../../api/resources/types.js';
import type { AuthorizationAttributes, Authorizer } from '../../../auth/authorizer.js';
import type { UserInfo } from '../../../auth/user.js';
import { checkedBody, extraOf, invalid, isRecord, metadataErrors, recordOf, reply, stringOf, stringsOf, type JsonRecord } from './review-common.js';
import { localSubjectAccessReviews, selfSubjectAccessReviews, subjectAccessReviews } from './review-resources.js';

/** Exactly one of resourceAttributes / nonResourceAttributes, as Kubernetes validates it. */
function attributeErrors(spec: JsonRecord): FieldError[] {
  const hasRes = isRecord(spec.resourceAttributes);
  const hasNonRes = isRecord(spec.nonResourceAttributes);
  if (!hasRes && !hasNonRes) return [fieldErrors.required('spec.resourceAttributes', 'exactly one of nonResourceAttributes or resourceAttributes must be specified')];
  if (hasRes && hasNonRes) return [fieldErrors.invalid('spec.nonResourceAttributes', spec.nonResourceAttributes, 'cannot be specified in combination with resourceAttributes')];
  return [];
}

/** The authorizer's question for `user` from a review spec (validated beforehand). */
export function attributesFromSpec(spec: JsonRecord, user: UserInfo): AuthorizationAttributes {
  if (isRecord(spec.resourceAttributes)) {
    const r = spec.resourceAttributes;
    return {
      user, isResourceRequest: true, path: '', verb: stringOf(r.verb), namespace: stringOf(r.namespace),
      apiGroup: stringOf(r.group), apiVersion: stringOf(r.version), resource: stringOf(r.resource),
      subresource: stringOf(r.subresource), name: stringOf(r.name),
    };
  }
  const n = recordOf(spec.nonResourceAttributes);
  return {
    user, isResourceRequest: false, path: stringOf(n.path), verb: stringOf(n.verb),
    namespace: '', apiGroup: '', apiVersion: '', resource: '', subresource: '', name: '',
  };
}

/** SubjectAccessReviewStatus for one question; an authorizer failure becomes evaluationError. */
export async function decide(authorizer: Authorizer, attrs: AuthorizationAttributes): Promise<JsonRecord> {
  try {
    const r = await authorizer.authorize(attrs);
    const status: JsonRecord = { allowed: r.decision === 'allow' };
    if (r.decision === 'deny') status.denied = true;
    if (r.reason) status.reason = r.reason;
    return status;
  } catch (e) {
    return { allowed: false, evaluationError: e instanceof Error ? e.message : String(e) };
  }
}

/** The user a SubjectAccessReview names. */
function subjectOf(spec: JsonRecord): UserInfo {
  const user: UserInfo = { name: stringOf(spec.user), groups: stringsOf(spec.groups) };
  const uid = stringOf(spec.uid);
  if (uid) user.uid = uid;
  const extra = extraOf(spec.extra);
  if (extra) user.extra = extra;
  return user;
}

function subjectErrors(spec: JsonRecord): FieldError[] {
  const errs = attributeErrors(spec);
  if (!stringOf(spec.user) && stringsOf(spec.groups).length === 0) {
    errs.push(fieldErrors.invalid('spec.user', stringOf(spec.user), 'at least one of user or group must be specified'));
  }
  return errs;
}

async function answer(def: ResourceDefinition, req: KubeObject, spec: JsonRecord, authorizer: Authorizer, user: UserInfo): Promise<KubeObject> {
  const status = await decide(authorizer, attributesFromSpec(spec, user));
  return reply(def, req, { spec, status });
}

/** POST selfsubjectaccessreviews: the question is asked for the requesting user. */
export async function selfSubjectAccessReview(body: unknown, requester: UserInfo, authorizer: Authorizer): Promise<KubeObject> {
  const def = selfSubjectAccessReviews;
  const req = checkedBody(def, body);
  const spec = recordOf(req.spec);
  const errs = [...attributeErrors(spec), ...metadataErrors(req.metadata, false)];
  if (errs.length) invalid(def, '', errs);
  return answer(def, req, spec, authorizer, requester);
}

/** POST subjectaccessreviews: the question is asked for spec.user / groups / uid / extra. */
export async function subjectAccessReview(body: unknown, authorizer: Authorizer): Promise<KubeObject> {
  const def = subjectAccessReviews;
  const req = checkedBody(def, body);
  const spec = recordOf(req.spec);
  const errs = [...subjectErrors(spec), ...metadataErrors(req.metadata, false)];
  if (errs.length) invalid(def, '', errs);
  return answer(def, req, spec, authorizer, subjectOf(spec));
}

/**
 * POST namespaces/NS/localsubjectaccessreviews: like a SubjectAccessReview restricted to the
 * URL's namespace. metadata.namespace defaults to it and must equal it (400);
 * spec.resourceAttributes.namespace must equal metadata.namespace (422), non-resource questions
 * are refused (422).
 */
export async function localSubjectAccessReview(body: unknown, urlNamespace: string, authorizer: Authorizer): Promise<KubeObject> {
  const def = localSubjectAccessReviews;
  const req = checkedBody(def, body);
  if (!urlNamespace) throw errors.badRequest('namespace is required on this type');
  const meta = recordOf(req.metadata);
  const metaNamespace = stringOf(meta.namespace);
  if (metaNamespace && metaNamespace !== urlNamespace) {
    throw errors.badRequest('the namespace of the provided object does not match the namespace sent on the request');
  }
  const withNs: KubeObject = { ...req, metadata: { ...meta, namespace: urlNamespace } };
  const spec = recordOf(req.spec);
  const errs = [...subjectErrors(spec), ...metadataErrors(req.metadata, true)];
  if (isRecord(spec.resourceAttributes) && stringOf(spec.resourceAttributes.namespace) !== urlNamespace) {
    errs.push(fieldErrors.invalid('spec.resourceAttributes.namespace', stringOf(spec.resourceAttributes.namespace), 'must match metadata.namespace'));
  }
  if (isRecord(spec.nonResourceAttributes)) {
    errs.push(fieldErrors.invalid('spec.nonResourceAttributes', spec.nonResourceAttributes, 'disallowed on this kind of request'));
  }
  if (errs.length) invalid(def, '', errs);
  return answer(def, withNs, spec, authorizer, subjectOf(spec));
}

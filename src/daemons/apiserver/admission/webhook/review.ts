/**
 * AdmissionReview (admission.k8s.io/v1, or v1beta1 for webhooks that only speak it): the
 * request a webhook is sent and the checks its response must pass, as Kubernetes' request
 * package builds and verifies them.
 *
 * Request: uid (fresh per call), kind/resource/subResource as the webhook is called for them,
 * requestKind/requestResource/requestSubResource as the client asked, name, namespace,
 * operation, userInfo, object and oldObject (null when absent), dryRun and options
 * (CreateOptions, UpdateOptions or DeleteOptions; null for CONNECT, whose object is its options).
 * Response (v1): apiVersion/kind admission.k8s.io/v1 AdmissionReview, response.uid equal to the
 * request's; a mutating webhook gives patch and patchType together or neither, a validating one
 * neither. v1beta1 responses are checked as Kubernetes checks them: only that a response is there.
 */
import { randomUUID } from 'node:crypto';
import type { KubeObject } from '../../../../api/resources/types.js';
import type { AdmissionAttributes } from '../types.js';
import type { Invocation } from './rules.js';
import type { Target } from './versions.js';

export interface ReviewRequest {
  readonly uid: string;
  /** The serialized AdmissionReview. */
  readonly body: string;
}

export interface ReviewResult {
  readonly allowed: boolean;
  readonly status?: Record<string, unknown>;
  /** Decoded patch bytes (mutating only). */
  readonly patch?: Buffer;
  readonly patchType?: string;
  readonly warnings: readonly string[];
}

/** A response that does not follow the protocol; the message is Kubernetes' wording. */
export class InvalidResponseError extends Error {}

function optionsOf(a: AdmissionAttributes): Record<string, unknown> | null {
  // CONNECT carries its options as the object (PodExecOptions ...), none here, as Kubernetes.
  if (a.operation === 'CONNECT') return null;
  const kind = a.operation === 'CREATE' ? 'CreateOptions' : a.operation === 'UPDATE' ? 'UpdateOptions' : 'DeleteOptions';
  const o: Record<string, unknown> = { kind, apiVersion: 'meta.k8s.io/v1' };
  const d = a.deleteOptions;
  if (d?.gracePeriodSeconds !== undefined) o.gracePeriodSeconds = d.gracePeriodSeconds;
  if (d?.preconditions) o.preconditions = d.preconditions;
  if (d?.propagationPolicy) o.propagationPolicy = d.propagationPolicy;
  if (a.dryRun) o.dryRun = ['All'];
  if (a.operation !== 'DELETE' && a.request?.fieldManager) o.fieldManager = a.request.fieldManager;
  return o;
}

function userInfoOf(a: AdmissionAttributes): Record<string, unknown> {
  const u = a.request?.user;
  if (!u) return {};
  const out: Record<string, unknown> = { username: u.name };
  if (u.uid) out.uid = u.uid;
  if (u.groups.length) out.groups = u.groups;
  if (u.extra && Object.keys(u.extra).length) out.extra = u.extra;
  return out;
}

/**
 * The review for one call. `object`/`oldObject` are already in the invocation's version;
 * `requested` is the target the client addressed.
 */
export function buildReview(a: AdmissionAttributes, inv: Invocation, requested: Target,
  object: KubeObject | undefined, oldObject: KubeObject | undefined): ReviewRequest {
  const uid = randomUUID();
  const t = inv.target;
  const request: Record<string, unknown> = {
    uid,
    kind: t.kind,
    resource: t.resource,
  };
  if (a.subresource) request.subResource = a.subresource;
  request.requestKind = requested.kind;
  request.requestResource = requested.resource;
  if (a.subresource) request.requestSubResource = a.subresource;
  if (a.name) request.name = a.name;
  if (a.namespace) request.namespace = a.namespace;
  request.operation = a.operation;
  request.userInfo = userInfoOf(a);
  request.object = object ?? null;
  request.oldObject = oldObject ?? null;
  request.dryRun = a.dryRun;
  request.options = optionsOf(a);
  const apiVersion = `admission.k8s.io/${inv.webhook.reviewVersion ?? 'v1'}`;
  return { uid, body: JSON.stringify({ kind: 'AdmissionReview', apiVersion, request }) };
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The response's verdict; InvalidResponseError when it breaks the protocol. */
export function verifyResponse(body: unknown, uid: string, mutating: boolean, version: 'v1' | 'v1beta1'): ReviewResult {
  if (!isObj(body)) throw new InvalidResponseError('webhook response was not a JSON object');
  const r = body.response;
  if (!isObj(r)) throw new InvalidResponseError('webhook response was absent');
  const warnings = Array.isArray(r.warnings) ? r.warnings.filter((w): w is string => typeof w === 'string') : [];
  const status = isObj(r.status) ? r.status : undefined;
  const allowed = r.allowed === true;
  const patch = typeof r.patch === 'string' && r.patch !== '' ? Buffer.from(r.patch, 'base64') : undefined;
  if (version === 'v1beta1') {
    // v1beta1 was never checked further; a patch can only be a JSON patch.
    return { allowed, warnings, ...(status ? { status } : {}), ...(mutating && patch ? { patch, patchType: 'JSONPatch' } : {}) };
  }
  if (r.uid !== uid) throw new InvalidResponseError(`expected response.uid=${JSON.stringify(uid)}, got ${JSON.stringify(typeof r.uid === 'string' ? r.uid : '')}`);
  if (body.apiVersion !== 'admission.k8s.io/v1' || body.kind !== 'AdmissionReview') {
    throw new InvalidResponseError(`expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got ${String(body.apiVersion ?? '')}, Kind=${String(body.kind ?? '')}`);
  }
  const patchType = r.patchType;
  if (mutating) {
    if (patch && (patchType === undefined || patchType === null)) throw new InvalidResponseError('webhook returned response.patch but not response.patchType');
    if (!patch && patchType !== undefined && patchType !== null) throw new InvalidResponseError('webhook returned response.patchType but not response.patch');
    if (patchType === '') throw new InvalidResponseError('webhook returned invalid response.patchType of ""');
  } else {
    if (patch) throw new InvalidResponseError('validating webhook may not return response.patch');
    if (patchType !== undefined && patchType !== null) throw new InvalidResponseError('validating webhook may not return response.patchType');
  }
  return {
    allowed, warnings, ...(status ? { status } : {}),
    ...(patch ? { patch, patchType: String(patchType) } : {}),
  };
}

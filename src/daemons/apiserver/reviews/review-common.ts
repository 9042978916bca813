/** Shared helpers of the review handlers: reading loosely typed request bodies, typing replies. */
import { errors, type FieldError } from '../../../api/meta/status.js';
import type { KubeObject, ObjectMeta, ResourceDefinition } from '../../../api/resources/types.js';
import type { UserInfo } from '../../../auth/user.js';

export type JsonRecord = Record<string, unknown>;

export function isRecord(v: unknown): v is JsonRecord {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function recordOf(v: unknown): JsonRecord {
  return isRecord(v) ? v : {};
}

export function stringOf(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

export function stringsOf(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

/** `extra` as JSON (`{k: [v]}`) or as the protobuf ExtraValue shape (`{k: {items: [v]}}`). */
export function extraOf(v: unknown): Record<string, string[]> | undefined {
  if (!isRecord(v)) return undefined;
  const out: Record<string, string[]> = {};
  for (const [k, raw] of Object.entries(v)) out[k] = Array.isArray(raw) ? stringsOf(raw) : stringsOf(recordOf(raw).items);
  return Object.keys(out).length ? out : undefined;
}

/** The body as an object of `def`'s kind; 400 on a wrong apiVersion/kind, as the generic create does. */
export function checkedBody(def: ResourceDefinition, body: unknown): KubeObject {
  if (!isRecord(body)) throw errors.badRequest('the request body must be a JSON or YAML object');
  const expected = `${def.group}/v1`;
  const obj = body as KubeObject;
  if (obj.apiVersion !== undefined && obj.apiVersion !== '' && obj.apiVersion !== expected) {
    throw errors.badRequest(`the API version in the data (${String(obj.apiVersion)}) does not match the expected API version (${expected})`);
  }
  if (obj.kind !== undefined && obj.kind !== '' && obj.kind !== def.kind) {
    throw errors.badRequest(`the kind in the data (${String(obj.kind)}) does not match the expected kind (${def.kind})`);
  }
  return obj;
}

/** The reply object: typed, metadata echoed (creationTimestamp null as Kubernetes serializes it). */
export function reply(def: ResourceDefinition, req: KubeObject, fields: JsonRecord): KubeObject {
  const metadata: ObjectMeta = { ...recordOf(req.metadata) };
  if (metadata.creationTimestamp === undefined) metadata.creationTimestamp = null;
  return { kind: def.kind, apiVersion: `${def.group}/v1`, metadata, ...fields };
}

/** 422 Invalid in Kubernetes' words for a review kind. */
export function invalid(def: ResourceDefinition, name: string, errs: FieldError[]): never {
  throw errors.invalid(def.kind, def.group, name, errs);
}

/** authentication.k8s.io/v1 UserInfo: empty fields omitted. */
export function userInfoJson(u: UserInfo): JsonRecord {
  const out: JsonRecord = { username: u.name };
  if (u.uid) out.uid = u.uid;
  if (u.groups.length) out.groups = [...u.groups];
  if (u.extra && Object.keys(u.extra).length) out.extra = u.extra;
  return out;
}

function isEmptyValue(v: unknown): boolean {
  if (v === undefined || v === null || v === '' || v === 0) return true;
  if (Array.isArray(v)) return v.length === 0;
  return isRecord(v) && Object.keys(v).length === 0;
}

/**
 * Access reviews are questions, not objects: metadata must be empty (managedFields aside;
 * namespace allowed where the kind is namespaced), as Kubernetes validates them.
 */
export function metadataErrors(metadata: unknown, allowNamespace: boolean): FieldError[] {
  const meta = recordOf(metadata);
  const set = Object.entries(meta).filter(([k, v]) => k !== 'managedFields' && !(allowNamespace && k === 'namespace') && !isEmptyValue(v));
  return set.length ? [{ field: 'metadata', type: 'FieldValueInvalid', message: `Invalid value: ${JSON.stringify(Object.fromEntries(set))}: must be empty` }] : [];
}

/**
 * The one place the REST layer applies patches and records managed fields, through
 * src/api/patch (json-patch, merge-patch, strategic-merge, server-side apply, managed fields)
 * and the schema declarations.
 */
import { serverSideApply } from '../../../api/patch/apply.js';
import { managedFieldsAfterUpdate } from '../../../api/patch/managed-fields.js';
import { applyPatch, patchTypeOf as typeOf, type PatchType } from '../../../api/patch/patch-types.js';
import type { KubeObject } from '../../../api/resources/types.js';
import { messageForObject, schema } from '../../../api/schema/registry.js';

export type { PatchType };

/** True when strategic merge patch is possible for this kind (it has a declaration). */
export function supportsStrategicMerge(apiVersion: string, kind: string): boolean {
  return messageForObject(apiVersion, kind) !== undefined;
}

/** The patch type of a Content-Type; 415 for unknown types and schemaless strategic merge. */
export function patchTypeOf(contentType: string | undefined, apiVersion: string, kind: string): PatchType {
  return typeOf(contentType, supportsStrategicMerge(apiVersion, kind));
}

/** json, merge or strategic patch of an object in its served version. */
export function applyNonApplyPatch(type: Exclude<PatchType, 'apply'>, current: KubeObject, patch: unknown): unknown {
  return applyPatch(type, current, patch, messageForObject(String(current.apiVersion ?? ''), String(current.kind ?? '')), schema);
}

const RESET_FOR_STATUS: readonly (readonly string[])[] = Object.freeze([Object.freeze(['spec'])]);
const RESET_FOR_SCALE: readonly (readonly string[])[] = Object.freeze([]);
const RESET_FOR_MAIN: readonly (readonly string[])[] = Object.freeze([Object.freeze(['status'])]);

/**
 * Fields an endpoint does not own: the main resource never sets status, status never spec.
 * The lists are shared constants (managed-fields code caches per list).
 */
export function resetFieldsFor(subresource: string | undefined): readonly (readonly string[])[] {
  if (!subresource) return RESET_FOR_MAIN;
  if (subresource === 'scale') return RESET_FOR_SCALE;
  // status, and the subresources written like it (CSR approval; see Subresources.statusLike).
  return RESET_FOR_STATUS;
}

export interface ApplyRequest {
  manager: string;
  force: boolean;
  apiVersion: string;
  kind: string;
  subresource?: string;
}

/** Server-side apply of `config` onto `live` (served version; undefined when absent). */
export function applyConfiguration(live: KubeObject | undefined, config: unknown, req: ApplyRequest): KubeObject {
  const r = serverSideApply(live, config, messageForObject(req.apiVersion, req.kind), schema, {
    manager: req.manager, force: req.force, apiVersion: req.apiVersion, kind: req.kind, now: new Date(),
    subresource: req.subresource, resetFields: resetFieldsFor(req.subresource),
  });
  return r.object;
}

/** Records a non-apply write by `manager` in obj.metadata.managedFields (in place). */
export function updateManagedFields(obj: KubeObject, old: KubeObject | undefined, manager: string | undefined, operation: 'Update' | 'Apply', apiVersion: string, subresource?: string): void {
  if (!obj.metadata) return;
  if (!manager) {
    if (old?.metadata?.managedFields) obj.metadata.managedFields = old.metadata.managedFields;
    return;
  }
  const msg = messageForObject(String(obj.apiVersion ?? apiVersion), String(obj.kind ?? ''));
  const entries = managedFieldsAfterUpdate(old, obj, manager, operation, apiVersion, Date.now(), { msg, reg: schema, subresource, resetFields: resetFieldsFor(subresource) });
  if (entries.length) obj.metadata.managedFields = entries;
  else delete obj.metadata.managedFields;
}

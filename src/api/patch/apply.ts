/**
 * Server-side apply (`application/apply-patch+yaml`, PATCH with fieldManager and force).
 *
 * The applied configuration says which fields its manager wants to own and their values:
 *  1. its field set (typed-value.ts toFieldSet) becomes the manager's Apply entry;
 *  2. the configuration is merged over the live object (lists by their list type);
 *  3. fields the manager owned before, that the new configuration drops, and that nobody else
 *     owns, are removed from the object;
 *  4. any field owned by another manager whose value the apply changes is a conflict: a 409
 *     listing each field and manager, unless force=true, which takes the fields over;
 *  5. fields removed from the object are dropped from every other manager's set.
 * When the object does not exist the result is a new object (`created`); the REST layer fills
 * in metadata and stores it. An object that has fields but no managedFields gets them assigned
 * to "before-first-apply" (operation Update) first, so an apply cannot silently take them.
 *
 * kubectl compatibility (manager "kubectl" only): conflicts on fields whose live value equals
 * the kubectl.kubernetes.io/last-applied-configuration annotation are allowed (moving from
 * client-side to server-side apply), and that annotation, when present, is rewritten to the
 * new configuration.
 */
import { ApiError, errors } from '../meta/status.js';
import type { KubeObject } from '../resources/types.js';
import type { MessageDecl, SchemaRegistry } from '../schema/types.js';
import { FieldSet, pathKey, type FieldPath } from './fieldpath.js';
import { deepClone, deepEqual, guardDepth, isObject, type JsonObject } from './json-value.js';
import {
  applyConflictError, decodeManagedFieldsOrEmpty, fieldNamePaths, formatTime, managerId, stripUntracked, withManagedFields,
  type ApplyConflict, type ManagerState,
} from './managed-fields.js';
import { objectNode } from './schema-node.js';
import { compareValues, mergeValues, removePaths, toFieldSet } from './typed-value.js';

export const LAST_APPLIED_ANNOTATION = 'kubectl.kubernetes.io/last-applied-configuration';
export const BEFORE_FIRST_APPLY_MANAGER = 'before-first-apply';

export interface ApplyOptions {
  /** The fieldManager (required by the REST layer for apply patches). */
  manager: string;
  force: boolean;
  /** The group/version the request was made in, e.g. 'apps/v1'. */
  apiVersion: string;
  /** When given, the configuration's kind must match. */
  kind?: string;
  now: Date | string | number;
  /** The subresource applied through ('status', 'scale'), if any. */
  subresource?: string;
  /** Fields this endpoint does not own, e.g. [['status']] for the main resource. */
  resetFields?: readonly (readonly string[])[];
}

export interface ApplyResult {
  /** The new object, with metadata.managedFields updated. */
  object: KubeObject;
  /** True when there was no live object: the REST layer must create it (201). */
  created: boolean;
  /** False when the apply changed neither the object nor its managed fields. */
  changed: boolean;
}

/**
 * Applies `config` (the decoded request body) to `live` (undefined when the object does not
 * exist). Throws ApiError: 400 for a malformed configuration, 409 Conflict for field conflicts.
 */
export function serverSideApply(live: KubeObject | undefined, config: unknown, msg: MessageDecl | undefined,
  reg: SchemaRegistry, opts: ApplyOptions): ApplyResult {
  return guardDepth('apply', () => applyUnguarded(live, config, msg, reg, opts));
}

function applyUnguarded(live: KubeObject | undefined, config: unknown, msg: MessageDecl | undefined,
  reg: SchemaRegistry, opts: ApplyOptions): ApplyResult {
  if (!isObject(config)) throw errors.badRequest('the apply configuration must be a JSON or YAML object');
  checkConfig(config, opts);
  const node = objectNode(msg);
  const reset = fieldNamePaths(opts.resetFields);
  const created = live === undefined;

  // The live object without its managedFields, and the managers, decoded.
  const liveObj = deepClone(live ?? {}) as JsonObject;
  const liveMeta = isObject(liveObj['metadata']) ? liveObj['metadata'] : undefined;
  let managers = decodeManagedFieldsOrEmpty(liveMeta?.['managedFields']);
  // A snapshot of the stored entries (their sets are immutable; the states get updated below).
  const before = managers.filter((m) => !m.set.isEmpty()).map((m) => ({ ...m }));
  if (liveMeta) delete liveMeta['managedFields'];
  const liveStripped = stripUntracked(liveObj, reset);
  if (!created && managers.length === 0) {
    const existing = toFieldSet(liveStripped, node, reg);
    if (!existing.isEmpty()) {
      managers = [{ manager: BEFORE_FIRST_APPLY_MANAGER, operation: 'Update', apiVersion: opts.apiVersion, set: existing }];
    }
  }

  const cfg = deepClone(config);
  const newSet = toFieldSet(stripUntracked(cfg, reset), node, reg, true);
  const meId = managerId({ manager: opts.manager, operation: 'Apply', apiVersion: opts.apiVersion, subresource: opts.subresource });
  const prev = managers.find((m) => managerId(m) === meId);
  const others = managers.filter((m) => m !== prev);

  // Merge, then prune what this manager dropped and nobody else owns.
  let merged = mergeValues(liveObj, cfg, node, reg, true) as JsonObject;
  if (prev) {
    const ownedByOthers = prefixesOf(others);
    const dropped = prev.set.difference(newSet).paths().filter((p) => !ownedByOthers.has(pathKey(p)));
    const removing = new FieldSet(dropped);
    // A list item that stays (someone else owns part of it) keeps its key fields.
    const toRemove = new FieldSet(dropped.filter((p) => !isKeyFieldOfKeptItem(p, removing)));
    merged = removePaths(merged, toRemove, node, reg) as JsonObject;
  }

  // Conflicts: fields of other managers whose value this apply changes.
  const cmp = compareValues(liveStripped, stripUntracked(merged, reset), node, reg);
  const changedSet = cmp.modified.union(cmp.added);
  let conflicts: ApplyConflict[] = [];
  for (const o of others) {
    for (const p of o.set.intersection(changedSet).paths()) conflicts.push({ manager: o, path: p });
  }
  let force = opts.force;
  if (conflicts.length && !force && opts.manager === 'kubectl') {
    // Kubernetes retries such an apply forced when every conflict is allowed.
    const allowed = allowedByLastApplied(liveObj, node, reg);
    if (allowed) conflicts = conflicts.filter((c) => !allowed.has(c.path));
    if (conflicts.length === 0) force = true;
  }
  if (conflicts.length && !force) throw applyConflictError(conflicts);

  // Ownership: forced fields move to us; removed fields leave everyone.
  const taken = force ? changedSet : new FieldSet();
  for (const o of others) o.set = o.set.difference(taken).difference(cmp.removed);
  const me: ManagerState = { manager: opts.manager, operation: 'Apply', apiVersion: opts.apiVersion, set: newSet };
  if (opts.subresource) me.subresource = opts.subresource;
  if (opts.manager === 'kubectl') merged = syncLastApplied(merged, cfg);
  const objectChanged = !deepEqual(merged, liveObj);
  const ownershipChanged = !prev || !prev.set.equals(newSet) || prev.apiVersion !== opts.apiVersion;
  if (objectChanged || ownershipChanged || !prev?.time) me.time = formatTime(opts.now);
  else me.time = prev.time;

  const states = [...others.filter((o) => !o.set.isEmpty()), me];
  const object = withManagedFields(merged as KubeObject, states);
  const changed = objectChanged || !sameManagers(before, states);
  return { object, created, changed };
}

function isKeyFieldOfKeptItem(p: FieldPath, removing: FieldSet): boolean {
  if (p.length < 2) return false;
  const last = p[p.length - 1]!, parent = p[p.length - 2]!;
  if (!last.startsWith('f:') || !parent.startsWith('k:') || removing.has(p.slice(0, -1))) return false;
  try {
    const keys: unknown = JSON.parse(parent.slice(2));
    return isObject(keys) && Object.prototype.hasOwnProperty.call(keys, last.slice(2));
  } catch {
    return false;
  }
}

/** Every path owned by the given managers and every ancestor of one, as JSON keys. */
function prefixesOf(states: readonly ManagerState[]): Set<string> {
  const out = new Set<string>();
  for (const s of states) for (const p of s.set.unordered()) for (let i = 1; i <= p.length; i++) out.add(pathKey(p.slice(0, i)));
  return out;
}

function checkConfig(config: JsonObject, opts: ApplyOptions): void {
  const meta = config['metadata'];
  if (meta !== undefined && meta !== null && !isObject(meta)) throw errors.badRequest('metadata must be an object');
  if (isObject(meta) && meta['managedFields'] !== undefined && meta['managedFields'] !== null) {
    throw errors.badRequest('metadata.managedFields must be nil');
  }
  const av = config['apiVersion'];
  if (av !== undefined && av !== opts.apiVersion) {
    throw errors.badRequest(`Incorrect version specified in apply patch. Specified patch version: ${String(av)}, expected: ${opts.apiVersion}`);
  }
  if (av === undefined) throw errors.badRequest('apiVersion must be set in an apply patch');
  const kind = config['kind'];
  if (kind === undefined || kind === '') throw errors.badRequest('kind must be set in an apply patch');
  if (opts.kind !== undefined && kind !== opts.kind) {
    throw errors.badRequest(`Incorrect kind specified in apply patch. Specified patch kind: ${String(kind)}, expected: ${opts.kind}`);
  }
}

/** Fields the last-applied annotation sets to the value they have live (client-side apply's). */
function allowedByLastApplied(liveObj: JsonObject, node: ReturnType<typeof objectNode>, reg: SchemaRegistry): FieldSet | undefined {
  const ann = lastAppliedOf(liveObj);
  if (ann === undefined) return undefined;
  let last: unknown;
  try { last = JSON.parse(ann); } catch { return undefined; }
  if (!isObject(last)) return undefined;
  try {
    const lastStripped = stripUntracked(last);
    const set = toFieldSet(lastStripped, node, reg);
    const diff = compareValues(lastStripped, stripUntracked(liveObj), node, reg);
    return set.difference(diff.modified).difference(diff.removed);
  } catch (e) {
    if (e instanceof ApiError) return undefined;
    throw e;
  }
}

function lastAppliedOf(obj: JsonObject): string | undefined {
  const meta = obj['metadata'];
  const ann = isObject(meta) ? meta['annotations'] : undefined;
  const v = isObject(ann) ? ann[LAST_APPLIED_ANNOTATION] : undefined;
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/** Rewrites an existing last-applied annotation to the applied configuration (without the annotation itself). */
function syncLastApplied(merged: JsonObject, cfg: JsonObject): JsonObject {
  if (lastAppliedOf(merged) === undefined) return merged;
  const copy = deepClone(cfg);
  const meta = copy['metadata'];
  if (isObject(meta) && isObject(meta['annotations'])) {
    delete meta['annotations'][LAST_APPLIED_ANNOTATION];
    if (Object.keys(meta['annotations']).length === 0) delete meta['annotations'];
  }
  const out = deepClone(merged);
  ((out['metadata'] as JsonObject)['annotations'] as JsonObject)[LAST_APPLIED_ANNOTATION] = JSON.stringify(copy);
  return out;
}

function sameManagers(a: readonly ManagerState[], b: readonly ManagerState[]): boolean {
  if (a.length !== b.length) return false;
  return a.every((x) => b.some((y) => managerId(x) === managerId(y) && x.apiVersion === y.apiVersion &&
    (x.time ?? '') === (y.time ?? '') && x.set.equals(y.set)));
}

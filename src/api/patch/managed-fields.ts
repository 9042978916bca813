/**
 * metadata.managedFields: who owns which fields of an object.
 *
 * Each entry is one manager identity - (manager, operation, apiVersion for Update, subresource)
 * - with the set of fields it last set, in FieldsV1 form:
 *   { manager: "kubectl", operation: "Apply", apiVersion: "apps/v1", time: "2026-01-02T03:04:05Z",
 *     fieldsType: "FieldsV1", fieldsV1: { "f:spec": { "f:replicas": {} } } }
 * Apply entries come from server-side apply (apply.ts). Every other write (create, update,
 * patch) goes through `updateManagedFields`: the fields the write changed become owned by its
 * fieldManager with operation Update, and are taken away from everyone else.
 *
 * Fields never tracked: apiVersion, kind, and metadata name, namespace, uid, resourceVersion,
 * generation, creationTimestamp, selfLink, clusterName, managedFields; plus the resource's
 * reset fields (e.g. status on the main resource), given by the caller.
 */
import { ApiError } from '../meta/status.js';
import type { KubeObject } from '../resources/types.js';
import type { MessageDecl, SchemaRegistry } from '../schema/types.js';
import { FieldSet, pathElement, pathToString, type FieldPath } from './fieldpath.js';
import { deepClone, isObject, put, type JsonObject } from './json-value.js';
import { objectNode } from './schema-node.js';
import { compareValues } from './typed-value.js';

export type ManagedFieldsOperation = 'Apply' | 'Update';

/** The JSON form of one entry (metav1.ManagedFieldsEntry). */
export interface ManagedFieldsEntry {
  manager?: string;
  operation?: ManagedFieldsOperation;
  apiVersion?: string;
  time?: string;
  fieldsType?: 'FieldsV1';
  fieldsV1?: JsonObject;
  subresource?: string;
}

/** A decoded entry. */
export interface ManagerState {
  manager: string;
  operation: ManagedFieldsOperation;
  apiVersion: string;
  subresource?: string;
  time?: string;
  set: FieldSet;
}

/** Kubernetes caps Update entries at this many; older ones merge into "ancient-changes". */
export const MAX_UPDATE_MANAGERS = 10;
export const ANCIENT_CHANGES_MANAGER = 'ancient-changes';

/** The fields managedFields never tracks, as field paths. */
export const UNTRACKED_FIELDS: readonly FieldPath[] = [
  ['f:apiVersion'], ['f:kind'],
  ...['name', 'namespace', 'creationTimestamp', 'selfLink', 'uid', 'clusterName', 'generation', 'managedFields', 'resourceVersion']
    .map((f) => ['f:metadata', pathElement.field(f)]),
];

/**
 * The identity of an entry: the JSON of manager, operation, apiVersion (Update only) and
 * subresource. Apply entries ignore apiVersion so a manager keeps one Apply entry across versions.
 */
export function managerId(s: Pick<ManagerState, 'manager' | 'operation' | 'apiVersion' | 'subresource'>): string {
  const id: Record<string, string> = {};
  if (s.manager) id['manager'] = s.manager;
  if (s.operation) id['operation'] = s.operation;
  if (s.operation !== 'Apply' && s.apiVersion) id['apiVersion'] = s.apiVersion;
  if (s.subresource) id['subresource'] = s.subresource;
  return JSON.stringify(id);
}

/** How conflict messages name a manager: `"kubectl-client-side-apply" using apps/v1`. */
export function printManager(s: Pick<ManagerState, 'manager' | 'operation' | 'apiVersion' | 'subresource'>): string {
  let name = s.manager;
  if (s.subresource) name = `${name} with subresource ${JSON.stringify(s.subresource)}`;
  return s.operation === 'Update' ? `${JSON.stringify(name)} using ${s.apiVersion}` : JSON.stringify(name);
}

/**
 * Decodes metadata.managedFields. Lenient about missing members (the `[{}]` reset form
 * decodes to one empty entry); throws an Error on anything malformed.
 */
export function decodeManagedFields(raw: unknown): ManagerState[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) throw new Error('managedFields must be a list');
  const byId = new Map<string, ManagerState>();
  raw.forEach((e, i) => {
    if (!isObject(e)) throw new Error(`managedFields[${i}] must be an object`);
    const str = (k: string): string => {
      const v = e[k];
      if (v === undefined || v === null) return '';
      if (typeof v !== 'string') throw new Error(`managedFields[${i}].${k} must be a string`);
      return v;
    };
    const op = str('operation');
    if (op !== '' && op !== 'Apply' && op !== 'Update') throw new Error(`managedFields[${i}].operation must be Apply or Update`);
    const ft = str('fieldsType');
    if (ft !== '' && ft !== 'FieldsV1') throw new Error(`managedFields[${i}].fieldsType must be FieldsV1`);
    let set: FieldSet;
    try { set = FieldSet.fromFieldsV1(e['fieldsV1']); } catch (err) {
      throw new Error(`managedFields[${i}].fieldsV1: ${(err as Error).message}`);
    }
    const s: ManagerState = { manager: str('manager'), operation: op === 'Apply' ? 'Apply' : 'Update', apiVersion: str('apiVersion'), set };
    const sub = str('subresource');
    if (sub) s.subresource = sub;
    const time = str('time');
    if (time) s.time = time;
    const id = identityKey(s);
    const prev = byId.get(id);
    if (prev) prev.set = prev.set.union(set); else byId.set(id, s);
  });
  return [...byId.values()];
}

/**
 * A map key with managerId's identity, cheaper to build: the members joined by NUL (exactly
 * three NULs), or managerId's JSON when a member holds a NUL itself (JSON escapes NUL, so the
 * two forms never collide).
 */
function identityKey(s: Pick<ManagerState, 'manager' | 'operation' | 'apiVersion' | 'subresource'>): string {
  const m = s.manager || '', op = s.operation || '', av = s.operation !== 'Apply' ? s.apiVersion || '' : '', sub = s.subresource || '';
  if (m.includes('\0') || av.includes('\0') || sub.includes('\0')) return managerId(s);
  return `${m}\0${op}\0${av}\0${sub}`;
}

/** managerId(a) === managerId(b), without building either. */
function sameIdentity(a: Pick<ManagerState, 'manager' | 'operation' | 'apiVersion' | 'subresource'>, b: Pick<ManagerState, 'manager' | 'operation' | 'apiVersion' | 'subresource'>): boolean {
  return (a.manager || '') === (b.manager || '') && (a.operation || '') === (b.operation || '') &&
    (a.subresource || '') === (b.subresource || '') &&
    (a.operation !== 'Apply' ? a.apiVersion || '' : '') === (b.operation !== 'Apply' ? b.apiVersion || '' : '');
}

/** Decodes, or gives an empty list when the stored value is unusable (never blocks a write). */
export function decodeManagedFieldsOrEmpty(raw: unknown): ManagerState[] {
  try { return decodeManagedFields(raw); } catch { return []; }
}

/** Encodes entries in Kubernetes' order (operation, time, manager, apiVersion, subresource); empty sets are dropped. */
export function encodeManagedFields(states: readonly ManagerState[]): ManagedFieldsEntry[] {
  const kept = states.filter((s) => !s.set.isEmpty());
  if (kept.length > 1) {
    // Each entry's time is parsed once, not once per comparison.
    const secs = new Map<ManagerState, number>();
    for (const s of kept) secs.set(s, s.time ? Math.floor(Date.parse(s.time) / 1000) || 0 : 0);
    kept.sort((a, b) =>
      cmp(a.operation, b.operation) || secs.get(a)! - secs.get(b)! || cmp(a.manager, b.manager) ||
      cmp(a.apiVersion, b.apiVersion) || cmp(a.subresource ?? '', b.subresource ?? ''));
  }
  return kept.map((s) => {
    const e: ManagedFieldsEntry = { manager: s.manager, operation: s.operation, apiVersion: s.apiVersion };
    if (s.time) e.time = s.time;
    e.fieldsType = 'FieldsV1';
    e.fieldsV1 = s.set.toFieldsV1();
    if (s.subresource) e.subresource = s.subresource;
    return e;
  });
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** RFC 3339 with whole seconds, the form of metav1.Time. */
export function formatTime(now: Date | string | number): string {
  if (typeof now === 'string') return new Date(now).toISOString().replace(/\.\d+Z$/, 'Z');
  // Writes ask for the current time again and again: format each second once.
  const ms = now instanceof Date ? now.getTime() : now;
  const sec = Math.floor(ms / 1000);
  if (sec !== lastSecond || Number.isNaN(sec)) {
    lastStamp = new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z'); // throws RangeError on an invalid date, as before
    lastSecond = sec;
  }
  return lastStamp;
}
let lastSecond = Number.NaN;
let lastStamp = '';

/** A copy of `obj` without the untracked fields and the given reset fields (for ownership computations). */
export function stripUntracked(obj: unknown, resetFields: readonly FieldPath[] = []): JsonObject {
  if (!isObject(obj)) return {};
  const out = deepClone(obj);
  for (const p of [...UNTRACKED_FIELDS, ...resetFields]) {
    const names = p.map((e) => e.slice(2));
    let cur: unknown = out;
    for (let i = 0; i < names.length - 1 && isObject(cur); i++) cur = cur[names[i]!];
    if (isObject(cur)) delete cur[names[names.length - 1]!];
  }
  if (isObject(out['metadata']) && Object.keys(out['metadata']).length === 0) delete out['metadata'];
  return out;
}

/** Field names to leave out at one level of an object, and the levels below to copy without theirs. */
interface DropTrie {
  readonly drop: Set<string>;
  readonly below: Map<string, DropTrie>;
}

function dropTrie(paths: readonly FieldPath[]): DropTrie {
  const root: DropTrie = { drop: new Set(), below: new Map() };
  for (const p of paths) {
    if (p.length === 0) continue;
    let n = root;
    for (let i = 0; i < p.length - 1; i++) {
      const name = p[i]!.slice(2);
      let c = n.below.get(name);
      if (!c) n.below.set(name, c = { drop: new Set(), below: new Map() });
      n = c;
    }
    n.drop.add(p[p.length - 1]!.slice(2));
  }
  return root;
}

const UNTRACKED_TRIE = dropTrie(UNTRACKED_FIELDS);
/** The trie of the untracked fields plus a caller's reset fields, per frozen reset-field list. */
const resetTries = new WeakMap<readonly (readonly string[])[], DropTrie>();

function untrackedTrie(resetFields: readonly (readonly string[])[] | undefined): DropTrie {
  if (!resetFields || resetFields.length === 0) return UNTRACKED_TRIE;
  // Only a frozen list is sure to mean the same next time (the REST layer passes constants).
  if (!Object.isFrozen(resetFields)) return dropTrie([...UNTRACKED_FIELDS, ...fieldNamePaths(resetFields)]);
  let t = resetTries.get(resetFields);
  if (!t) resetTries.set(resetFields, t = dropTrie([...UNTRACKED_FIELDS, ...fieldNamePaths(resetFields)]));
  return t;
}

/** `o` without the trie's fields: objects on the way are copied (shallowly), the rest is shared. */
function copyWithout(o: JsonObject, t: DropTrie, top: boolean): JsonObject {
  const out: JsonObject = {};
  for (const k in o) {
    if (!Object.prototype.hasOwnProperty.call(o, k) || t.drop.has(k)) continue;
    let v = o[k];
    const sub = t.below.get(k);
    if (sub && isObject(v)) {
      v = copyWithout(v, sub, false);
      // A metadata left with nothing but untracked fields is no field at all.
      if (top && k === 'metadata' && allUndefined(v as JsonObject)) continue;
    } else if (top && k === 'metadata' && isObject(v) && allUndefined(v)) continue;
    put(out, k, v);
  }
  return out;
}

function allUndefined(o: JsonObject): boolean {
  for (const k in o) if (Object.prototype.hasOwnProperty.call(o, k) && o[k] !== undefined) return false;
  return true;
}

/**
 * The same value as stripUntracked for reading only: objects on the way to a removed field are
 * copied (shallowly, without the removed members: deleting members would slow every later
 * read of the copy), everything else is shared with `obj`. For comparisons that never write
 * (compareValues), where a deep copy of the whole object was the main cost of a write's
 * managed-fields update. Undefined members may remain; comparisons treat them as absent.
 */
function stripUntrackedView(obj: unknown, trie: DropTrie): JsonObject {
  if (!isObject(obj)) return {};
  return copyWithout(obj, trie, true);
}

/** Turns `['status']`-style field name paths into FieldsV1 paths. */
export function fieldNamePaths(paths: readonly (readonly string[])[] | undefined): FieldPath[] {
  return (paths ?? []).map((p) => p.map(pathElement.field));
}

/** Merges the oldest Update entries into "ancient-changes" entries so at most `max` remain. */
export function capUpdateManagers(states: ManagerState[], max = MAX_UPDATE_MANAGERS): ManagerState[] {
  const updates = states.filter((s) => s.operation === 'Update');
  if (updates.length <= max) return states;
  const byAge = [...updates].sort((a, b) => (Date.parse(a.time ?? '') || 0) - (Date.parse(b.time ?? '') || 0));
  let out = [...states];
  let count = updates.length;
  for (const s of byAge) {
    if (count <= max) break;
    if (s.manager === ANCIENT_CHANGES_MANAGER) continue;
    const bucketId = managerId({ manager: ANCIENT_CHANGES_MANAGER, operation: 'Update', apiVersion: s.apiVersion });
    const bucket = out.find((x) => managerId(x) === bucketId);
    out = out.filter((x) => x !== s);
    if (bucket) {
      bucket.set = bucket.set.union(s.set);
      if (s.time) bucket.time = s.time;
      count--;
    } else {
      const nb: ManagerState = { manager: ANCIENT_CHANGES_MANAGER, operation: 'Update', apiVersion: s.apiVersion, set: s.set };
      if (s.time) nb.time = s.time;
      out.push(nb);
    }
  }
  return out;
}

export interface UpdateManagedFieldsOptions {
  /** The declaration of the object's kind (undefined: untyped, every list atomic). */
  msg?: MessageDecl;
  reg?: SchemaRegistry;
  /** The subresource written through ('status', 'scale'), if any. */
  subresource?: string;
  /** Fields this endpoint does not own, e.g. [['status']] for the main resource. */
  resetFields?: readonly (readonly string[])[];
}

const EMPTY_REGISTRY: SchemaRegistry = { message: () => undefined, forKind: () => undefined, all: () => [] };

/**
 * managedFields after a non-apply write (create: `oldObj` undefined; update; patch). Returns a
 * copy of `newObj` whose metadata.managedFields says that `manager` owns what this write
 * changed. Managed fields sent by the client replace the stored ones when they decode (the
 * `[{}]` form clears them); otherwise the stored ones are kept. Never throws on bad data.
 */
export function updateManagedFields(oldObj: KubeObject | undefined, newObj: KubeObject, manager: string,
  operation: ManagedFieldsOperation, apiVersion: string, now: Date | string | number,
  opts: UpdateManagedFieldsOptions = {}): KubeObject {
  const out = { ...newObj, metadata: { ...(newObj.metadata ?? {}) } };
  const enc = managedFieldsAfterUpdate(oldObj, newObj, manager, operation, apiVersion, now, opts);
  if (enc.length) out.metadata.managedFields = enc;
  else delete out.metadata.managedFields;
  return out;
}

/**
 * What updateManagedFields puts in metadata.managedFields (an empty list: none), for callers
 * that set it on an object they own instead of taking a copy.
 */
export function managedFieldsAfterUpdate(oldObj: KubeObject | undefined, newObj: KubeObject, manager: string,
  operation: ManagedFieldsOperation, apiVersion: string, now: Date | string | number,
  opts: UpdateManagedFieldsOptions = {}): ManagedFieldsEntry[] {
  const reg = opts.reg ?? EMPTY_REGISTRY;
  const node = objectNode(opts.msg);
  const trie = untrackedTrie(opts.resetFields);
  let states: ManagerState[];
  const sent = newObj.metadata?.managedFields;
  let fromClient: ManagerState[] | undefined;
  if (Array.isArray(sent) && sent.length) {
    try { fromClient = decodeManagedFields(sent); } catch { fromClient = undefined; }
  }
  if (fromClient?.length) states = fromClient;
  else states = decodeManagedFieldsOrEmpty(oldObj?.metadata?.managedFields);

  let c: ReturnType<typeof compareValues>;
  try {
    c = compareValues(stripUntrackedView(oldObj ?? {}, trie), stripUntrackedView(newObj, trie), node, reg);
  } catch (e) {
    // Only absurdly deep data gets here (a stack overflow): keep the ownership as it was.
    if (e instanceof RangeError) return encodeManagedFields(states);
    throw e;
  }
  const changed = c.added.union(c.modified);
  const gone = changed.union(c.removed);
  for (const s of states) s.set = s.set.difference(gone);
  if (!changed.isEmpty()) {
    const me: ManagerState = { manager, operation, apiVersion, set: new FieldSet() };
    if (opts.subresource) me.subresource = opts.subresource;
    const prev = states.find((s) => sameIdentity(s, me));
    const target = prev ?? me;
    target.set = target.set.union(changed);
    target.time = formatTime(now);
    if (!prev) states.push(target);
  }
  states = capUpdateManagers(states.filter((s) => !s.set.isEmpty()));
  return encodeManagedFields(states);
}

/** A copy of `obj` carrying `states` as its metadata.managedFields (removed when empty). */
export function withManagedFields(obj: KubeObject, states: readonly ManagerState[]): KubeObject {
  const out = { ...obj, metadata: { ...(obj.metadata ?? {}) } };
  const enc = encodeManagedFields(states);
  if (enc.length) out.metadata.managedFields = enc;
  else delete out.metadata.managedFields;
  return out;
}

/** One field a manager owns that an apply would change. */
export interface ApplyConflict {
  manager: ManagerState;
  path: FieldPath;
}

/** The 409 Conflict for apply conflicts, worded as Kubernetes words it. */
export function applyConflictError(conflicts: readonly ApplyConflict[]): ApiError {
  const sorted = [...conflicts].sort((a, b) => cmp(managerId(a.manager), managerId(b.manager)));
  const causes = sorted.map((c) => ({ reason: 'FieldManagerConflict', message: `conflict with ${printManager(c.manager)}`, field: pathToString(c.path) }));
  let message: string;
  if (sorted.length === 1) {
    message = `Apply failed with 1 conflict: conflict with ${printManager(sorted[0]!.manager)}: ${pathToString(sorted[0]!.path)}`;
  } else {
    const lines: string[] = [];
    let last = '';
    for (const c of sorted) {
      const id = managerId(c.manager);
      if (id !== last) { lines.push(`conflicts with ${printManager(c.manager)}:`); last = id; }
      lines.push(`- ${pathToString(c.path)}`);
    }
    message = `Apply failed with ${sorted.length} conflicts: ${lines.join('\n')}`;
  }
  return new ApiError(409, 'Conflict', message, { causes });
}

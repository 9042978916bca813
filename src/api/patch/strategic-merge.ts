/**
 * Strategic merge patch (`application/strategic-merge-patch+json`), driven by the schema
 * declarations: what kubectl apply/edit/set/rollout send for built-in types.
 *
 * Rules (Kubernetes' strategicpatch package, server side):
 *  - maps merge recursively; `null` deletes a key;
 *  - a list is replaced unless its field's patchStrategy includes 'merge': then elements are
 *    merged by patchMergeKey (lists of objects) or unioned (lists of scalars); patch elements
 *    come in patch order, live-only elements keep their place relative to them;
 *  - directives: `$patch: replace|delete|merge` in a map or a list element,
 *    `$retainKeys: [...]` (keys not listed are cleared), `$setElementOrder/<list>: [...]` (the
 *    final order of a merged list; named elements absent from the patch keep their live value),
 *    `$deleteFromPrimitiveList/<list>: [...]`;
 *  - fields not in the schema behave as in a JSON merge patch (maps merge, lists replace);
 *  - every `$`-prefixed key is consumed: none ever reaches the result.
 * Bad patches are 400 BadRequest ApiErrors. Inputs are never modified.
 */
import { errors } from '../meta/status.js';
import type { MessageDecl, SchemaRegistry } from '../schema/types.js';
import { brief, deepClone, deepEqual, guardDepth, hasKey, isObject, put, type JsonObject } from './json-value.js';
import { childOf, objectNode, type ListNode, type SchemaNode } from './schema-node.js';

const PATCH = '$patch';
const RETAIN_KEYS = '$retainKeys';
const SET_ORDER = '$setElementOrder/';
const DELETE_PRIMITIVE = '$deleteFromPrimitiveList/';

const bad = (msg: string) => errors.badRequest(msg);

/**
 * Applies a strategic merge patch to `original` (an API object of message `msg`; undefined
 * schema means merge-patch semantics everywhere) and returns the new object.
 */
export function strategicMerge(original: unknown, patch: unknown, msg: MessageDecl | undefined, reg: SchemaRegistry): unknown {
  if (!isObject(patch)) throw bad('a strategic merge patch must be a JSON object');
  return guardDepth('strategic merge patch', () => {
    const base = isObject(original) ? deepClone(original) : {};
    return new Merger(reg).map(base, patch, objectNode(msg), '');
  });
}

class Merger {
  constructor(private readonly reg: SchemaRegistry) {}

  /** Merges `patch` into `orig` (owned by us: a fresh copy) and returns the result. */
  map(orig: JsonObject, patch: JsonObject, node: SchemaNode, path: string): JsonObject {
    if (hasKey(patch, PATCH)) {
      const d = patch[PATCH];
      if (d === 'replace') return clean(patch) as JsonObject;
      if (d === 'delete') return {};
      if (d !== 'merge') throw bad(`unknown patch type: ${brief(d)} in map: ${brief(patch)}`);
    }
    const out: JsonObject = { ...orig };

    if (hasKey(patch, RETAIN_KEYS)) {
      const rk = patch[RETAIN_KEYS];
      if (!Array.isArray(rk)) throw bad('invalid patch format of retainKeys');
      const keep = new Set(rk.filter((k): k is string => typeof k === 'string'));
      for (const [k, v] of Object.entries(patch)) {
        if (v === null || k.startsWith('$')) continue;
        if (!keep.has(k)) throw bad(`invalid patch format of retainKeys: ${JSON.stringify(k)} is patched but not listed in $retainKeys`);
      }
      for (const k of Object.keys(out)) if (!keep.has(k)) delete out[k];
    }

    // Ordered lists first: they merge their list and fix its order in one go.
    const handled = new Set<string>();
    for (const [k, order] of Object.entries(patch)) {
      if (!k.startsWith(SET_ORDER)) continue;
      const listKey = k.slice(SET_ORDER.length);
      if (!Array.isArray(order)) throw bad(`invalid patch format of ${SET_ORDER}${listKey}: must be a list`);
      const { node: child } = childOf(node, listKey, this.reg);
      if (child.kind !== 'list' || !child.strategies.includes('merge')) continue;
      const pl = hasKey(patch, listKey) ? patch[listKey] : undefined;
      if (pl === null) continue; // the list is deleted below
      if (pl !== undefined && !Array.isArray(pl)) throw bad(`invalid patch for ${join(path, listKey)}: expected a list, got ${brief(pl)}`);
      const ol = hasKey(out, listKey) ? out[listKey] : undefined;
      const origList = Array.isArray(ol) ? ol : undefined;
      if (!origList && !pl) continue;
      const p = join(path, listKey);
      const merged = pl ? this.list(origList ?? [], pl, child, p) : origList!;
      const mergeKey = child.elem.kind === 'message' || (child.elem.kind !== 'scalar' && isMapList(merged, pl ?? [])) ? child.mergeKey : undefined;
      if (mergeKey !== undefined) checkMergeKeys(order, mergeKey);
      put(out, listKey, normalizeOrder(merged, order, origList ?? [], mergeKey));
      handled.add(listKey);
    }

    for (const [k, pv] of Object.entries(patch)) {
      if (k.startsWith('$') || handled.has(k)) continue;
      if (pv === null) { delete out[k]; continue; }
      const { node: child } = childOf(node, k, this.reg);
      const ov = hasKey(out, k) ? out[k] : undefined;
      put(out, k, this.value(ov, pv, child, join(path, k)));
    }

    for (const [k, del] of Object.entries(patch)) {
      if (!k.startsWith(DELETE_PRIMITIVE)) continue;
      const listKey = k.slice(DELETE_PRIMITIVE.length);
      if (!Array.isArray(del)) throw bad(`invalid patch format of ${DELETE_PRIMITIVE}${listKey}: must be a list`);
      const cur = hasKey(out, listKey) ? out[listKey] : undefined;
      if (!Array.isArray(cur)) continue;
      put(out, listKey, cur.filter((x) => !del.some((d) => deepEqual(d, x))));
    }
    return out;
  }

  private value(ov: unknown, pv: unknown, node: SchemaNode, path: string): unknown {
    if (node.kind === 'list') {
      if (Array.isArray(pv) && node.strategies.includes('merge')) return this.list(Array.isArray(ov) ? ov : [], pv, node, path);
      return clean(pv);
    }
    if (isObject(pv)) return this.map(isObject(ov) ? ov : {}, pv, node, path);
    return clean(pv);
  }

  /** Merges a patch list into a list whose field has patchStrategy 'merge'. */
  list(orig: unknown[], patch: unknown[], node: ListNode, path: string): unknown[] {
    if (orig.length === 0 && patch.length === 0) return [];
    const mapList = node.elem.kind === 'message' || (node.elem.kind !== 'scalar' && isMapList(orig, patch));
    if (!mapList) {
      for (const x of patch) {
        if (typeof x === 'object' && x !== null) throw bad(`invalid patch for ${path}: list elements must all be scalars or all be objects`);
      }
      const merged: unknown[] = [];
      for (const x of [...orig, ...patch]) if (!merged.some((y) => deepEqual(x, y))) merged.push(x);
      return normalizeOrder(merged, patch, orig, undefined);
    }
    const key = node.mergeKey;
    if (!key) throw bad(`cannot merge lists without merge key for ${path}`);
    let base = [...orig];
    let replace = false;
    const plain: JsonObject[] = [];
    for (const el of patch) {
      if (!isObject(el)) throw bad(`invalid patch for ${path}: list elements must all be objects, got ${brief(el)}`);
      if (!hasKey(el, PATCH)) { plain.push(el); continue; }
      const d = el[PATCH];
      if (d === 'delete') {
        if (!hasKey(el, key)) throw bad(noMergeKey(el, key));
        base = base.filter((o) => !(isObject(o) && deepEqual(o[key], el[key])));
      } else if (d === 'replace') {
        replace = true;
      } else if (d === 'merge') {
        // The default for an element; an element carrying only the directive adds nothing.
        const rest = Object.fromEntries(Object.entries(el).filter(([k]) => k !== PATCH));
        if (Object.keys(rest).some((k) => !k.startsWith('$'))) plain.push(rest);
      } else {
        throw bad(`unknown patch type: ${brief(d)} in map: ${brief(el)}`);
      }
    }
    if (replace) return plain.map((el) => this.map({}, el, node.elem, path));
    const out = [...base];
    const index = new Map<string, number>();
    out.forEach((o, i) => {
      if (isObject(o) && hasKey(o, key)) { const id = canon(o[key]); if (!index.has(id)) index.set(id, i); }
    });
    for (const el of plain) {
      if (!hasKey(el, key)) throw bad(noMergeKey(el, key));
      const id = canon(el[key]);
      const at = index.get(id);
      if (at !== undefined) {
        out[at] = this.map(out[at] as JsonObject, el, node.elem, path);
      } else {
        index.set(id, out.length);
        out.push(this.map({}, el, node.elem, path));
      }
    }
    return normalizeOrder(out, plain, base, key);
  }
}

function join(path: string, key: string): string {
  return path ? `${path}.${key}` : key;
}

function noMergeKey(el: unknown, key: string): string {
  return `map: ${brief(el)} does not contain declared merge key: ${key}`;
}

function checkMergeKeys(list: unknown[], key: string): void {
  for (const el of list) if (!isObject(el) || !hasKey(el, key)) throw bad(noMergeKey(el, key));
}

function isMapList(a: readonly unknown[], b: readonly unknown[]): boolean {
  return b.some(isObject) || a.some(isObject);
}

/** Drops directives and null members from a value taken whole from the patch. */
function clean(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(clean);
  if (!isObject(v)) return v;
  const out: JsonObject = {};
  for (const [k, x] of Object.entries(v)) {
    if (k.startsWith('$') || x === null || x === undefined) continue;
    put(out, k, clean(x));
  }
  return out;
}

/** A canonical string for identity comparisons of merge-key values and list scalars. */
function canon(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canon).join(',')}]`;
  if (isObject(v)) return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canon(v[k])}`).join(',')}}`;
  return JSON.stringify(v) ?? 'undefined';
}

/**
 * Kubernetes' element-order rule: items named in `patchOrder` come in that order; the other
 * (server-only) items keep their live order and are slotted in front of the first patch item
 * that follows them in the live list.
 */
function normalizeOrder(merged: unknown[], patchOrder: readonly unknown[], serverOrder: readonly unknown[], key: string | undefined): unknown[] {
  const id = (x: unknown): string => canon(key === undefined ? x : isObject(x) ? x[key] : undefined);
  const firstIndex = (list: readonly unknown[]): Map<string, number> => {
    const m = new Map<string, number>();
    list.forEach((x, i) => { const k = id(x); if (!m.has(k)) m.set(k, i); });
    return m;
  };
  const pIdx = firstIndex(patchOrder);
  const sIdx = firstIndex(serverOrder);
  const patchItems = merged.filter((x) => pIdx.has(id(x)));
  const serverOnly = merged.filter((x) => !pIdx.has(id(x)));
  const byIndex = (m: Map<string, number>) => (a: unknown, b: unknown) =>
    (m.get(id(a)) ?? Number.MAX_SAFE_INTEGER) - (m.get(id(b)) ?? Number.MAX_SAFE_INTEGER);
  patchItems.sort(byIndex(pIdx)); // Array.prototype.sort is stable
  serverOnly.sort(byIndex(sIdx));
  const out: unknown[] = [];
  let i = 0, j = 0;
  while (i < serverOnly.length || j < patchItems.length) {
    if (i >= serverOnly.length) { out.push(patchItems[j++]); continue; }
    if (j >= patchItems.length) { out.push(serverOnly[i++]); continue; }
    const li = sIdx.get(id(serverOnly[i])), ri = sIdx.get(id(patchItems[j]));
    if (li !== undefined && ri !== undefined && li < ri) out.push(serverOnly[i++]);
    else out.push(patchItems[j++]);
  }
  return out;
}

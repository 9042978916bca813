/**
 * Schema-aware walks over JSON values for server-side apply, after Kubernetes'
 * structured-merge-diff:
 *  - toFieldSet: the fields a value sets (leaves, list elements, atomic values, map entries,
 *    empty objects and nulls);
 *  - mergeValues: `rhs` merged over `lhs` (leaves and atomic values from rhs win; maps and
 *    structs merge by key; list-maps by key fields and sets by value, in an order that keeps
 *    live-only items in place and shared items in rhs order);
 *  - compareValues: which fields were added, modified or removed between two values;
 *  - removePaths: the value without the given fields.
 *
 * Atomicity: scalars, special types, atomic lists (listType atomic, or no merge semantics),
 * atomic maps/structs, and lists inside undeclared (untyped) data are single leaves.
 * List elements are identified by key fields (list-map) or value (set); an element without
 * any key field is an error in the applied configuration (`strict`) and is identified by its
 * index elsewhere, so bad live data never blocks a write.
 */
import { errors } from '../meta/status.js';
import { SPECIAL_MESSAGES, type FieldDecl, type SchemaRegistry } from '../schema/types.js';
import { canonicalJson, FieldSet, pathElement, pathKey, pathToString, type FieldPath, type PathElement } from './fieldpath.js';
import { deepEqual, hasKey, isObject, put, type JsonObject } from './json-value.js';
import { childOf, type ListNode, type SchemaNode } from './schema-node.js';

/**
 * Defaults Kubernetes applies to list-map key fields, so that an applied element that omits
 * one matches the defaulted live element (e.g. container ports keyed by containerPort+protocol).
 */
const KEY_FIELD_DEFAULTS: Readonly<Record<string, unknown>> = { protocol: 'TCP' };

type Shape = 'leaf' | 'object' | 'list';

/** A Go value struct field: always present in Go's JSON, so absent means `{}`. */
function isValueStruct(f: FieldDecl): boolean {
  return 'message' in f.type && !SPECIAL_MESSAGES[f.type.message] && !f.optional && !f.repeated && !f.map;
}

function shapeOf(node: SchemaNode, v: unknown): Shape {
  switch (node.kind) {
    case 'scalar': return 'leaf';
    case 'untyped': return isObject(v) ? 'object' : 'leaf';
    case 'message': case 'map': return !node.atomic && isObject(v) ? 'object' : 'leaf';
    case 'list': return node.listType !== 'atomic' && Array.isArray(v) ? 'list' : 'leaf';
  }
}

function isEmptyValue(v: unknown): boolean {
  if (Array.isArray(v)) return v.length === 0;
  if (!isObject(v)) return false;
  for (const k in v) if (Object.prototype.hasOwnProperty.call(v, k)) return false;
  return true;
}

/** A list-map's key field names, distinct and sorted (the order of a k: element's JSON). */
const sortedKeyCache = new WeakMap<ListNode, readonly string[]>();

function sortedKeys(node: ListNode): readonly string[] {
  let k = sortedKeyCache.get(node);
  if (!k) sortedKeyCache.set(node, k = [...new Set(node.keys)].sort());
  return k;
}

/**
 * The k: element of a list-map item (pathElement.key of its key fields, written directly:
 * this runs for every item of every list a walk visits); undefined when no key field is set.
 */
function keyElement(node: ListNode, item: JsonObject): PathElement | undefined {
  let text = '';
  const defaults = node.keys.length > 1;
  for (const k of sortedKeys(node)) {
    let v: unknown;
    if (hasKey(item, k) && item[k] !== null && item[k] !== undefined) v = item[k];
    else if (defaults && KEY_FIELD_DEFAULTS[k] !== undefined) v = KEY_FIELD_DEFAULTS[k];
    else continue;
    text += (text ? ',' : '') + JSON.stringify(k) + ':' + (typeof v === 'string' ? JSON.stringify(v) : canonicalJson(v));
  }
  return text ? 'k:{' + text + '}' : undefined;
}

/** The path element of a list item; an index element when it cannot be identified (lenient mode). */
function itemElement(node: ListNode, item: unknown, index: number, path: () => FieldPath, strict: boolean): PathElement {
  if (node.listType === 'map') {
    if (isObject(item)) {
      const pe = keyElement(node, item);
      if (pe !== undefined) return pe;
    }
    if (strict) {
      throw errors.badRequest(`${pathToString(path())}: element ${index}: associative list with keys has an element that omits key field ${node.keys.map((k) => JSON.stringify(k)).join(', ')}`);
    }
    return pathElement.index(index);
  }
  // set
  if (item === null || typeof item !== 'object') return pathElement.value(item);
  if (strict) throw errors.badRequest(`${pathToString(path())}: element ${index}: a set may only hold scalar values`);
  return pathElement.index(index);
}

/** Identifies every item; duplicates after the first are marked undefined (strict: an error). */
function indexItems(node: ListNode, list: readonly unknown[], path: FieldPath | (() => FieldPath), strict: boolean): (PathElement | undefined)[] {
  const pathOf = typeof path === 'function' ? path : (): FieldPath => path;
  const seen = new Set<string>();
  return list.map((item, i) => {
    const pe = itemElement(node, item, i, pathOf, strict);
    if (seen.has(pe)) {
      if (strict) throw errors.badRequest(`${pathToString(pathOf())}: duplicate entries for key ${pathToString([pe])}`);
      return undefined;
    }
    seen.add(pe);
    return pe;
  });
}

// ---------------------------------------------------------------- toFieldSet

/** The set of fields `value` specifies (the ownership an apply of `value` claims). */
export function toFieldSet(value: unknown, node: SchemaNode, reg: SchemaRegistry, strict = false): FieldSet {
  const set = new FieldSet();
  const walk = (v: unknown, n: SchemaNode, path: FieldPath): void => {
    const shape = shapeOf(n, v);
    if (shape === 'leaf') { set.insert(path); return; }
    if (shape === 'object') {
      for (const [k, x] of Object.entries(v as JsonObject)) {
        if (x === undefined) continue;
        const { node: cn, field } = childOf(n, k, reg);
        const cp = [...path, pathElement.field(k)];
        walk(x, cn, cp);
        if (x === null || !field || (isObject(x) && isEmptyValue(x))) set.insert(cp);
      }
      return;
    }
    const ln = n as ListNode;
    const list = v as unknown[];
    const pes = indexItems(ln, list, path, strict);
    list.forEach((item, i) => {
      const pe = pes[i];
      if (pe === undefined) return;
      const cp = [...path, pe];
      walk(item, ln.elem, cp);
      set.insert(cp);
    });
  };
  walk(value, node, []);
  return set;
}

// ---------------------------------------------------------------- merge / compare

/**
 * A position in a walk, as a chain to its parent: most positions are never reported, so their
 * path arrays (and 'f:' element strings) are only made for those that are.
 */
class PathLink {
  constructor(readonly up: PathLink | undefined, readonly el: string, readonly isField: boolean, readonly depth: number) {}

  static child(up: PathLink | undefined, el: string, isField: boolean): PathLink {
    return new PathLink(up, el, isField, up ? up.depth + 1 : 1);
  }
}

function pathOf(link: PathLink | undefined): FieldPath {
  if (!link) return [];
  const out = new Array<PathElement>(link.depth);
  for (let n: PathLink | undefined = link; n; n = n.up) out[n.depth - 1] = n.isField ? pathElement.field(n.el) : n.el;
  return out;
}

interface Hooks {
  /** A leaf (or atomic value) at `path`; undefined means absent on that side. */
  leaf?(path: PathLink, l: unknown, r: unknown): void;
  /** After the children of a non-leaf at `path`. */
  post?(path: PathLink, l: unknown, r: unknown): void;
}

interface WalkOptions {
  /** Applied configurations: unidentifiable or duplicate list items in rhs are errors. */
  strictRhs: boolean;
  /** Treat absent non-optional struct fields as `{}` (Go value structs are always present). */
  implicitStructs: boolean;
  /** Build the merged value (false: only the hooks matter, the walk returns nothing useful). */
  build: boolean;
}

class CoWalker {
  constructor(private readonly reg: SchemaRegistry, private readonly hooks: Hooks, private readonly opts: WalkOptions) {}

  walk(l: unknown, r: unknown, node: SchemaNode, path: PathLink | undefined): unknown {
    const ls = l === undefined ? undefined : shapeOf(node, l);
    const rs = r === undefined ? undefined : shapeOf(node, r);
    const shape = ls ?? rs!;
    if (shape === 'leaf' || (ls !== undefined && rs !== undefined && ls !== rs) ||
      ((l === undefined || isEmptyValue(l)) && (r === undefined || isEmptyValue(r)))) {
      if (path) this.hooks.leaf?.(path, l, r);
      return r !== undefined ? r : l;
    }
    const out = shape === 'object'
      ? this.object(l as JsonObject | undefined, r as JsonObject | undefined, node, path)
      : this.list(l as unknown[] | undefined, r as unknown[] | undefined, node as ListNode, path);
    if (path) this.hooks.post?.(path, l, r);
    return out;
  }

  /** Keys of l (with a value), then those only r has: the order the merged object gets. */
  private object(l: JsonObject | undefined, r: JsonObject | undefined, node: SchemaNode, path: PathLink | undefined): JsonObject {
    const out: JsonObject = {};
    if (l) {
      for (const k in l) {
        if (!hasKey(l, k) || l[k] === undefined) continue;
        this.member(k, l, r, node, path, out);
      }
    }
    if (r) {
      for (const k in r) {
        if (!hasKey(r, k) || r[k] === undefined || (l && hasKey(l, k) && l[k] !== undefined)) continue;
        this.member(k, l, r, node, path, out);
      }
    }
    return out;
  }

  private member(k: string, l: JsonObject | undefined, r: JsonObject | undefined, node: SchemaNode, path: PathLink | undefined, out: JsonObject): void {
    const { node: cn, field } = childOf(node, k, this.reg);
    let lv = l && hasKey(l, k) ? l[k] : undefined;
    let rv = r && hasKey(r, k) ? r[k] : undefined;
    if (this.opts.implicitStructs && field && isValueStruct(field)) {
      if (lv === undefined && l !== undefined) lv = {};
      if (rv === undefined && r !== undefined) rv = {};
    }
    const v = this.walk(lv, rv, cn, PathLink.child(path, k, true));
    if (this.opts.build && v !== undefined) put(out, k, v);
  }

  /**
   * Merges list items: live-only items stay where they are, shared items follow the rhs order,
   * rhs-only items are inserted where they stand in rhs.
   */
  private list(l: unknown[] | undefined, r: unknown[] | undefined, node: ListNode, path: PathLink | undefined): unknown[] {
    const lList = l ?? [], rList = r ?? [];
    const where = (): FieldPath => pathOf(path);
    const lPEs = indexItems(node, lList, where, false);
    const rPEs = indexItems(node, rList, where, this.opts.strictRhs);
    const lByPE = new Map<string, number>();
    lPEs.forEach((pe, i) => { if (pe !== undefined) lByPE.set(pe, i); });
    const rByPE = new Map<string, number>();
    rPEs.forEach((pe, i) => { if (pe !== undefined) rByPE.set(pe, i); });
    const shared = rPEs.filter((pe): pe is string => pe !== undefined && lByPE.has(pe));
    let nextShared = 0;
    const merged = new Set<string>();
    const out: unknown[] = [];
    const build = this.opts.build;
    const emit = (pe: string, li: number | undefined, ri: number | undefined): void => {
      const v = this.walk(li === undefined ? undefined : lList[li], ri === undefined ? undefined : rList[ri], node.elem, PathLink.child(path, pe, false));
      if (build && v !== undefined) out.push(v);
      if (nextShared < shared.length && shared[nextShared] === pe) nextShared++;
    };
    let li = 0, ri = 0;
    while (li < lList.length || ri < rList.length) {
      if (li < lList.length) {
        const pe = lPEs[li];
        if (pe === undefined) { if (build) out.push(lList[li]); li++; continue; } // an unidentifiable duplicate: kept as is
        if (ri < rList.length && pe === rPEs[ri]) {
          merged.add(pe); emit(pe, li, ri); li++; ri++; continue;
        }
        if (!rByPE.has(pe)) { emit(pe, li, undefined); li++; continue; }
        if (merged.has(pe)) { li++; continue; }
        if (nextShared < shared.length && shared[nextShared] !== pe) { li++; continue; }
      }
      if (ri < rList.length) {
        const pe = rPEs[ri];
        if (pe === undefined) { ri++; continue; }
        merged.add(pe);
        emit(pe, lByPE.get(pe), ri);
        ri++;
        continue;
      }
      li++; // only reachable for a shared live item whose rhs twin was already merged
    }
    return out;
  }
}

/** `rhs` merged over `lhs` (server-side apply's merge of a configuration into the live object). */
export function mergeValues(lhs: unknown, rhs: unknown, node: SchemaNode, reg: SchemaRegistry, strictRhs = false): unknown {
  return new CoWalker(reg, {}, { strictRhs, implicitStructs: false, build: true }).walk(lhs, rhs, node, undefined);
}

export interface Comparison {
  added: FieldSet;
  modified: FieldSet;
  removed: FieldSet;
}

/**
 * Fields added, modified (leaf values that differ) and removed going from `lhs` to `rhs`.
 * Maps and list items that appear or disappear as a whole are listed themselves too.
 */
export function compareValues(lhs: unknown, rhs: unknown, node: SchemaNode, reg: SchemaRegistry, implicitStructs = true): Comparison {
  const c: Comparison = { added: new FieldSet(), modified: new FieldSet(), removed: new FieldSet() };
  const hooks: Hooks = {
    leaf(path, l, r) {
      if (l === undefined) c.added.insert(pathOf(path));
      else if (r === undefined) c.removed.insert(pathOf(path));
      else if (!deepEqual(l, r)) c.modified.insert(pathOf(path));
    },
    post(path, l, r) {
      if (l === undefined) c.added.insert(pathOf(path));
      else if (r === undefined) c.removed.insert(pathOf(path));
    },
  };
  new CoWalker(reg, hooks, { strictRhs: false, implicitStructs, build: false }).walk(lhs, rhs, node, undefined);
  return c;
}

/**
 * `value` without the fields in `paths` (a removed list item or map entry takes its children
 * along). A map or list emptied by the removal disappears too, as Go's omitempty would drop it.
 */
export function removePaths(value: unknown, paths: FieldSet, node: SchemaNode, reg: SchemaRegistry): unknown {
  if (paths.isEmpty()) return value;
  const prefixes = new Set<string>();
  for (const p of paths.unordered()) for (let i = 1; i < p.length; i++) prefixes.add(pathKey(p.slice(0, i)));
  const collapses = (n: SchemaNode): boolean => n.kind === 'map' || n.kind === 'list' || n.kind === 'untyped';
  const walk = (v: unknown, n: SchemaNode, path: FieldPath): unknown => {
    if (path.length && !prefixes.has(pathKey(path))) return v;
    const shape = shapeOf(n, v);
    if (shape === 'object') {
      const out: JsonObject = {};
      let kept = 0;
      for (const [k, x] of Object.entries(v as JsonObject)) {
        const cp = [...path, pathElement.field(k)];
        if (paths.has(cp)) continue;
        const w = walk(x, childOf(n, k, reg).node, cp);
        if (w !== undefined) { put(out, k, w); kept++; }
      }
      return kept === 0 && path.length && collapses(n) ? undefined : out;
    }
    if (shape === 'list') {
      const ln = n as ListNode;
      const list = v as unknown[];
      const pes = indexItems(ln, list, path, false);
      const out: unknown[] = [];
      list.forEach((item, i) => {
        const pe = pes[i];
        if (pe === undefined) { out.push(item); return; }
        const cp = [...path, pe];
        if (paths.has(cp)) return;
        const w = walk(item, ln.elem, cp);
        if (w !== undefined) out.push(w);
      });
      return out.length === 0 ? undefined : out;
    }
    return v;
  };
  return walk(value, node, []) ?? {};
}

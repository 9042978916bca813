/**
 * Field paths and field sets for server-side apply, and their FieldsV1 wire form (the
 * `fieldsV1` of a managedFields entry).
 *
 * A path element is kept in its FieldsV1 spelling, which is also its identity:
 *   f:<name>        a struct field or a map key            .spec / .metadata.labels.app
 *   k:<json>        a list-map element by its key fields   k:{"containerPort":80,"protocol":"TCP"}
 *                   (a JSON object, key fields sorted by name)
 *   v:<json>        a set element by its value             v:"example.com/finalizer"
 *   i:<n>           an element of a list by index (never produced here; accepted when read)
 * In FieldsV1 a node that is itself in the set and also has children carries a "." member;
 * a leaf in the set is `{}`. Example: {"f:spec":{"f:containers":{"k:{\"name\":\"c\"}":{".":{},"f:image":{}}}}}
 */
import { isObject, put, type JsonObject } from './json-value.js';

export type PathElement = string;
export type FieldPath = readonly PathElement[];

/** JSON with object keys sorted, for stable key and value element spellings. */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (isObject(v)) {
    return `{${Object.keys(v).filter((k) => v[k] !== undefined).sort().map((k) => `${JSON.stringify(k)}:${canonicalJson(v[k])}`).join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

export const pathElement = {
  field: (name: string): PathElement => 'f:' + name,
  key: (fields: Readonly<Record<string, unknown>>): PathElement => 'k:' + canonicalJson(fields),
  value: (v: unknown): PathElement => 'v:' + canonicalJson(v),
  index: (i: number): PathElement => 'i:' + i,
};

const TYPE_ORDER: Record<string, number> = { f: 0, k: 1, v: 2, i: 3 };

/** The order Kubernetes sorts path elements in: fields, then keys, values, indexes. */
function comparePathElements(a: PathElement, b: PathElement): number {
  const ta = TYPE_ORDER[a[0]!] ?? 4, tb = TYPE_ORDER[b[0]!] ?? 4;
  if (ta !== tb) return ta - tb;
  if (ta === 3) return Number(a.slice(2)) - Number(b.slice(2));
  return a < b ? -1 : a > b ? 1 : 0;
}

function valueToString(v: unknown): string {
  return typeof v === 'string' ? JSON.stringify(v) : canonicalJson(v);
}

/** The human form used in conflict messages: .spec.containers[name="c"].image, .metadata.finalizers[="x"]. */
export function pathToString(path: FieldPath): string {
  return path.map((e) => {
    const body = e.slice(2);
    switch (e[0]) {
      case 'f': return '.' + body;
      case 'k': {
        let fields: unknown;
        try { fields = JSON.parse(body); } catch { return `[${body}]`; }
        if (!isObject(fields)) return `[${body}]`;
        return '[' + Object.keys(fields).sort().map((k) => `${k}=${valueToString(fields[k])}`).join(',') + ']';
      }
      case 'v': {
        try { return `[=${valueToString(JSON.parse(body))}]`; } catch { return `[=${body}]`; }
      }
      case 'i': return `[${body}]`;
      default: return `{{invalid path element ${e}}}`;
    }
  }).join('');
}

/**
 * The identity of a path. Valid elements start with "f:", "k:", "v:" or "i:", so joining with
 * NUL is unambiguous unless an element itself holds a NUL; those rare paths use their JSON
 * form behind a \u0001 marker, which no joined path can start with.
 */
export function pathKey(p: FieldPath): string {
  for (const e of p) if (e.includes('\u0000')) return '\u0001' + JSON.stringify(p);
  return p.join('\u0000');
}

/**
 * A node of a FieldSet's trie: `member` when the path ending here is in the set. Every node
 * but the root is a member or has children (empty branches are pruned), so a set is empty
 * exactly when its root has no children.
 */
interface Node {
  member: boolean;
  children: Map<PathElement, Node> | undefined;
}

const newNode = (member: boolean): Node => ({ member, children: undefined });

function cloneNode(n: Node): Node {
  const c = newNode(n.member);
  if (n.children) {
    c.children = new Map();
    for (const [e, k] of n.children) c.children.set(e, cloneNode(k));
  }
  return c;
}

function countMembers(n: Node): number {
  let c = n.member ? 1 : 0;
  if (n.children) for (const k of n.children.values()) c += countMembers(k);
  return c;
}

function isEmptyNode(n: Node | undefined): boolean {
  return !n || (!n.member && (!n.children || n.children.size === 0));
}

function unionNodes(a: Node | undefined, b: Node | undefined): Node | undefined {
  if (!a) return b;
  if (!b) return a;
  const out = newNode(a.member || b.member);
  if (a.children || b.children) {
    out.children = new Map(a.children);
    if (b.children) for (const [e, bk] of b.children) out.children.set(e, unionNodes(out.children.get(e), bk)!);
  }
  return out;
}

/** `a` minus `b`; `a` itself when nothing is removed. */
function differenceNodes(a: Node, b: Node | undefined): Node | undefined {
  if (!b) return a;
  const member = a.member && !b.member;
  let children = a.children;
  if (a.children && b.children) {
    let copy: Map<PathElement, Node> | undefined;
    for (const [e, ak] of a.children) {
      const bk = b.children.get(e);
      if (!bk) continue;
      const d = differenceNodes(ak, bk);
      if (d === ak) continue;
      copy ??= new Map(a.children);
      if (d) copy.set(e, d); else copy.delete(e);
    }
    if (copy) children = copy.size ? copy : undefined;
  }
  if (member === a.member && children === a.children) return a;
  if (!member && !children) return undefined;
  return { member, children };
}

function intersectNodes(a: Node, b: Node): Node | undefined {
  const member = a.member && b.member;
  let children: Map<PathElement, Node> | undefined;
  if (a.children && b.children) {
    const [small, large] = a.children.size <= b.children.size ? [a.children, b.children] : [b.children, a.children];
    for (const [e, sk] of small) {
      const lk = large.get(e);
      if (!lk) continue;
      const i = small === a.children ? intersectNodes(sk, lk) : intersectNodes(lk, sk);
      if (i) (children ??= new Map()).set(e, i);
    }
  }
  if (!member && !children) return undefined;
  return { member, children };
}

function equalNodes(a: Node, b: Node): boolean {
  if (a === b) return true;
  if (a.member !== b.member) return false;
  const an = a.children?.size ?? 0, bn = b.children?.size ?? 0;
  if (an !== bn) return false;
  if (an === 0) return true;
  for (const [e, ak] of a.children!) {
    const bk = b.children!.get(e);
    if (!bk || !equalNodes(ak, bk)) return false;
  }
  return true;
}

/**
 * An immutable-by-convention set of field paths, kept as a trie of path elements (the shape of
 * FieldsV1, so reading and writing that form is a single walk). Operations return new sets,
 * which may share branches with their operands; `insert` on a set that shares branches copies
 * them first, so no set ever changes another.
 */
export class FieldSet {
  private root: Node = newNode(false);
  /** Branches may be shared with another set: copy before changing them. */
  private shared = false;
  private count = -1;

  constructor(paths: Iterable<FieldPath> = []) {
    for (const p of paths) this.insert(p);
  }

  private static of(root: Node | undefined): FieldSet {
    const s = new FieldSet();
    if (root) { s.root = root; s.shared = true; }
    return s;
  }

  get size(): number {
    if (this.count < 0) this.count = countMembers(this.root);
    return this.count;
  }

  isEmpty(): boolean { return isEmptyNode(this.root); }

  has(p: FieldPath): boolean {
    if (p.length === 0) return false;
    const n = this.find(p);
    return n !== undefined && n.member;
  }

  private find(p: FieldPath): Node | undefined {
    let n: Node | undefined = this.root;
    for (let i = 0; i < p.length && n; i++) n = n.children?.get(p[i]!);
    return n;
  }

  /** Adds a path in place; for builders only (before the set is shared). */
  insert(p: FieldPath): void {
    if (p.length === 0) return;
    if (this.shared) { this.root = cloneNode(this.root); this.shared = false; }
    let n = this.root;
    for (let i = 0; i < p.length; i++) {
      const e = p[i]!;
      const children = (n.children ??= new Map());
      let c = children.get(e);
      if (!c) { c = newNode(false); children.set(e, c); }
      n = c;
    }
    if (!n.member) { n.member = true; if (this.count >= 0) this.count++; }
  }

  /** All paths in no particular order (cheaper than `paths()`). */
  unordered(): IterableIterator<FieldPath> {
    return this.collect(false).values();
  }

  /** All paths, sorted. */
  paths(): FieldPath[] {
    return this.collect(true);
  }

  /** Pre-order walk: with children in element order, paths come element by element in comparePathElements order, shorter first. */
  private collect(sorted: boolean): FieldPath[] {
    const out: FieldPath[] = [];
    const prefix: PathElement[] = [];
    const walk = (n: Node): void => {
      if (!n.children) return;
      const keys = sorted && n.children.size > 1 ? sortedElements(n.children) : n.children.keys();
      for (const e of keys) {
        const c = n.children.get(e)!;
        prefix.push(e);
        if (c.member) out.push(prefix.slice());
        walk(c);
        prefix.pop();
      }
    };
    walk(this.root);
    return out;
  }

  private share(): Node {
    this.shared = true;
    return this.root;
  }

  union(o: FieldSet): FieldSet {
    if (o.isEmpty()) return this;
    if (this.isEmpty()) return FieldSet.of(o.share());
    return FieldSet.of(unionNodes(this.share(), o.share()));
  }

  intersection(o: FieldSet): FieldSet {
    return FieldSet.of(intersectNodes(this.root, o.root));
  }

  difference(o: FieldSet): FieldSet {
    if (o.isEmpty()) return this;
    return FieldSet.of(differenceNodes(this.share(), o.share()));
  }

  /** Drops every path equal to or below one of `prefixes` (e.g. ignored fields such as status). */
  withoutPrefixes(prefixes: readonly FieldPath[]): FieldSet {
    let out: FieldSet = this;
    for (const pre of prefixes) {
      if (pre.length === 0) return new FieldSet();
      if (!out.find(pre)) continue;
      out = out.difference(new FieldSet([pre]).withDescendantsOf(out, pre));
    }
    return out;
  }

  /** A set holding `pre` and every path below it in `from` (for withoutPrefixes). */
  private withDescendantsOf(from: FieldSet, pre: FieldPath): FieldSet {
    const sub = from.find(pre);
    if (!sub) return this;
    let n = this.root;
    for (const e of pre) n = n.children!.get(e)!;
    n.member = true;
    n.children = sub.children ? cloneNode(sub).children : undefined;
    this.count = -1;
    return this;
  }

  /** True when `p` or any path below it is in the set. */
  hasSelfOrDescendant(p: FieldPath): boolean {
    const n = this.find(p);
    return !isEmptyNode(n);
  }

  equals(o: FieldSet): boolean {
    return equalNodes(this.root, o.root);
  }

  /** The FieldsV1 object (children sorted as Kubernetes writes them). */
  toFieldsV1(): JsonObject {
    const emit = (n: Node): JsonObject => {
      const out: JsonObject = {};
      if (!n.children) return out;
      if (n.member) out['.'] = {};
      const keys = n.children.size > 1 ? sortedElements(n.children) : n.children.keys();
      for (const e of keys) put(out, e, emit(n.children.get(e)!));
      return out;
    };
    return emit(this.root);
  }

  /** Reads a FieldsV1 object. Throws an Error describing the first malformed element. */
  static fromFieldsV1(v: unknown): FieldSet {
    const s = new FieldSet();
    const prefix: PathElement[] = [];
    // Fills `n` from `node` (an empty object marks a member leaf).
    const walk = (node: unknown, n: Node): void => {
      if (!isObject(node)) throw new Error(`expected an object at ${pathToString(prefix) || 'the root'}`);
      let any = false;
      for (const k in node) {
        if (!Object.prototype.hasOwnProperty.call(node, k)) continue;
        any = true;
        if (k === '.') {
          if (prefix.length === 0) throw new Error('"." is not allowed at the root');
          n.member = true;
          continue;
        }
        checkElement(k);
        const children = (n.children ??= new Map());
        let c = children.get(k);
        if (!c) { c = newNode(false); children.set(k, c); }
        prefix.push(k);
        walk(node[k], c);
        prefix.pop();
      }
      if (!any && prefix.length) n.member = true;
    };
    walk(v ?? {}, s.root);
    return s;
  }
}

/**
 * Elements in comparePathElements order. Among f:, k: and v: elements that order is plain
 * string order (the type letters sort the same way), which the default sort gives fastest.
 */
function sortedElements(children: ReadonlyMap<PathElement, Node>): PathElement[] {
  const keys = [...children.keys()];
  for (const e of keys) {
    const t = e.charCodeAt(0);
    if (e.charCodeAt(1) !== 0x3a || (t !== 0x66 && t !== 0x6b && t !== 0x76)) return keys.sort(comparePathElements); // not f:, k:, v:
  }
  return keys.sort();
}

/** Elements already found well-formed (k: and v: elements need a JSON parse to check). */
const checkedElements = new Set<string>();
const MAX_CHECKED_ELEMENTS = 10_000;

function checkElement(e: string): void {
  if (e.length >= 2 && e[1] === ':' && e[0] === 'f') return;
  if (checkedElements.has(e)) return;
  checkElementSlow(e);
  if (checkedElements.size >= MAX_CHECKED_ELEMENTS) checkedElements.clear();
  checkedElements.add(e);
}

function checkElementSlow(e: string): void {
  const body = e.slice(2);
  if (e.length < 2 || e[1] !== ':') throw new Error(`invalid path element ${JSON.stringify(e)}`);
  switch (e[0]) {
    case 'f':
      return;
    case 'k': {
      let v: unknown;
      try { v = JSON.parse(body); } catch { throw new Error(`invalid key element ${JSON.stringify(e)}`); }
      if (!isObject(v) || Object.keys(v).length === 0) throw new Error(`invalid key element ${JSON.stringify(e)}`);
      return;
    }
    case 'v':
      try { JSON.parse(body); } catch { throw new Error(`invalid value element ${JSON.stringify(e)}`); }
      return;
    case 'i':
      if (!/^(0|[1-9][0-9]*)$/.test(body)) throw new Error(`invalid index element ${JSON.stringify(e)}`);
      return;
    default:
      throw new Error(`invalid path element ${JSON.stringify(e)}`);
  }
}

export function startsWith(p: FieldPath, prefix: FieldPath): boolean {
  if (prefix.length > p.length) return false;
  for (let i = 0; i < prefix.length; i++) if (p[i] !== prefix[i]) return false;
  return true;
}

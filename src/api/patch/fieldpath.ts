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
export function comparePathElements(a: PathElement, b: PathElement): number {
  const ta = TYPE_ORDER[a[0]!] ?? 4, tb = TYPE_ORDER[b[0]!] ?? 4;
  if (ta !== tb) return ta - tb;
  if (ta === 3) return Number(a.slice(2)) - Number(b.slice(2));
  return a < b ? -1 : a > b ? 1 : 0;
}

export function comparePaths(a: FieldPath, b: FieldPath): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const c = comparePathElements(a[i]!, b[i]!);
    if (c !== 0) return c;
  }
  return a.length - b.length;
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
 * An immutable-by-convention set of field paths. Operations return new sets. Paths handed
 * to it are kept as given: callers never mutate a path array after inserting it.
 */
export class FieldSet {
  private readonly m: Map<string, FieldPath>;

  constructor(paths: Iterable<FieldPath> = []) {
    this.m = new Map();
    for (const p of paths) if (p.length) this.m.set(pathKey(p), p);
  }

  get size(): number { return this.m.size; }
  isEmpty(): boolean { return this.m.size === 0; }
  has(p: FieldPath): boolean { return this.m.has(pathKey(p)); }

  /** Adds a path in place; for builders only (before the set is shared). */
  insert(p: FieldPath): void {
    if (p.length) this.m.set(pathKey(p), p);
  }

  /** All paths in no particular order (cheaper than `paths()`). */
  unordered(): IterableIterator<FieldPath> {
    return this.m.values();
  }

  /** All paths, sorted. */
  paths(): FieldPath[] {
    return [...this.m.values()].sort(comparePaths);
  }

  union(o: FieldSet): FieldSet {
    if (o.m.size === 0) return this;
    const s = new FieldSet();
    for (const [k, p] of this.m) s.m.set(k, p);
    for (const [k, p] of o.m) s.m.set(k, p);
    return s;
  }

  intersection(o: FieldSet): FieldSet {
    const s = new FieldSet();
    for (const [k, p] of this.m) if (o.m.has(k)) s.m.set(k, p);
    return s;
  }

  difference(o: FieldSet): FieldSet {
    if (o.m.size === 0) return this;
    const s = new FieldSet();
    for (const [k, p] of this.m) if (!o.m.has(k)) s.m.set(k, p);
    return s;
  }

  /** Drops every path equal to or below one of `prefixes` (e.g. ignored fields such as status). */
  withoutPrefixes(prefixes: readonly FieldPath[]): FieldSet {
    return new FieldSet([...this.m.values()].filter((p) => !prefixes.some((pre) => startsWith(p, pre))));
  }

  /** True when `p` or any path below it is in the set. */
  hasSelfOrDescendant(p: FieldPath): boolean {
    for (const q of this.m.values()) if (startsWith(q, p)) return true;
    return false;
  }

  equals(o: FieldSet): boolean {
    if (o.m.size !== this.m.size) return false;
    for (const k of this.m.keys()) if (!o.m.has(k)) return false;
    return true;
  }

  /** The FieldsV1 object (children sorted as Kubernetes writes them). */
  toFieldsV1(): JsonObject {
    interface Node { member: boolean; children: Map<string, Node> }
    const root: Node = { member: false, children: new Map() };
    for (const p of this.m.values()) {
      let n = root;
      for (const e of p) {
        let c = n.children.get(e);
        if (!c) { c = { member: false, children: new Map() }; n.children.set(e, c); }
        n = c;
      }
      n.member = true;
    }
    const emit = (n: Node): JsonObject => {
      const out: JsonObject = {};
      if (n.member && n.children.size) out['.'] = {};
      for (const e of [...n.children.keys()].sort(comparePathElements)) put(out, e, emit(n.children.get(e)!));
      return out;
    };
    return emit(root);
  }

  /** Reads a FieldsV1 object. Throws an Error describing the first malformed element. */
  static fromFieldsV1(v: unknown): FieldSet {
    const s = new FieldSet();
    const walk = (node: unknown, prefix: PathElement[]): void => {
      if (!isObject(node)) throw new Error(`expected an object at ${pathToString(prefix) || 'the root'}`);
      const keys = Object.keys(node);
      if (keys.length === 0 && prefix.length) { s.insert(prefix); return; }
      for (const k of keys) {
        if (k === '.') {
          if (prefix.length === 0) throw new Error('"." is not allowed at the root');
          s.insert(prefix);
          continue;
        }
        checkElement(k);
        walk(node[k], [...prefix, k]);
      }
    };
    walk(v ?? {}, []);
    return s;
  }
}

function checkElement(e: string): void {
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

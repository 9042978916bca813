/**
 * JSON as kube-apiserver writes it. Go's encoder writes a struct's fields in the order the Go
 * type declares them (our schema declarations keep that order), a map's keys sorted, `<`, `>`,
 * `&`, U+2028 and U+2029 as \u escapes, and a newline after each value (json.Encoder.Encode).
 * JSON.stringify writes keys in insertion order and escapes none of those, so objects are put
 * in Go order first (goOrder) and the text escaped after (goEscape).
 *
 * goOrder returns its argument itself when it is already in order, so objects decoded from
 * stored JSON (stored in this order) cost one walk and no copy. Keys a declaration does not
 * know (custom resources, fields of ours) keep their order, after the declared ones.
 */
import { messageForObject, schema } from '../schema/registry.js';
import { SPECIAL_MESSAGES, type MessageDecl } from '../schema/types.js';

type Json = Record<string, unknown>;

/** How a member's value is ordered. */
type Child =
  | { readonly kind: 'message'; readonly plan: () => Plan; readonly repeated: boolean }
  | { readonly kind: 'map'; readonly plan: (() => Plan) | undefined }
  | { readonly kind: 'embedded'; readonly repeated: boolean };

/** When Go's `omitempty` leaves a member out: a zero scalar, an empty list or map, a nil pointer. */
type Omit = 'zero' | 'empty' | 'nil';

interface Plan {
  /** JSON names in Go order, inline members flattened. */
  readonly keys: readonly string[];
  /** Members Go leaves out when empty, and what empty is for each (emitEmpty fields are never left out). */
  readonly omit: Readonly<Record<string, Omit>>;
  /**
   * Members Go writes even when the object lacks them, with the value it writes: a non-pointer
   * struct (its zero struct, e.g. `"resources":{}`), a non-pointer Time (`null`, as in a
   * template's `"creationTimestamp":null`), a scalar without omitempty (its zero), a list or
   * map without omitempty (`null`).
   */
  readonly fill: readonly { readonly key: string; readonly zero: () => unknown }[];
  /** Position of each key in `keys`. */
  readonly position: Readonly<Record<string, number>>;
  readonly children: Readonly<Record<string, Child>>;
}

/** Plans by message name: of nested values, and of kinds (kind and apiVersion first). */
const plans = new Map<string, Plan>();
const kindPlans = new Map<string, Plan>();

function planFor(messageName: string, topLevel: boolean): Plan {
  const cache = topLevel ? kindPlans : plans;
  let plan = cache.get(messageName);
  if (plan) return plan;
  const keys: string[] = topLevel ? ['kind', 'apiVersion'] : [];
  const position: Record<string, number> = Object.create(null);
  const children: Record<string, Child> = Object.create(null);
  const seen = new Set<string>(keys);
  const omit: Record<string, Omit> = Object.create(null);
  const fill: { key: string; zero: () => unknown }[] = [];
  const add = (m: MessageDecl): void => {
    for (const f of m.fields) {
      const ref = f.type;
      if (f.inline && 'message' in ref) {
        const inner = schema.message(ref.message);
        if (inner) { add(inner); continue; }
      }
      if (seen.has(f.name)) continue;
      seen.add(f.name);
      keys.push(f.name);
      if (!f.emitEmpty && !f.keepEmpty) {
        if (f.repeated || f.map) omit[f.name] = 'empty';
        else if (f.optional) omit[f.name] = 'nil';
        else if (!('message' in ref)) omit[f.name] = 'zero';
      }
      const nested = 'message' in ref ? ref.message : undefined;
      const special = nested === undefined ? undefined : SPECIAL_MESSAGES[nested];
      const zero = zeroOf(f, nested, special);
      if (zero) fill.push({ key: f.name, zero });
      if (f.map) children[f.name] = { kind: 'map', plan: nested === undefined || special !== undefined ? undefined : () => planFor(nested, false) };
      else if (nested === undefined) continue;
      else if (special === 'RawExtension') children[f.name] = { kind: 'embedded', repeated: f.repeated === true };
      else if (special === undefined) children[f.name] = { kind: 'message', plan: () => planFor(nested, false), repeated: f.repeated === true };
    }
  };
  const decl = schema.message(messageName);
  if (decl) add(decl);
  keys.forEach((k, i) => { position[k] = i; });
  plan = { keys, position, children, omit, fill };
  cache.set(messageName, plan);
  return plan;
}

const SPECIAL_ZEROS: Readonly<Record<string, unknown>> = { Time: null, MicroTime: null, Quantity: '0', IntOrString: 0, Duration: '0s', RawExtension: null, FieldsV1: null, JSON: null };

/** How Go writes a member the object lacks, or undefined when it leaves it out (see Plan.fill). */
function zeroOf(f: MessageDecl['fields'][number], nested: string | undefined, special: string | undefined): (() => unknown) | undefined {
  if (f.repeated || f.map) return f.keepEmpty ? () => null : undefined;
  if (nested === undefined) {
    if (!f.emitEmpty) return undefined;
    const s = 'scalar' in f.type ? f.type.scalar : 'string';
    const z = s === 'string' ? '' : s === 'bool' ? false : s === 'bytes' ? null : 0;
    return () => z;
  }
  if (f.optional) return undefined;
  if (special !== undefined) { const z = SPECIAL_ZEROS[special] ?? null; return () => z; }
  return () => orderMessage({}, planFor(nested, false));
}

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function orderChild(v: unknown, c: Child): unknown {
  if (c.kind === 'map') return isObject(v) ? orderMap(v, c.plan) : v;
  if (c.kind === 'embedded') return c.repeated ? orderEach(v, goOrder) : goOrder(v);
  const plan = c.plan();
  return c.repeated ? orderEach(v, (e) => orderMessage(e, plan)) : orderMessage(v, plan);
}

function orderEach(v: unknown, fn: (e: unknown) => unknown): unknown {
  if (!Array.isArray(v)) return v;
  let out: unknown[] | undefined;
  for (let i = 0; i < v.length; i++) {
    const e = v[i];
    const o = fn(e);
    if (o !== e) (out ??= v.slice())[i] = o;
  }
  return out ?? v;
}

/** A map's entries with keys sorted (Go sorts map keys), values ordered by `valuePlan`. */
function orderMap(m: Json, valuePlan: (() => Plan) | undefined): Json {
  let sorted = true;
  let prev: string | undefined;
  let changed: Map<string, unknown> | undefined;
  const plan = valuePlan?.();
  for (const k in m) {
    if (prev !== undefined && k < prev) sorted = false;
    prev = k;
    if (plan) {
      const v = m[k];
      const o = orderMessage(v, plan);
      if (o !== v) (changed ??= new Map()).set(k, o);
    }
  }
  if (sorted && !changed) return m;
  const out: Json = {};
  for (const k of sorted ? Object.keys(m) : Object.keys(m).sort()) out[k] = changed?.has(k) ? changed.get(k) : m[k];
  return out;
}

/** True when Go's encoder leaves the value out (see Omit). */
function omitted(value: unknown, how: Omit): boolean {
  if (value === null || value === undefined) return true;
  if (how === 'nil') return false;
  if (how === 'zero') return value === '' || value === 0 || value === false;
  return Array.isArray(value) ? value.length === 0 : isObject(value) && isEmpty(value);
}

function isEmpty(o: Json): boolean {
  for (const _ in o) return false;
  return true;
}

function orderMessage(v: unknown, plan: Plan): unknown {
  if (!isObject(v)) return v;
  const position = plan.position;
  const children = plan.children;
  const omit = plan.omit;
  const unknownAt = plan.keys.length;
  let inOrder = true;
  let last = -1;
  let changed: Map<string, unknown> | undefined;
  let drop: Set<string> | undefined;
  for (const k in v) {
    const how = omit[k];
    if (how !== undefined && omitted(v[k], how)) { (drop ??= new Set()).add(k); continue; }
    const p = position[k] ?? unknownAt;
    if (p < last) inOrder = false;
    else last = p;
    const c = children[k];
    if (c !== undefined) {
      const value = v[k];
      const o = orderChild(value, c);
      if (o !== value) (changed ??= new Map()).set(k, o);
    }
  }
  let missing = false;
  const fill = plan.fill;
  for (let i = 0; i < fill.length; i++) if (!(fill[i]!.key in v)) { missing = true; break; }
  if (missing) inOrder = false;
  if (inOrder && !changed && !drop) return v;
  const out: Json = {};
  const take = (k: string): unknown => (changed?.has(k) ? changed.get(k) : v[k]);
  if (inOrder) {
    for (const k in v) if (!drop?.has(k)) out[k] = take(k);
    return out;
  }
  const zeros = missing ? new Map(fill.map((f) => [f.key, f.zero])) : undefined;
  for (const k of plan.keys) {
    if (Object.prototype.hasOwnProperty.call(v, k)) { if (!drop?.has(k)) out[k] = take(k); } else {
      const z = zeros?.get(k);
      if (z) out[k] = z();
    }
  }
  for (const k in v) if (position[k] === undefined) out[k] = v[k];
  return out;
}

/**
 * An API object (or any JSON value holding one) in the order Kubernetes' encoder writes it:
 * the value itself when already in order or not a built-in kind, else an ordered copy (shallow
 * where parts are already in order). Lists and embedded objects are found by kind and apiVersion.
 */
export function goOrder(v: unknown): unknown {
  if (!isObject(v)) return v;
  const kind = v['kind'];
  const apiVersion = v['apiVersion'];
  if (typeof kind !== 'string' || typeof apiVersion !== 'string') return v;
  const decl = messageForObject(apiVersion, kind);
  if (!decl) return v;
  return orderMessage(v, planFor(decl.name, true));
}

/** `v` ordered as the message `messageName` (a value without kind and apiVersion of its own). */
export function goOrderAs(messageName: string, v: unknown): unknown {
  return orderMessage(v, planFor(messageName, false));
}

const HTML_CHARS_ALL = /[<>&\u2028\u2029]/g;
const ESCAPES: Record<string, string> = { '<': '\\u003c', '>': '\\u003e', '&': '\\u0026', '\u2028': '\\u2028', '\u2029': '\\u2029' };

/**
 * JSON text with Go's HTML-safe escapes (encoding/json escapes `<`, `>`, `&`, U+2028 and
 * U+2029 inside strings). Outside strings JSON text has none of them, so a plain replace is safe.
 */
export function goEscape(text: string): string {
  // Five indexOf scans are several times faster than one regular expression test.
  const has = text.indexOf('<') >= 0 || text.indexOf('>') >= 0 || text.indexOf('&') >= 0 || text.indexOf('\u2028') >= 0 || text.indexOf('\u2029') >= 0;
  return has ? text.replace(HTML_CHARS_ALL, (c) => ESCAPES[c]!) : text;
}

/** The compact JSON text of a value as Kubernetes writes it, without the trailing newline. */
export function goJsonText(v: unknown): string {
  return goEscape(JSON.stringify(goOrder(v)));
}


/**
 * `v` ordered as the kind `kind` of `apiVersion`, whether or not it carries kind and apiVersion
 * itself (list items are written without them); unchanged for kinds without a declaration.
 */
export function goOrderKind(apiVersion: string, kind: string, v: unknown): unknown {
  const decl = messageForObject(apiVersion, kind);
  return decl ? orderMessage(v, planFor(decl.name, true)) : v;
}

/**
 * Whether two values of message `messageName` (or two lists of it) are the same to Kubernetes:
 * equal in Go's form, so key order, omitted empty members and filled zero members do not count
 * (Go's semantic equality of typed values). For comparing what a controller computed with what
 * the store holds, which is in Go's form.
 */
export function sameInGoForm(messageName: string, a: unknown, b: unknown): boolean {
  const plan = planFor(messageName, false);
  const form = (v: unknown): string => JSON.stringify(Array.isArray(v) ? v.map((e) => orderMessage(e, plan)) : orderMessage(v ?? {}, plan));
  return form(a) === form(b);
}

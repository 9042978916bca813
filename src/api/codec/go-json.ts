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

/** What a plan knows of one declared member. */
interface Member {
  /** Its place in Go's order. */
  readonly position: number;
  /** When Go leaves it out (undefined: never). */
  readonly omit: Omit | undefined;
  /** How its value is ordered (undefined: a scalar or special value, kept as it is). */
  readonly child: Child | undefined;
  /** Go writes it even when the object lacks it (see Plan.fill). */
  readonly filled: boolean;
  /** A kind's metadata (ObjectMeta): where the stored form leaves resourceVersion's slot (goStorageForm). */
  readonly objectMeta: boolean;
}

const OBJECT_META = 'k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta';

/** A plan looked up once, on first use (plans refer to each other, so they are made lazily). */
function lazyPlan(messageName: string): () => Plan {
  let plan: Plan | undefined;
  return () => (plan ??= planFor(messageName, false));
}

interface Plan {
  /** JSON names in Go order, inline members flattened. */
  readonly keys: readonly string[];
  /**
   * Each declared member by JSON name: one lookup per key of an object being ordered (a
   * prototype-less dictionary: its lookups cost less than a Map's).
   */
  readonly members: Readonly<Record<string, Member | undefined>>;
  /**
   * Members Go writes even when the object lacks them, with the value it writes: a non-pointer
   * struct (its zero struct, e.g. `"resources":{}`), a non-pointer Time (`null`, as in a
   * template's `"creationTimestamp":null`), a scalar without omitempty (its zero), a list or
   * map without omitempty (`null`). Such members are never left out when empty.
   */
  readonly fill: ReadonlyMap<string, () => unknown>;
  /** A kind's plan: kind and apiVersion come first. */
  readonly topLevel: boolean;
}

/** Plans by message name: of nested values, and of kinds (kind and apiVersion first). */
const plans = new Map<string, Plan>();
const kindPlans = new Map<string, Plan>();

function planFor(messageName: string, topLevel: boolean): Plan {
  const cache = topLevel ? kindPlans : plans;
  let plan = cache.get(messageName);
  if (plan) return plan;
  const keys: string[] = topLevel ? ['kind', 'apiVersion'] : [];
  const members: Record<string, Member> = Object.create(null);
  const seen = new Set<string>(keys);
  const fill = new Map<string, () => unknown>();
  const add = (m: MessageDecl): void => {
    for (const f of m.fields) {
      const ref = f.type;
      if (f.inline && 'message' in ref) {
        const inner = schema.message(ref.message);
        if (inner) { add(inner); continue; }
      }
      if (seen.has(f.name)) continue;
      seen.add(f.name);
      let omit: Omit | undefined;
      if (!f.emitEmpty && !f.keepEmpty) {
        if (f.repeated || f.map) omit = 'empty';
        else if (f.optional) omit = 'nil';
        else if (!('message' in ref)) omit = 'zero';
      }
      const nested = 'message' in ref ? ref.message : undefined;
      const special = nested === undefined ? undefined : SPECIAL_MESSAGES[nested];
      const zero = zeroOf(f, nested, special);
      if (zero) fill.set(f.name, zero);
      let child: Child | undefined;
      if (f.map) child = { kind: 'map', plan: nested === undefined || special !== undefined ? undefined : lazyPlan(nested) };
      else if (nested === undefined) child = undefined;
      else if (special === 'RawExtension') child = { kind: 'embedded', repeated: f.repeated === true };
      else if (special === undefined) child = { kind: 'message', plan: lazyPlan(nested), repeated: f.repeated === true };
      const objectMeta = topLevel && f.name === 'metadata' && nested === OBJECT_META;
      members[f.name] = { position: keys.length, omit, child, filled: zero !== undefined, objectMeta };
      keys.push(f.name);
    }
  };
  if (topLevel) keys.forEach((k, i) => { members[k] = { position: i, omit: undefined, child: undefined, filled: false, objectMeta: false }; });
  const decl = schema.message(messageName);
  if (decl) add(decl);
  plan = { keys, members, fill, topLevel };
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
  return () => orderMessage({}, planFor(nested, false), ORDER);
}

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * How a walk treats what it visits. Ordering alone (goOrder) shares every part already in
 * order; the stored form (goStorageForm) also checks that a JSON round trip gives the value back
 * exactly (`check`: else the walk answers IMPURE) and, for a caller that keeps its object
 * (`copy`), makes every object and array fresh, so the result is at once the text's source and
 * a private decoded copy (one walk instead of ordering, checking and copying in turn).
 */
interface Walk { readonly copy: boolean; readonly check: boolean }
const ORDER: Walk = { copy: false, check: false };
const STORE_ADOPTED: Walk = { copy: false, check: true };
const STORE_COPIED: Walk = { copy: true, check: true };

/** What a walk answers for a value a JSON round trip would change (util/json-clone.ts's rules). */
const IMPURE: unique symbol = Symbol('impure');

/** A member set without the "__proto__" trap (a JSON key like any other). */
function put(out: Json, k: string, v: unknown): void {
  if (k === '__proto__') Object.defineProperty(out, k, { value: v, writable: true, enumerable: true, configurable: true });
  else out[k] = v;
}

/** A value no declaration describes (scalars, special types, unknown members), checked and copied as the walk asks. */
function plainValue(v: unknown, w: Walk): unknown {
  if (typeof v !== 'object') {
    if (!w.check || typeof v === 'string' || typeof v === 'boolean') return v;
    return typeof v === 'number' && Number.isFinite(v) && !Object.is(v, -0) ? v : IMPURE;
  }
  if (v === null || (!w.check && !w.copy)) return v;
  if (Array.isArray(v)) return eachOf(v, w, undefined);
  if (w.check && !plainObject(v)) return IMPURE;
  const src = v as Json;
  let out: Json | undefined;
  for (const k in src) {
    const e = src[k];
    const o = plainValue(e, w);
    if (o === IMPURE) return IMPURE;
    if (w.copy) put(out ??= {}, k, o);
  }
  return w.copy ? out ?? {} : v;
}

/** An object a round trip gives back as such: no class instance, no toJSON. */
function plainObject(v: object): boolean {
  const proto: unknown = Object.getPrototypeOf(v);
  return (proto === Object.prototype || proto === null) && typeof (v as Json)['toJSON'] !== 'function';
}

function orderChild(v: unknown, c: Child, w: Walk): unknown {
  if (c.kind === 'map') return isObject(v) ? orderMap(v, c.plan, w) : plainValue(v, w);
  if (c.kind === 'embedded') return c.repeated ? (Array.isArray(v) ? eachOf(v, w, undefined) : plainValue(v, w)) : orderAny(v, w);
  const plan = c.plan();
  return c.repeated ? (Array.isArray(v) ? eachOf(v, w, plan) : plainValue(v, w)) : orderMessage(v, plan, w);
}

/** A list's elements, each ordered as `plan` (undefined: any value, an embedded object found by its kind). */
function eachOf(v: unknown[], w: Walk, plan: Plan | undefined): unknown {
  if (w.check && (Object.getPrototypeOf(v) !== Array.prototype)) return IMPURE;
  let out: unknown[] | undefined = w.copy ? new Array(v.length) : undefined;
  for (let i = 0; i < v.length; i++) {
    if (w.check && !(i in v)) return IMPURE;
    const e = v[i];
    const o = plan !== undefined ? orderMessage(e, plan, w) : orderAny(e, w);
    if (o === IMPURE) return IMPURE;
    if (o !== e || w.copy) (out ??= v.slice())[i] = o;
  }
  return out ?? v;
}

/** A map's entries with keys sorted (Go sorts map keys), values ordered by `valuePlan`. */
function orderMap(m: Json, valuePlan: (() => Plan) | undefined, w: Walk): unknown {
  if (w.check && !plainObject(m)) return IMPURE;
  let sorted = true;
  let prev: string | undefined;
  let changed: Map<string, unknown> | undefined;
  const plan = valuePlan?.();
  const visit = plan !== undefined || w.check || w.copy;
  for (const k in m) {
    if (prev !== undefined && k < prev) sorted = false;
    prev = k;
    if (visit) {
      const v = m[k];
      const o = plan !== undefined ? orderMessage(v, plan, w) : plainValue(v, w);
      if (o === IMPURE) return IMPURE;
      if (o !== v) (changed ??= new Map()).set(k, o);
    }
  }
  if (sorted && !changed && !w.copy) return m;
  const out: Json = {};
  for (const k of sorted ? Object.keys(m) : Object.keys(m).sort()) put(out, k, changed?.has(k) ? changed.get(k) : m[k]);
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

/** The member ObjectMeta's resourceVersion is (the slot goStorageForm leaves). */
let rvMember: Member | undefined;

/**
 * `v` ordered as `plan`, or IMPURE (see Walk). `rvSlot` (a kind's metadata in the stored form):
 * resourceVersion is left out but its key is kept where Go writes it, with the value undefined
 * (JSON.stringify skips it), so setting it later keeps the object in Go's order.
 */
function orderMessage(v: unknown, plan: Plan, w: Walk, rvSlot = false): unknown {
  if (!isObject(v)) return plainValue(v, w);
  if (w.check && !plainObject(v)) return IMPURE;
  const members = plan.members;
  const unknownAt = plan.keys.length;
  const slot = rvSlot ? (rvMember ??= members['resourceVersion']) : undefined;
  // The members kept, built while walking when every member is copied (or the slot goes in),
  // else from the first member that changes or is left out (the ones before it copied then).
  let kept: Json | undefined = w.copy || slot !== undefined ? {} : undefined;
  let slotPending = slot !== undefined;
  let inOrder = true;
  let last = -1;
  let filled = 0;
  /** Bit p: the declared member at position p (below 31) is kept. */
  let seen = 0;
  for (const k in v) {
    const m = members[k];
    const value = v[k];
    let at: number;
    let o: unknown;
    if (m === undefined) {
      // A member the declaration does not know: after the declared ones.
      at = unknownAt;
      o = w.check || w.copy ? plainValue(value, w) : value;
    } else {
      if (m === slot) continue;
      if (m.omit !== undefined && omitted(value, m.omit)) {
        if (kept === undefined) kept = keptBefore(v, k);
        continue;
      }
      if (m.filled) filled++;
      at = m.position;
      if (at < 31) seen |= 1 << at;
      const c = m.child;
      if (c === undefined) o = w.check || w.copy ? plainValue(value, w) : value;
      else if (m.objectMeta && w.check) o = orderMessage(value, c.kind === 'message' ? c.plan() : plan, w, true);
      else o = orderChild(value, c, w);
    }
    if (o === IMPURE) return IMPURE;
    if (at < last) inOrder = false;
    else last = at;
    if (kept === undefined && o !== value) kept = keptBefore(v, k);
    if (kept !== undefined) {
      if (slotPending && at > slot!.position) { kept['resourceVersion'] = undefined; slotPending = false; }
      put(kept, k, o);
    }
  }
  const missing = filled < plan.fill.size;
  if (inOrder && !missing) {
    if (slotPending) kept!['resourceVersion'] = undefined;
    return kept ?? v;
  }
  return inPlanOrder(kept ?? v, plan, missing, slot !== undefined, seen);
}

/** A new object with `v`'s members before `k` (none of them changed or left out). */
function keptBefore(v: Json, k: string): Json {
  const out: Json = {};
  for (const k2 in v) {
    if (k2 === k) break;
    put(out, k2, v[k2]);
  }
  return out;
}

/**
 * `src`'s members (each already in order) in Go's order: declared ones first, with Go's zero
 * values for missing ones, then the others. `seen` tells which of the first 31 declared members
 * `src` has (bit p for position p); later ones are looked up.
 */
function inPlanOrder(src: Json, plan: Plan, missing: boolean, rvSlot: boolean, seen: number): Json {
  const keys = plan.keys;
  let out: Json;
  let p = 0;
  if (plan.topLevel && (seen & 3) === 3) {
    // A kind's object: kind and apiVersion in a literal (no store per member for the common pair).
    out = { kind: src['kind'], apiVersion: src['apiVersion'] };
    p = 2;
  } else out = {};
  for (; p < keys.length; p++) {
    const k = keys[p]!;
    if (p < 31 ? (seen >>> p) & 1 : Object.prototype.hasOwnProperty.call(src, k)) put(out, k, src[k]);
    else if (rvSlot && k === 'resourceVersion') out[k] = undefined;
    else if (missing) {
      const z = plan.fill.get(k);
      if (z) out[k] = z();
    }
  }
  for (const k in src) if (plan.members[k] === undefined) put(out, k, src[k]);
  return out;
}

/** A value that may be an API object (found by kind and apiVersion) or anything else. */
function orderAny(v: unknown, w: Walk): unknown {
  if (!isObject(v)) return plainValue(v, w);
  const kind = v['kind'];
  const apiVersion = v['apiVersion'];
  if (typeof kind !== 'string' || typeof apiVersion !== 'string') return plainValue(v, w);
  const decl = messageForObject(apiVersion, kind);
  return decl ? orderMessage(v, planFor(decl.name, true), w) : plainValue(v, w);
}

/**
 * An API object (or any JSON value holding one) in the order Kubernetes' encoder writes it:
 * the value itself when already in order or not a built-in kind, else an ordered copy (shallow
 * where parts are already in order). Lists and embedded objects are found by kind and apiVersion.
 */
export function goOrder(v: unknown): unknown {
  return orderAny(v, ORDER);
}

/**
 * The form in which a built-in kind's object is stored (resource-store.ts): Go's order as
 * goOrder, metadata.resourceVersion left out with its key kept in place (value undefined, which
 * JSON.stringify skips; the store sets it on the decoded copy without moving it), and exactly
 * what decoding its JSON text gives back: `copy` makes it a fresh object sharing nothing with
 * `obj` (for a caller that keeps `obj`), else parts already in order are shared. undefined when
 * a JSON round trip would change the object (undefined members, NaN, class instances ...), when
 * `obj` is no built-in kind (custom resources keep their order) or has no metadata object.
 */
export function goStorageForm(obj: unknown, copy: boolean): Json | undefined {
  if (!isObject(obj) || !isObject(obj['metadata'])) return undefined;
  const kind = obj['kind'];
  const apiVersion = obj['apiVersion'];
  if (typeof kind !== 'string' || typeof apiVersion !== 'string') return undefined;
  const decl = messageForObject(apiVersion, kind);
  if (!decl) return undefined;
  const out = orderMessage(obj, planFor(decl.name, true), copy ? STORE_COPIED : STORE_ADOPTED);
  return out === IMPURE || !isObject(out) ? undefined : out;
}

/** `v` ordered as the message `messageName` (a value without kind and apiVersion of its own). */
export function goOrderAs(messageName: string, v: unknown): unknown {
  return orderMessage(v, planFor(messageName, false), ORDER);
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
  return decl ? orderMessage(v, planFor(decl.name, true), ORDER) : v;
}

/**
 * Whether two values of message `messageName` (or two lists of it) are the same to Kubernetes:
 * equal in Go's form, so key order, omitted empty members and filled zero members do not count
 * (Go's semantic equality of typed values). For comparing what a controller computed with what
 * the store holds, which is in Go's form.
 */
export function sameInGoForm(messageName: string, a: unknown, b: unknown): boolean {
  const plan = planFor(messageName, false);
  const form = (v: unknown): string => JSON.stringify(Array.isArray(v) ? v.map((e) => orderMessage(e, plan, ORDER)) : orderMessage(v ?? {}, plan, ORDER));
  return form(a) === form(b);
}

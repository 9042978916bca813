/**
 * Strict field validation of a decoded request body against the schema declarations: unknown
 * fields, duplicate JSON keys (found in the raw text, since JSON.parse keeps the last value)
 * and values of the wrong JSON type, each reported by its JSON path ('spec.containers[0].bogus',
 * without a leading dot, as Kubernetes words them). `fieldValidationOutcome` turns a result into
 * what the server does for fieldValidation=Strict|Warn|Ignore.
 */
import { ApiError, type FieldError, type StatusCause } from '../meta/status.js';
import { SPECIAL_MESSAGES, type FieldDecl, type MessageDecl, type SchemaRegistry, type TypeRef } from '../schema/types.js';
import { isListWrapper } from '../schema/registry.js';

export interface StrictCheckResult {
  /** Unknown field paths, e.g. 'spec.foo', 'spec.containers[0].bogus'. */
  unknown: string[];
  /** Paths of keys given more than once in one JSON object, e.g. 'metadata.name'. */
  duplicate: string[];
  /** Values of the wrong JSON type (always an error, whatever fieldValidation says). */
  typeErrors: FieldError[];
  /** Kubernetes' wording of every unknown and duplicate field, in document order. */
  messages: string[];
}

const META = 'k8s.io.apimachinery.pkg.apis.meta.v1';
const TYPE_META_HOLDERS = new Set([`${META}.ObjectMeta`, `${META}.ListMeta`]);
const MAX_REPORTED = 100;

function jsonKind(v: unknown): string {
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'boolean') return 'bool';
  return typeof v === 'object' ? 'object' : typeof v;
}

function shortName(messageName: string): { pkg: string; name: string } {
  const parts = messageName.split('.');
  return { name: parts[parts.length - 1]!, pkg: parts[parts.length - 2] ?? '' };
}

const GO_SCALARS: Record<string, string> = {
  string: 'string', bool: 'bool', int32: 'int32', int64: 'int64', uint32: 'uint32', uint64: 'uint64',
  double: 'float64', float: 'float32', bytes: '[]uint8',
};

function goType(t: TypeRef, f?: FieldDecl): string {
  let base: string;
  if ('scalar' in t) base = GO_SCALARS[t.scalar]!;
  else if (isListWrapper(t.message)) base = '[]string';
  else { const s = shortName(t.message); base = `${s.pkg}.${s.name}`; }
  if (f?.map) return `map[string]${base}`;
  if (f?.repeated) return `[]${base}`;
  return base;
}

function join(path: string, key: string): string {
  return path ? `${path}.${key}` : key;
}

/** What the checker needs per message, computed once per (registry, message): decls are static. */
interface MessageInfo {
  readonly fields: Map<string, FieldDecl>;
  readonly goStruct: string;
  readonly typeMeta: boolean;
}

const infoCache = new WeakMap<SchemaRegistry, WeakMap<MessageDecl, MessageInfo>>();

function messageInfo(reg: SchemaRegistry, m: MessageDecl): MessageInfo {
  let perReg = infoCache.get(reg);
  if (!perReg) infoCache.set(reg, perReg = new WeakMap());
  let info = perReg.get(m);
  if (!info) {
    const fields = fieldsOf(reg, m);
    info = { fields, goStruct: shortName(m.name).name, typeMeta: hasTypeMeta(m, reg, fields) };
    perReg.set(m, info);
  }
  return info;
}

/** The message's JSON fields by name, inline members flattened (the first declaration wins). */
function fieldsOf(reg: SchemaRegistry, m: MessageDecl): Map<string, FieldDecl> {
  const out = new Map<string, FieldDecl>();
  const add = (decl: MessageDecl): void => {
    for (const f of decl.fields) {
      if (f.inline && 'message' in f.type && !SPECIAL_MESSAGES[f.type.message]) {
        const inner = reg.message(f.type.message);
        if (inner) { add(inner); continue; }
      }
      if (!out.has(f.name)) out.set(f.name, f);
    }
  };
  add(m);
  return out;
}

/**
 * Walks a decoded object against its message. Paths are built only where they are reported or
 * descended into: most values are scalars that pass, and a string per key would dominate.
 */
class Checker {
  readonly unknown: string[] = [];
  readonly typeErrors: FieldError[] = [];
  /**
   * Keys of every object in the checked value, counted during the walk (subtrees the walk does
   * not enter are counted apart), so the duplicate-key test needs no second walk.
   */
  keys = 0;
  /** With `prune`, unknown fields are deleted from the checked object as they are found. */
  constructor(private readonly reg: SchemaRegistry, private readonly prune = false) {}

  private typeError(path: string, value: unknown, goStruct: string, want: string): void {
    if (this.typeErrors.length >= MAX_REPORTED) return;
    const what = typeof value === 'number' && !Number.isInteger(value) ? `number ${value}` : jsonKind(value);
    this.typeErrors.push({
      field: path, type: 'FieldValueTypeInvalid',
      message: `json: cannot unmarshal ${what} into Go struct field ${goStruct}.${path} of type ${want}`,
    } as FieldError);
  }

  /** Checks one value of a field's element type (not the list/map around it). */
  private value(v: unknown, t: TypeRef, path: string, goStruct: string, f: FieldDecl | undefined): void {
    if (v === null) return;
    if ('scalar' in t) {
      const s = t.scalar;
      const ok = s === 'string' || s === 'bytes' ? typeof v === 'string'
        : s === 'bool' ? typeof v === 'boolean'
        : s === 'double' || s === 'float' ? typeof v === 'number'
        : typeof v === 'number' && Number.isInteger(v);
      if (!ok) { this.typeError(path, v, goStruct, goType(t)); this.keys += countObjectKeys(v); }
      return;
    }
    const name = t.message;
    const special = SPECIAL_MESSAGES[name];
    if (special) {
      const ok = special === 'Quantity' || special === 'IntOrString' ? typeof v === 'string' || typeof v === 'number'
        : special === 'Time' || special === 'MicroTime' || special === 'Duration' ? typeof v === 'string'
        : special === 'RawExtension' || special === 'FieldsV1' ? typeof v === 'object'
        : true;
      if (!ok) this.typeError(path, v, goStruct, goType(t));
      this.keys += countObjectKeys(v);
      return;
    }
    if (isListWrapper(name)) {
      this.keys += countObjectKeys(v);
      if (!Array.isArray(v)) { this.typeError(path, v, goStruct, '[]string'); return; }
      v.forEach((x, i) => { if (x !== null && typeof x !== 'string') this.typeError(`${path}[${i}]`, x, goStruct, 'string'); });
      return;
    }
    const msg = this.reg.message(name);
    if (!msg) { this.keys += countObjectKeys(v); return; } // a type the schema does not describe: nothing to check
    if (typeof v !== 'object' || Array.isArray(v)) {
      this.typeError(path, v, goStruct, goType(t, f && !f.repeated && !f.map ? f : undefined));
      this.keys += countObjectKeys(v);
      return;
    }
    this.object(v as Record<string, unknown>, msg, path);
  }

  /** A scalar value that passes needs no path; anything else gets the full check. */
  private static scalarOk(v: unknown, t: TypeRef): boolean {
    if (!('scalar' in t)) return false;
    const s = t.scalar;
    return s === 'string' ? typeof v === 'string'
      : s === 'bool' ? typeof v === 'boolean'
      : s === 'int32' || s === 'int64' ? typeof v === 'number' && Number.isInteger(v)
      : false;
  }

  object(o: Record<string, unknown>, m: MessageDecl, path: string): void {
    const { fields, goStruct, typeMeta } = messageInfo(this.reg, m);
    // Object.keys (own keys, in for-in order) walks a parsed object faster than for-in with an
    // own-property test.
    const ks = Object.keys(o);
    this.keys += ks.length;
    for (let ki = 0; ki < ks.length; ki++) {
      const k = ks[ki]!;
      const v = o[k];
      const f = fields.get(k);
      if (!f) {
        this.keys += countObjectKeys(v);
        if (typeMeta && (k === 'apiVersion' || k === 'kind')) {
          if (v !== null && typeof v !== 'string') this.typeError(join(path, k), v, goStruct, 'string');
          continue;
        }
        if (this.unknown.length < MAX_REPORTED) this.unknown.push(join(path, k));
        if (this.prune) delete o[k];
        continue;
      }
      if (v === null) continue;
      if (f.map) {
        if (typeof v !== 'object' || Array.isArray(v)) { this.typeError(join(path, k), v, goStruct, goType(f.type, f)); this.keys += countObjectKeys(v); continue; }
        const mo = v as Record<string, unknown>;
        const mks = Object.keys(mo);
        this.keys += mks.length;
        for (let mi = 0; mi < mks.length; mi++) {
          const mk = mks[mi]!;
          const mv = mo[mk];
          if (mv === null || Checker.scalarOk(mv, f.type)) continue;
          this.value(mv, f.type, join(join(path, k), mk), goStruct, f);
        }
      } else if (f.repeated && !('message' in f.type && isListWrapper(f.type.message))) {
        if (!Array.isArray(v)) {
          // Go decodes a base64 string into []byte; a repeated bytes field is a list of strings.
          this.typeError(join(path, k), v, goStruct, goType(f.type, f));
          this.keys += countObjectKeys(v);
          continue;
        }
        for (let i = 0; i < v.length; i++) {
          const x: unknown = v[i];
          if (x === null || Checker.scalarOk(x, f.type)) continue;
          this.value(x, f.type, `${join(path, k)}[${i}]`, goStruct, f);
        }
      } else if (!Checker.scalarOk(v, f.type)) {
        this.value(v, f.type, join(path, k), goStruct, f);
      }
    }
  }
}

/** Whether apiVersion/kind belong in the message's JSON (Go's inline TypeMeta). */
function hasTypeMeta(m: MessageDecl, reg: SchemaRegistry, fields: ReadonlyMap<string, FieldDecl>): boolean {
  if (m.gvk?.length) return true;
  const md = fields.get('metadata');
  if (md && 'message' in md.type && TYPE_META_HOLDERS.has(md.type.message)) return true;
  return reg.message(m.name)?.gvk?.length ? true : false;
}

/**
 * Scans raw JSON text for keys repeated within one object. Returns each duplicate's path and
 * the offset of every key path's first occurrence (to report in document order).
 */
export function scanJsonKeys(raw: string): { duplicates: { path: string; at: number }[]; firstAt: Map<string, number> } {
  type Frame = { kind: 'obj'; path: string; keys: Set<string> } | { kind: 'arr'; path: string; index: number };
  const stack: Frame[] = [];
  const duplicates: { path: string; at: number }[] = [];
  const firstAt = new Map<string, number>();
  let pendingKey: string | undefined; // the key whose value comes next
  let expectKey = false;
  const valuePath = (): string => {
    const top = stack[stack.length - 1];
    if (!top) return '';
    if (top.kind === 'arr') return `${top.path}[${top.index}]`;
    return join(top.path, pendingKey ?? '');
  };
  const afterValue = (): void => {
    const top = stack[stack.length - 1];
    if (top?.kind === 'arr') top.index++;
    pendingKey = undefined;
  };
  let i = 0;
  const n = raw.length;
  while (i < n) {
    const c = raw[i]!;
    if (c === '"') {
      const start = i;
      let j = i + 1;
      while (j < n && raw[j] !== '"') j += raw[j] === '\\' ? 2 : 1;
      const text = raw.slice(i, j + 1);
      i = j + 1;
      const top = stack[stack.length - 1];
      if (expectKey && top?.kind === 'obj') {
        let key: string;
        try { key = JSON.parse(text) as string; } catch { key = text.slice(1, -1); }
        const p = join(top.path, key);
        if (top.keys.has(key)) duplicates.push({ path: p, at: start });
        else { top.keys.add(key); if (!firstAt.has(p)) firstAt.set(p, start); }
        pendingKey = key;
        expectKey = false;
      } else {
        afterValue();
      }
      continue;
    }
    if (c === '{' || c === '[') {
      const p = valuePath();
      stack.push(c === '{' ? { kind: 'obj', path: p, keys: new Set() } : { kind: 'arr', path: p, index: 0 });
      expectKey = c === '{';
      pendingKey = undefined;
      i++;
      continue;
    }
    if (c === '}' || c === ']') {
      stack.pop();
      afterValue();
      expectKey = false;
      i++;
      continue;
    }
    if (c === ',') {
      expectKey = stack[stack.length - 1]?.kind === 'obj';
      i++;
      continue;
    }
    if (c === ':' || c === ' ' || c === '\n' || c === '\r' || c === '\t') { i++; continue; }
    // A literal (number, true, false, null).
    while (i < n && !',}] \n\r\t'.includes(raw[i]!)) i++;
    afterValue();
  }
  return { duplicates, firstAt };
}

/**
 * The number of object keys in JSON text: strings followed by ':' (no value string can be, in
 * valid JSON). One pass with charCodeAt (a short string costs a few steps, not the calls of an
 * indexOf); a long string's end is found with indexOf, so long values still cost little.
 */
export function countJsonKeys(raw: string): number {
  let count = 0;
  const n = raw.length;
  let i = 0;
  while (i < n) {
    if (raw.charCodeAt(i) !== 0x22) { i++; continue; }
    // A string from i: find its closing quote (one not escaped by a backslash).
    let j = i + 1;
    const scanUpTo = Math.min(n, j + LONG_STRING);
    let c = 0;
    while (j < scanUpTo && (c = raw.charCodeAt(j)) !== 0x22) j += c === 0x5c ? 2 : 1;
    if (j >= scanUpTo && j < n) j = closingQuote(raw, j);
    if (j >= n || j < 0) return count; // unterminated: not valid JSON, nothing more to count
    let k = j + 1;
    c = raw.charCodeAt(k);
    while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = raw.charCodeAt(++k);
    if (c === 0x3a) count++;
    i = k;
  }
  return count;
}

/** Past this many characters a string's end is looked for with indexOf. */
const LONG_STRING = 64;

/** The index of the quote closing a string that is still open at `from` (-1 when none). */
function closingQuote(raw: string, from: number): number {
  // `from` may sit right after a backslash that escapes raw[from]: step back to see.
  let j = raw.indexOf('"', from);
  while (j > 0) {
    let b = 0;
    for (let k = j - 1; raw.charCodeAt(k) === 0x5c; k--) b++;
    if ((b & 1) === 0) return j;
    j = raw.indexOf('"', j + 1);
  }
  return -1;
}

/** The number of keys of every object inside a decoded JSON value. */
function countObjectKeys(v: unknown): number {
  if (typeof v !== 'object' || v === null) return 0;
  let n = 0;
  if (Array.isArray(v)) {
    for (const x of v) n += countObjectKeys(x);
    return n;
  }
  const o = v as Record<string, unknown>;
  for (const k in o) {
    if (!Object.prototype.hasOwnProperty.call(o, k)) continue;
    n += 1 + countObjectKeys(o[k]);
  }
  return n;
}

/** The object keys the checker's walk counts for `obj` read as `msg` (tests: it must equal countObjectKeys). */
export function checkedKeyCount(obj: Record<string, unknown>, msg: MessageDecl, reg: SchemaRegistry): { walked: number; counted: number } {
  const checker = new Checker(reg);
  checker.object(obj, msg, '');
  return { walked: checker.keys, counted: countObjectKeys(obj) };
}

/**
 * Unknown fields, duplicate keys and wrong JSON types of `obj` read as message `msg`.
 * `rawJson`, when given, is the text `obj` was decoded from (duplicate keys are looked for in it).
 * `prune`: unknown fields are also deleted from `obj` (as decoding into Go's typed structs drops
 * them; all of them, beyond the 100 reported).
 */
export function checkFields(obj: unknown, msg: MessageDecl, reg: SchemaRegistry, opts: { rawJson?: Buffer | string; prune?: boolean } = {}): StrictCheckResult {
  const checker = new Checker(reg, opts.prune === true);
  if (typeof obj === 'object' && obj !== null && !Array.isArray(obj)) checker.object(obj as Record<string, unknown>, msg, '');
  let duplicates: { path: string; at: number }[] = [];
  let firstAt = new Map<string, number>();
  const raw = opts.rawJson === undefined ? '' : typeof opts.rawJson === 'string' ? opts.rawJson : opts.rawJson.toString('utf8');
  // The full scan (paths of every key) is only needed when something is to be reported: when
  // the text holds more keys than the decoded object (JSON.parse keeps one value per repeated
  // key), or to order unknown-field messages by their place in the text.
  if (/^\s*\{/.test(raw) && (checker.unknown.length > 0 || countJsonKeys(raw) !== checker.keys)) {
    ({ duplicates, firstAt } = scanJsonKeys(raw));
  }
  if (checker.unknown.length === 0 && duplicates.length === 0) {
    return { unknown: checker.unknown, duplicate: [], typeErrors: checker.typeErrors, messages: [] };
  }
  // A key both unknown and repeated is reported once, as unknown (as Kubernetes does for typed
  // objects); so is anything repeated inside an unknown field.
  const unknownSet = new Set(checker.unknown);
  const underUnknown = (p: string): boolean => {
    for (let cut = p.length; cut > 0; cut = Math.max(p.lastIndexOf('.', cut - 1), p.lastIndexOf('[', cut - 1))) {
      if (unknownSet.has(p.slice(0, cut))) return true;
    }
    return false;
  };
  duplicates = duplicates.filter((d) => !underUnknown(d.path));
  const ordered = [
    ...checker.unknown.map((p, i) => ({ at: firstAt.get(p) ?? Number.MAX_SAFE_INTEGER - MAX_REPORTED + i, text: `unknown field ${goQuote(p)}` })),
    ...duplicates.map((d) => ({ at: d.at, text: `duplicate field ${goQuote(d.path)}` })),
  ].sort((a, b) => a.at - b.at);
  return {
    unknown: checker.unknown,
    duplicate: duplicates.map((d) => d.path),
    typeErrors: checker.typeErrors,
    messages: ordered.map((o) => o.text),
  };
}

/** Characters Go's strconv.IsPrint rejects (besides what is escaped anyway): controls, separators but the space, format and unassigned code points, lone surrogates. */
const NOT_PRINTABLE = /[^\p{L}\p{M}\p{N}\p{P}\p{S} ]/u;
const GO_ESCAPES: Record<string, string> = { '\u0007': '\\a', '\b': '\\b', '\f': '\\f', '\n': '\\n', '\r': '\\r', '\t': '\\t', '\v': '\\v', '"': '\\"', '\\': '\\\\' };

/**
 * A field path quoted as Go's strconv.Quote does (Kubernetes' strict decoding errors quote
 * paths so): `"` and `\` escaped, printable characters as they are, the rest as \n, \xNN, \uNNNN
 * or \UNNNNNNNN; a lone surrogate (Go's decoder never makes one) as U+FFFD.
 */
export function goQuote(text: string): string {
  // eslint-disable-next-line no-control-regex
  if (!/["\\\u0000-\u001f\u007f-\u009f]/.test(text) && !NOT_PRINTABLE.test(text)) return `"${text}"`;
  let out = '"';
  for (let ch of text) {
    if (/^[\ud800-\udfff]$/.test(ch)) ch = '\ufffd';
    const esc = GO_ESCAPES[ch];
    if (esc !== undefined) { out += esc; continue; }
    if (!NOT_PRINTABLE.test(ch)) { out += ch; continue; }
    const cp = ch.codePointAt(0)!;
    out += cp < 0x80 ? `\\x${cp.toString(16).padStart(2, '0')}` : cp < 0x10000 ? `\\u${cp.toString(16).padStart(4, '0')}` : `\\U${cp.toString(16).padStart(8, '0')}`;
  }
  return `${out}"`;
}

export type FieldValidationMode = 'Strict' | 'Warn' | 'Ignore';

/**
 * What the server does with a check result. Wrong types are a 400 in every mode (Kubernetes
 * fails to decode such a body); Strict turns unknown/duplicate fields into a 400; Warn returns
 * them as warning texts (for `Warning: 299 - "..."` headers); Ignore drops them.
 * `what` names the object for the error message: 'Pod' and 'v1' give
 * `Pod in version "v1" cannot be handled as a Pod: ...`.
 */
export function fieldValidationOutcome(mode: FieldValidationMode, result: StrictCheckResult, what: { kind: string; version: string }): { warnings: string[] } {
  const prefix = `${what.kind} in version "${what.version}" cannot be handled as a ${what.kind}: `;
  if (result.typeErrors.length) {
    const causes: StatusCause[] = result.typeErrors.map((e) => ({ reason: e.type, message: e.message, field: e.field }));
    throw new ApiError(400, 'BadRequest', prefix + result.typeErrors[0]!.message, { causes });
  }
  if (mode === 'Ignore' || !result.messages.length) return { warnings: [] };
  if (mode === 'Strict') throw new ApiError(400, 'BadRequest', `${prefix}strict decoding error: ${result.messages.join(', ')}`, {});
  return { warnings: [...result.messages] };
}

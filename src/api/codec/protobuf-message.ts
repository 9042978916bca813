/**
 * Bare protobuf messages <-> the JSON form of Kubernetes objects, driven by the schema
 * registry through per-message plans (protobuf-plan.ts). No envelope here; see protobuf.ts.
 *
 * Writing follows Go's generated marshalers: ascending field numbers; non-optional scalars,
 * strings and messages written even when zero (an absent non-optional message is written as
 * its zero value); optional (Go pointer) fields only when set; empty lists, maps and nil byte
 * slices omitted; map entries sorted by key; lists never packed.
 *
 * Reading accepts packed and unpacked lists, skips unknown fields (as Go drops them), keeps
 * optional fields whenever present (their zero is meaningful, e.g. replicas: 0) and drops
 * non-optional scalars holding their zero value as `omitempty` does, except the fields Go's
 * JSON always writes (emitEmpty: ContainerStatus.ready, SubjectAccessReviewStatus.allowed).
 *
 * JSON fields the schema does not declare are NOT written: they are lost on the protobuf path.
 * That is why objects are stored as JSON and protobuf is only spoken at the HTTP edge.
 */
import protobuf from 'protobufjs/minimal.js';
import { errors } from '../meta/status.js';
import { type FieldPlan, Kind, type MessagePlan, messagePlan, Scalar, subPlan, WIRE_LEN, wireOfScalar, zeroOf } from './protobuf-plan.js';
import { num, readSpecial, toNumber, writeSpecial } from './protobuf-special.js';

type Json = Record<string, unknown>;
type Writer = protobuf.Writer;
type Reader = protobuf.Reader;

/** Set by protobuf.ts: decodes an enveloped object found inside a RawExtension. */
let envelopedDecoder: ((bytes: Buffer) => unknown) | undefined;
export function setEnvelopedDecoder(fn: (bytes: Buffer) => unknown): void {
  envelopedDecoder = fn;
}

/** Test and diagnostics hook: told about every protobuf field the schema does not declare. */
let unknownFieldObserver: ((message: string, number: number, wireType: number) => void) | undefined;
export function setUnknownFieldObserver(fn: ((message: string, number: number, wireType: number) => void) | undefined): void {
  unknownFieldObserver = fn;
}

// ---------------------------------------------------------------- write

function writeFields(w: Writer, plan: MessagePlan, o: Json | undefined): void {
  for (const f of plan.fields) {
    if (f.inline) {
      // Embedded Go struct: its members sit in this same JSON object.
      w.uint32(f.tag).fork();
      writeFields(w, subPlan(f), o);
      w.ldelim();
      continue;
    }
    const v = o === undefined ? undefined : o[f.name];
    if (f.map) {
      if (v === null || typeof v !== 'object') continue;
      const m = v as Json;
      for (const k of Object.keys(m).sort()) {
        w.uint32(tagLen(f.number)).fork();
        w.uint32(0x0a).string(k);
        writeValue(w, f, f.mapValueTag, m[k], false);
        w.ldelim();
      }
      continue;
    }
    if (f.repeated) {
      if (!Array.isArray(v)) continue;
      for (const el of v) writeValue(w, f, f.tag, el, false);
      continue;
    }
    if (v === undefined || v === null) {
      if (f.optional) continue;
      if (f.kind === Kind.Scalar && f.scalar === Scalar.Bytes) continue; // a nil []byte is not written
    }
    writeValue(w, f, f.tag, v, f.optional);
  }
}

function tagLen(number: number): number {
  return ((number << 3) | WIRE_LEN) >>> 0;
}

function asObject(v: unknown): Json | undefined {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? v as Json : undefined;
}

function writeValue(w: Writer, f: FieldPlan, tag: number, v: unknown, optional: boolean): void {
  switch (f.kind) {
    case Kind.Scalar:
      w.uint32(tag);
      writeScalar(w, f.scalar, v);
      return;
    case Kind.Special:
      w.uint32(tag).fork();
      writeSpecial(w, f.special!, v, optional);
      w.ldelim();
      return;
    case Kind.Wrapper: {
      w.uint32(tag).fork();
      const items = subPlan(f).fields[0];
      if (Array.isArray(v)) for (const el of v) writeValue(w, items, items.tag, el, false);
      w.ldelim();
      return;
    }
    case Kind.Message:
      w.uint32(tag).fork();
      writeFields(w, subPlan(f), asObject(v));
      w.ldelim();
  }
}

function writeScalar(w: Writer, s: Scalar, v: unknown): void {
  switch (s) {
    case Scalar.String: w.string(typeof v === 'string' ? v : v === undefined || v === null ? '' : String(v)); break;
    case Scalar.Bool: w.bool(v === true); break;
    case Scalar.Int32: w.int32(Math.trunc(num(v))); break;
    case Scalar.Uint32: w.uint32(Math.trunc(num(v)) >>> 0); break;
    case Scalar.Int64: w.int64(Math.trunc(num(v))); break;
    case Scalar.Uint64: w.uint64(Math.max(0, Math.trunc(num(v)))); break;
    case Scalar.Double: w.double(num(v)); break;
    case Scalar.Float: w.float(num(v)); break;
    case Scalar.Bytes: w.bytes(typeof v === 'string' ? Buffer.from(v, 'base64') : new Uint8Array(0)); break;
  }
}

// ---------------------------------------------------------------- read

function readFields(r: Reader, end: number, plan: MessagePlan, out: Json): Json {
  const byNumber = plan.byNumber;
  while (r.pos < end) {
    const t = r.uint32();
    const number = t >>> 3, wire = t & 7;
    if (number === 0) throw errors.badRequest(`invalid protobuf field number 0 in ${shortName(plan.name)}`);
    const f = byNumber[number];
    if (f === undefined) { unknownFieldObserver?.(plan.name, number, wire); r.skipType(wire); continue; }
    if (f.map) {
      if (wire !== WIRE_LEN) throw wireMismatch(f, wire);
      const stop = r.uint32() + r.pos;
      let key = '';
      let value: unknown;
      while (r.pos < stop) {
        const et = r.uint32();
        if (et === 0x0a) key = r.string();
        else if (et >>> 3 === 2) value = readValue(r, f, et & 7, true);
        else r.skipType(et & 7);
      }
      const m = (out[f.name] ??= {}) as Json;
      m[key] = value === undefined ? zeroOf(f) : value;
    } else if (f.repeated) {
      const list = (out[f.name] ??= []) as unknown[];
      if (f.kind === Kind.Scalar && wire === WIRE_LEN && f.wire !== WIRE_LEN) {
        const stop = r.uint32() + r.pos; // packed
        while (r.pos < stop) list.push(readScalar(r, f.scalar));
      } else {
        list.push(readValue(r, f, wire, true));
      }
    } else if (f.inline) {
      if (wire !== WIRE_LEN) throw wireMismatch(f, wire);
      const len = r.uint32();
      readFields(r, r.pos + len, subPlan(f), out);
    } else {
      const v = readValue(r, f, wire, f.optional);
      // No `delete` for zero values: it would turn the object into a slow dictionary.
      if (v !== undefined && (f.keepZero || (v !== '' && v !== 0 && v !== false))) out[f.name] = v;
    }
  }
  if (r.pos !== end) throw errors.badRequest(`truncated protobuf message ${shortName(plan.name)}`);
  return out;
}

function shortName(name: string): string {
  return name.slice(name.lastIndexOf('.') + 1);
}

function wireMismatch(f: FieldPlan, wire: number): Error {
  return errors.badRequest(`protobuf wire type ${wire} does not match field ${f.name}`);
}

function readScalar(r: Reader, s: Scalar): unknown {
  switch (s) {
    case Scalar.String: return r.string();
    case Scalar.Bool: return r.bool();
    case Scalar.Int32: return r.int32();
    case Scalar.Uint32: return r.uint32();
    case Scalar.Int64: return toNumber(r.int64());
    case Scalar.Uint64: return toNumber(r.uint64());
    case Scalar.Double: return r.double();
    case Scalar.Float: return r.float();
    case Scalar.Bytes: return Buffer.from(r.bytes()).toString('base64');
  }
}

function readValue(r: Reader, f: FieldPlan, wire: number, keepZero: boolean): unknown {
  if (f.kind === Kind.Scalar) {
    if (wire !== wireOfScalar(f.scalar)) throw wireMismatch(f, wire);
    return readScalar(r, f.scalar);
  }
  if (wire !== WIRE_LEN) throw wireMismatch(f, wire);
  const end = r.uint32() + r.pos;
  if (end > r.len) throw errors.badRequest('truncated protobuf message');
  switch (f.kind) {
    case Kind.Special: return readSpecial(r, end, f.special!, keepZero, decodeRaw);
    case Kind.Wrapper: {
      const plan = subPlan(f);
      return (readFields(r, end, plan, {})[plan.fields[0].name] as unknown[] | undefined) ?? [];
    }
    default: return readFields(r, end, subPlan(f), {});
  }
}

/** RawExtension bytes: an enveloped protobuf object or JSON text. */
function decodeRaw(raw: Buffer): unknown {
  if (raw.length >= 4 && raw[0] === 0x6b && raw[1] === 0x38 && raw[2] === 0x73 && raw[3] === 0x00 && envelopedDecoder) {
    return envelopedDecoder(raw);
  }
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch {
    throw errors.badRequest('embedded object is neither JSON nor an enveloped protobuf object');
  }
}

// ---------------------------------------------------------------- entry points

/** Writes the fields of message `name` from a JSON-form value (no tag or length of its own). */
export function writeMessage(w: Writer, name: string, obj: unknown): void {
  writeFields(w, messagePlan(name), asObject(obj));
}

/** Encodes a JSON-form value as the bare protobuf message `name`. */
export function encodeMessage(name: string, obj: unknown): Buffer {
  const w = protobuf.Writer.create();
  writeMessage(w, name, obj);
  const out = w.finish();
  return Buffer.from(out.buffer, out.byteOffset, out.byteLength);
}

/** Decodes the bare protobuf message `name` into its JSON form. */
export function decodeMessage(name: string, bytes: Uint8Array): Json {
  const r = protobuf.Reader.create(bytes);
  try {
    return readFields(r, r.len, messagePlan(name), {});
  } catch (e) {
    if (e instanceof RangeError || (e instanceof Error && /index out of range|invalid wire type/i.test(e.message))) {
      throw errors.badRequest(`malformed protobuf ${shortName(name)}: ${e.message}`);
    }
    throw e;
  }
}

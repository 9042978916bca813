/**
 * Types whose JSON form differs from their protobuf message (see SpecialType in
 * src/api/schema/types.ts): Time, MicroTime, Duration, Quantity, IntOrString, RawExtension,
 * FieldsV1, JSON. Each is written and read here, inside its own length-delimited message.
 */
import type protobuf from 'protobufjs/minimal.js';
import { formatDurationNs, parseDurationNs } from '../../util/duration.js';
import { errors } from '../meta/status.js';
import type { SpecialType } from '../schema/types.js';

type Writer = protobuf.Writer;
type Reader = protobuf.Reader;

/** A JSON value as a number (numeric strings and booleans accepted, anything else is 0). */
export function num(v: unknown): number {
  if (typeof v === 'number') return Number.isFinite(v) ? v : 0;
  if (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v))) return Number(v);
  if (typeof v === 'boolean') return v ? 1 : 0;
  return 0;
}

/** int64 as a JS number (protobufjs hands out Long objects when the long package is present). */
export function toNumber(v: unknown): number {
  if (typeof v === 'number') return v;
  const l = v as { low: number; high: number; unsigned?: boolean };
  return (l.unsigned ? l.high >>> 0 : l.high) * 4294967296 + (l.low >>> 0);
}

/** RFC 3339 text (any offset, optional fraction) -> seconds and nanoseconds since the epoch. */
function parseTime(v: unknown): { seconds: number; nanos: number } | undefined {
  if (typeof v !== 'string' || v === '') return undefined;
  const ms = Date.parse(v);
  if (Number.isNaN(ms)) throw errors.badRequest(`cannot encode time ${JSON.stringify(v)}: not RFC 3339`);
  const dot = v.indexOf('.');
  let nanos = 0;
  if (dot >= 0) {
    const frac = /^\.(\d+)/.exec(v.slice(dot));
    if (frac) nanos = Number(frac[1].slice(0, 9).padEnd(9, '0'));
  }
  return { seconds: Math.floor(ms / 1000), nanos };
}

/** Writes the body of a special message (the caller writes its tag and length). */
export function writeSpecial(w: Writer, special: SpecialType, v: unknown, optional: boolean): void {
  switch (special) {
    case 'Time': case 'MicroTime': {
      const t = parseTime(v);
      if (!t) return; // the zero time is an empty message
      w.uint32(0x08).int64(t.seconds);
      w.uint32(0x10).int32(special === 'Time' ? 0 : Math.floor(t.nanos / 1000) * 1000);
      return;
    }
    case 'Duration': {
      let ns = 0n;
      if (typeof v === 'string' && v !== '') {
        try { ns = parseDurationNs(v); } catch (e) { throw errors.badRequest(`cannot encode duration ${JSON.stringify(v)}: ${(e as Error).message}`); }
      }
      w.uint32(0x08).int64(ns.toString());
      return;
    }
    case 'Quantity':
      w.uint32(0x0a).string(v === undefined || v === null ? (optional ? '' : '0') : String(v));
      return;
    case 'IntOrString': {
      const isString = typeof v === 'string';
      w.uint32(0x08).int64(isString ? 1 : 0);
      w.uint32(0x10).int32(isString ? 0 : Math.trunc(num(v)));
      w.uint32(0x1a).string(isString ? v : '');
      return;
    }
    case 'RawExtension': case 'FieldsV1': case 'JSON':
      if (v === undefined) return;
      w.uint32(0x0a).bytes(Buffer.from(JSON.stringify(v), 'utf8'));
      return;
  }
}

function formatTime(seconds: number): string {
  const iso = new Date(seconds * 1000).toISOString();
  return `${iso.slice(0, 19)}Z`;
}

function formatMicroTime(seconds: number, nanos: number): string {
  const iso = new Date(seconds * 1000).toISOString();
  return `${iso.slice(0, 19)}.${String(Math.floor(nanos / 1000)).padStart(6, '0')}Z`;
}

/**
 * Reads the body of a special message up to `end`. Zero times and empty raw objects give null
 * when `keepZero` (a pointer that was set) and undefined otherwise.
 */
export function readSpecial(r: Reader, end: number, special: SpecialType, keepZero: boolean,
  decodeRaw: (raw: Buffer) => unknown): unknown {
  let n1 = 0, n2 = 0;
  let b1: Uint8Array | undefined, b3: Uint8Array | undefined;
  while (r.pos < end) {
    const t = r.uint32();
    switch (t) {
      case 0x08: n1 = toNumber(r.int64()); break;
      case 0x10: n2 = toNumber(r.int64()); break;
      case 0x0a: b1 = r.bytes(); break;
      case 0x1a: b3 = r.bytes(); break;
      default: r.skipType(t & 7);
    }
  }
  if (r.pos !== end) throw errors.badRequest('truncated protobuf message');
  const text = (b: Uint8Array | undefined): string => (b ? Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('utf8') : '');
  switch (special) {
    case 'Time': case 'MicroTime':
      if (n1 === 0 && n2 === 0) return keepZero ? null : undefined;
      return special === 'Time' ? formatTime(n1) : formatMicroTime(n1, n2);
    case 'Duration': return formatDurationNs(BigInt(n1));
    case 'Quantity': return text(b1);
    case 'IntOrString': return n1 === 1 ? text(b3) : n2 | 0;
    case 'RawExtension': case 'FieldsV1': case 'JSON':
      if (!b1 || b1.length === 0) return keepZero ? null : undefined;
      return decodeRaw(Buffer.from(b1.buffer, b1.byteOffset, b1.byteLength));
  }
}

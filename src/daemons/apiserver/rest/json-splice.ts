/**
 * Served JSON spliced from stored JSON, without decoding it: the read fast paths' first
 * serialization of an entry (later reads reuse it; see entry-reads.ts).
 *
 * The store writes JSON.stringify of the object without metadata.resourceVersion
 * (ListResult.plainJson). Decoding sets metadata.resourceVersion, which adds it as the last
 * member of metadata, and the served forms only drop or prepend kind and apiVersion; so the
 * served bytes are the stored members, in their order, with those edits. JSON.stringify output
 * is a fixed point of parse + stringify (no whitespace, canonical numbers and escapes), which
 * is what makes the splice byte for byte equal to decode + JSON.stringify.
 *
 * The scanner reads the top-level members up to kind, apiVersion and metadata, and metadata's
 * members, and accepts exactly that canonical form there; anything else (whitespace, no
 * metadata object, a stored resourceVersion) returns undefined and the caller decodes instead.
 * What follows the three (spec and status: most of the bytes) is copied as stored, unscanned:
 * stored values are whole JSON.stringify outputs, which cannot repeat a key.
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const COMMA = 0x2c;
const LBRACE = 0x7b;
const RBRACE = 0x7d;
const LBRACKET = 0x5b;
const RBRACKET = 0x5d;

interface Member {
  /** Offset of the key's opening quote. */
  readonly start: number;
  /** Offset just past the value. */
  readonly end: number;
  /** Offset of the value. */
  readonly value: number;
  readonly key: string | undefined;
}

const WATCHED_KEYS = ['kind', 'apiVersion', 'metadata', 'resourceVersion', 'name', 'generateName', 'namespace', 'selfLink', 'uid'] as const;
/** ObjectMeta's members that Go writes before resourceVersion. */
const BEFORE_RV = new Set<string | undefined>(['name', 'generateName', 'namespace', 'selfLink', 'uid']);
const WATCHED = WATCHED_KEYS.map((k) => Buffer.from(`"${k}"`, 'utf8'));

/** Offset just past the string starting at `i` (a quote), or -1. */
function skipString(b: Buffer, i: number): number {
  for (let j = i + 1; j < b.length; j++) {
    const c = b[j]!;
    if (c === BACKSLASH) { j++; continue; }
    if (c === QUOTE) return j + 1;
  }
  return -1;
}

function hasBackslash(b: Buffer, from: number, to: number): boolean {
  for (let i = from; i < to; i++) if (b[i] === BACKSLASH) return true;
  return false;
}

/** Offset just past the value starting at `i`, or -1. */
function skipValue(b: Buffer, i: number): number {
  const c = b[i];
  if (c === QUOTE) return skipString(b, i);
  if (c === LBRACE || c === LBRACKET) {
    let depth = 0;
    for (let j = i; j < b.length; j++) {
      const d = b[j]!;
      if (d === QUOTE) { j = skipString(b, j); if (j < 0) return -1; j--; continue; }
      if (d === LBRACE || d === LBRACKET) depth++;
      else if (d === RBRACE || d === RBRACKET) { if (--depth === 0) return j + 1; }
    }
    return -1;
  }
  // number, true, false, null: up to the next delimiter
  let j = i;
  while (j < b.length) {
    const d = b[j]!;
    if (d === COMMA || d === RBRACE || d === RBRACKET) break;
    if (d <= 0x20) return -1; // whitespace: not canonical
    j++;
  }
  return j > i ? j : -1;
}

/** Which watched key the string at [start, end) (quotes included) is; compared in JS (no native call per member). */
function keyOf(b: Buffer, start: number, end: number): string | undefined {
  const len = end - start;
  for (let k = 0; k < WATCHED.length; k++) {
    const w = WATCHED[k]!;
    if (w.length !== len) continue;
    let i = 1; // both start with a quote
    while (i < len && b[start + i] === w[i]) i++;
    if (i === len) return WATCHED_KEYS[k];
  }
  return undefined;
}

/**
 * The members of the object starting at `i`, and the offset just past it; undefined if not
 * canonical. With `close` (the offset of the object's closing brace, known for a whole stored
 * value) the scan stops once kind, apiVersion and metadata have all been seen: the members after
 * them are kept as they are, as one member (key undefined) running to that brace, so their bytes
 * (spec and status, most of an object) are never scanned. JSON.stringify writes each key once,
 * so none of the three can come again.
 */
function members(b: Buffer, i: number, close?: number): Members | undefined {
  if (b[i] !== LBRACE) return undefined;
  const list: Member[] = [];
  let metadata: Members | undefined;
  let j = i + 1;
  if (b[j] === RBRACE) return { list, end: j + 1, metadata };
  let seen = 0;
  for (;;) {
    if (b[j] !== QUOTE) return undefined;
    if (seen === 3) {
      list.push({ start: j, end: close!, value: j, key: undefined });
      return { list, end: close! + 1, metadata };
    }
    const keyEnd = skipString(b, j);
    if (keyEnd < 0 || b[keyEnd] !== COLON) return undefined;
    const key = keyOf(b, j, keyEnd);
    let valueEnd: number;
    if (close !== undefined && key === 'metadata') {
      // A whole stored value's metadata is read member by member in the same pass.
      metadata = members(b, keyEnd + 1);
      if (!metadata) return undefined;
      valueEnd = metadata.end;
    } else {
      valueEnd = skipValue(b, keyEnd + 1);
      if (valueEnd < 0) return undefined;
    }
    if (close !== undefined && (key === 'kind' || key === 'apiVersion' || key === 'metadata')) seen++;
    list.push({ start: j, end: valueEnd, value: keyEnd + 1, key });
    const next = b[valueEnd];
    if (next === RBRACE) return { list, end: valueEnd + 1, metadata };
    if (next !== COMMA) return undefined;
    j = valueEnd + 1;
  }
}

interface Members {
  readonly list: Member[];
  /** Offset just past the object. */
  readonly end: number;
  /** A whole stored value's metadata object, read in the same pass (members with `close` only). */
  readonly metadata: Members | undefined;
}

/** A stored object's parts: its top-level members, the metadata member and where resourceVersion goes. */
export interface StoredJson {
  readonly bytes: Buffer;
  readonly members: readonly Member[];
  /** The metadata member. */
  readonly metadata: Member;
  /** True when metadata is `{}` (the resourceVersion then needs no comma before it). */
  readonly metadataEmpty: boolean;
  /**
   * Offset of the first metadata member that Go writes after resourceVersion (the
   * resourceVersion member goes in front of it), or -1 when it goes last.
   */
  readonly rvBefore: number;
  /** The stored apiVersion string, when it is a plain string. */
  readonly apiVersion: string | undefined;
}

/**
 * Scans stored JSON; undefined when it is not the canonical form the splice relies on. The
 * members after kind, apiVersion and metadata are taken as stored (see members).
 */
export function scanStored(bytes: Buffer): StoredJson | undefined {
  const close = bytes.length - 1;
  if (bytes[close] !== RBRACE) return undefined;
  const scanned = members(bytes, 0, close);
  if (!scanned || scanned.end !== bytes.length) return undefined;
  const top = scanned.list;
  let metadata: Member | undefined;
  let apiVersion: string | undefined;
  for (const m of top) {
    if (m.key === 'metadata') metadata = m;
    else if (m.key === 'apiVersion') {
      if (bytes[m.value] !== QUOTE) return undefined; // only a string can be compared for conversion
      // Without escapes the text between the quotes is the string itself.
      apiVersion = hasBackslash(bytes, m.value, m.end)
        ? JSON.parse(bytes.toString('utf8', m.value, m.end)) as string
        : bytes.toString('utf8', m.value + 1, m.end - 1);
    }
  }
  const meta = scanned.metadata;
  if (!metadata || !meta) return undefined;
  let rvBefore = -1;
  for (const m of meta.list) {
    if (m.key === 'resourceVersion') return undefined;
    if (rvBefore < 0 && !BEFORE_RV.has(m.key)) rvBefore = m.start;
  }
  return { bytes, members: top, metadata, metadataEmpty: meta.list.length === 0, apiVersion, rvBefore };
}

/**
 * How to splice one stored object (byte ranges of its stored value), independent of the
 * revision: remembered per entry by the LIST path, which then writes every item straight into
 * the list body. `ranges` holds [start, end) pairs of kept stored bytes; a negative start means
 * "a comma first"; the resourceVersion member goes after the pair ending at `rvAfter`: inside
 * metadata in front of a later member (`"resourceVersion":"N",`), or last in it
 * (`,"resourceVersion":"N"}`, no comma when metadata is empty).
 */
export interface SplicePlan {
  readonly ranges: readonly number[];
  readonly rvAfter: number;
  /** No comma before the resourceVersion member. */
  readonly metadataEmpty: boolean;
  /** The resourceVersion member is followed by a comma, not metadata's closing brace. */
  readonly rvInside: boolean;
  /** Bytes of the spliced form without the resourceVersion text and without a prefix. */
  readonly baseLength: number;
}

/** The splice plan of a scanned object (see spliceServed); `withPrefix` when writeSpliced will get a prefix. */
export function splicePlan(s: StoredJson, withPrefix = false): SplicePlan {
  const ranges: number[] = [];
  let len = 2;
  let first = !withPrefix;
  let rvAfter = -1;
  for (const m of s.members) {
    if (m.key === 'kind' || m.key === 'apiVersion') continue;
    if (m === s.metadata && s.rvBefore >= 0) {
      // Metadata in two ranges, the resourceVersion member written between them.
      if (!first) len += 1;
      ranges.push(first ? m.start : -m.start, s.rvBefore);
      rvAfter = ranges.length - 1;
      ranges.push(s.rvBefore, m.end);
      len += m.end - m.start;
      first = false;
      continue;
    }
    const end = m === s.metadata ? m.end - 1 : m.end;
    const last = ranges.length - 1;
    if (!first && last > 0 && ranges[last] === m.start - 1 && rvAfter !== last) {
      ranges[last] = end; // continues the previous range, its comma included
      len += 1;
    } else {
      if (!first) len += 1; // a comma of our own
      ranges.push(first ? m.start : -m.start, end);
    }
    first = false;
    if (m === s.metadata) rvAfter = ranges.length - 1;
    len += end - m.start;
  }
  const rvInside = s.rvBefore >= 0;
  return { ranges, rvAfter, metadataEmpty: rvInside || s.metadataEmpty, rvInside, baseLength: len };
}

/** The bytes of `"resourceVersion":"`. */
const RV_OPEN = Buffer.from('"resourceVersion":"', 'latin1');

/**
 * Writes `,"resourceVersion":"<revision>"}` (without the comma when metadata is empty) into
 * `out` at `at`, byte by byte: a list writes one per item, and a string for each plus Buffer's
 * write call cost more than the bytes. Returns the offset past it.
 */
function writeRv(plan: SplicePlan, revision: number, out: Buffer, at: number): number {
  if (!plan.metadataEmpty) out[at++] = 0x2c;
  for (let i = 0; i < RV_OPEN.length; i++) out[at++] = RV_OPEN[i]!;
  const end = at + digitCount(revision);
  let r = revision;
  for (let i = end - 1; i >= at; i--) {
    out[i] = 0x30 + (r % 10);
    r = Math.floor(r / 10);
  }
  out[end] = 0x22;
  out[end + 1] = plan.rvInside ? 0x2c : 0x7d;
  return end + 2;
}

/** Decimal digits of a non-negative integer. */
function digitCount(n: number): number {
  let digits = 1;
  for (let r = n; r >= 10; r = Math.floor(r / 10)) digits++;
  return digits;
}

/** `"resourceVersion":""` and the closing `}` of metadata (or the comma after it, inside). */
const RV_FIXED = '"resourceVersion":""}'.length;

/** The length of the spliced form at `revision` (prefix excluded), without building it. */
export function splicedLength(plan: SplicePlan, revision: number): number {
  return plan.baseLength + (plan.metadataEmpty ? 0 : 1) + RV_FIXED + digitCount(revision);
}

/** Writes the spliced form of `bytes` at `revision` into `out` at `at`; returns the offset past it. */
export function writeSpliced(plan: SplicePlan, bytes: Buffer, revision: number, out: Buffer, at: number, prefix?: Buffer): number {
  out[at++] = 0x7b;
  if (prefix) at += prefix.copy(out, at);
  const ranges = plan.ranges;
  for (let i = 0; i < ranges.length; i += 2) {
    const start = ranges[i]!;
    if (start < 0) out[at++] = 0x2c;
    at += bytes.copy(out, at, start < 0 ? -start : start, ranges[i + 1]!);
    if (i + 1 === plan.rvAfter) at = writeRv(plan, revision, out, at);
  }
  out[at++] = 0x7d;
  return at;
}

/**
 * The served JSON of a stored object at `revision`: its members without kind and apiVersion,
 * metadata.resourceVersion appended to metadata, and `prefix` (e.g. `"kind":"Pod","apiVersion":"v1"`)
 * in front when given, and the newline Kubernetes' encoder ends a body with. Returns an exact-size buffer of its own, or with `oneShot` (a body
 * written once and dropped) possibly a slice of Node's shared pool, which is cheaper to get
 * but must not be kept.
 */
export function spliceServed(s: StoredJson, revision: number, prefix?: Buffer, oneShot = false): Buffer {
  const plan = splicePlan(s, prefix !== undefined);
  const size = splicedLength(plan, revision) + (prefix ? prefix.length : 0) + 1;
  const out = oneShot ? Buffer.allocUnsafe(size) : Buffer.allocUnsafeSlow(size);
  out[writeSpliced(plan, s.bytes, revision, out, 0, prefix)] = 0x0a;
  return out;
}

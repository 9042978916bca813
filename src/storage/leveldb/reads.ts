/**
 * Read paths of the LevelDB backend, all against one LevelDB snapshot so a result is
 * consistent: ranges at the current revision (k/ index, values from r/), ranges at a past revision (h/ + r/),
 * and the revision-ordered event scan a watch uses to catch up from the past (r/).
 * See layout.ts for the key spaces.
 */
import type { ClassicLevel } from 'classic-level';
import type { KeyValue, RangeOptions, RangeResult, WatchEvent } from '../interface.js';
import { prefixEnd } from '../interface.js';
import { StorageError } from '../errors.js';
import type { KeyMeta } from './write-ops.js';
import {
  HISTORY_PREFIX, HISTORY_SEP, INDEX_HEADER, INDEX_PREFIX, LOG_PREFIX, META_REV, decodeIndexRecord, decodeLogRecord,
  decodeRev, logKey, parseHistoryKey, parseRevHex, type StoredIndexRecord,
} from './layout.js';

export type Db = ClassicLevel<string, Buffer>;
export type Snapshot = ReturnType<Db['snapshot']>;

/** A key range [start, end); end undefined means "to the end of the key space". */
export interface KeySpan {
  readonly start: string;
  readonly end: string | undefined;
}

export function keySpan(key: string, opts: RangeOptions): KeySpan {
  if (opts.prefix) return { start: key, end: key === '' ? undefined : prefixEnd(key) };
  // etcd's convention: an end of "\0" means every key >= key.
  if (opts.end !== undefined) return { start: key, end: opts.end === '\u0000' ? undefined : opts.end };
  // A single key: keys never contain NUL, so key + NUL is its immediate successor.
  return { start: key, end: key + '\u0000' };
}

/** The upper bound (exclusive) of a key space with the given prefix. */
function spaceEnd(prefix: string): string {
  return prefixEnd(prefix);
}

const CHUNK = 1000;

/**
 * The exclusive h/ bound for keys below `end`. Keys never contain NUL, so for an end with a NUL
 * (like key + NUL, a single key's successor) "below end" means "at most the part before the NUL".
 */
function historyUpperBound(end: string | undefined): string {
  if (end === undefined) return spaceEnd(HISTORY_PREFIX);
  const nul = end.indexOf(HISTORY_SEP);
  if (nul < 0) return HISTORY_PREFIX + end + HISTORY_SEP;
  return HISTORY_PREFIX + end.slice(0, nul) + '\u0001';
}

/** Counts the keys of k/ in the span (keys only). */
async function countIndex(db: Db, snapshot: Snapshot, span: KeySpan): Promise<number> {
  const it = db.keys({
    gte: INDEX_PREFIX + span.start,
    lt: span.end === undefined ? spaceEnd(INDEX_PREFIX) : INDEX_PREFIX + span.end,
    snapshot,
  });
  let n = 0;
  try {
    for (;;) {
      const keys = await it.nextv(CHUNK * 10);
      if (keys.length === 0) return n;
      n += keys.length;
    }
  } finally {
    await it.close();
  }
}

/**
 * Counts the range at the read revision without LevelDB when it can (range-counter.ts), or
 * answers undefined; then the k/ or h/ scan counts.
 */
export type RangeCountFn = () => Promise<number | undefined>;

/** Values already in memory: the backend's value cache (answers only for the exact revision). */
export type CachedValue = (key: string, modRevision: number) => Buffer | undefined;

/**
 * The value of a k/ record: inline (format 1), from `cached`, or from its r/<mod> record, which
 * `logRecs` holds (read under the same snapshot as the k/ record). undefined: the log record is
 * missing (a read without a snapshot raced a compaction).
 */
function pointedValue(key: string, r: StoredIndexRecord, logRec: Buffer | undefined): Buffer | undefined {
  if (r.inline !== undefined) return r.inline;
  if (logRec === undefined) return undefined;
  const l = decodeLogRecord(logRec);
  if (l.type !== 'PUT' || l.key !== key) {
    throw new StorageError('Internal', `revision log entry ${r.modRevision} is ${l.type} ${l.key}, but the index of ${key} points at it`);
  }
  return l.value;
}

/**
 * Resolves the values of k/ records (key, record) read under `snapshot` (or under one implicit
 * snapshot: then a missing log record means a concurrent compaction, and undefined is returned
 * for the caller to retry).
 */
export async function resolveValues(
  db: Db, snapshot: Snapshot | undefined, recs: readonly (readonly [string, StoredIndexRecord])[], cached?: CachedValue,
): Promise<(Buffer | undefined)[]> {
  const out: (Buffer | undefined)[] = new Array(recs.length);
  const need: number[] = [];
  for (let i = 0; i < recs.length; i++) {
    const [key, r] = recs[i]!;
    const v = r.inline ?? cached?.(key, r.modRevision);
    if (v !== undefined) out[i] = v; else need.push(i);
  }
  if (need.length === 0) return out;
  const logs = await db.getMany(need.map((i) => logKey(recs[i]![1].modRevision)), snapshot ? { snapshot } : {});
  for (let j = 0; j < need.length; j++) {
    const i = need[j]!;
    const [key, r] = recs[i]!;
    const v = pointedValue(key, r, logs[j]);
    if (v === undefined && snapshot) throw new StorageError('Internal', `revision log entry ${r.modRevision} of ${key} is missing`);
    out[i] = v;
  }
  return out;
}

/** The value of the PUT of `key` stamped `rev` (undefined when its r/ record is gone). */
export async function readPut(db: Db, key: string, rev: number): Promise<Buffer | undefined> {
  const b = await db.get(logKey(rev));
  if (b === undefined) return undefined;
  const l = decodeLogRecord(b);
  if (l.type !== 'PUT' || l.key !== key) {
    throw new StorageError('Internal', `revision log entry ${rev} is ${l.type} ${l.key}, but the index of ${key} points at it`, { key });
  }
  return l.value;
}

/**
 * One key at the stored revision: k/ and m/rev under one implicit snapshot, then the value k/
 * points at. Without an explicit snapshot a compaction may remove that r/ record in between
 * (only once the key has moved on): then the read is repeated under a snapshot.
 */
export async function getCurrent(db: Db, key: string, cached?: CachedValue): Promise<{ kv: KeyValue | undefined; revision: number }> {
  for (const pinned of [false, true]) {
    const snapshot = pinned ? db.snapshot() : undefined;
    try {
      const [b, rev] = await db.getMany([INDEX_PREFIX + key, META_REV], snapshot ? { snapshot } : {});
      const revision = decodeRev(rev) || 1;
      if (b === undefined) return { kv: undefined, revision };
      const r = decodeIndexRecord(b);
      const [value] = await resolveValues(db, snapshot, [[key, r]], cached);
      if (value !== undefined) return { kv: { key, value, createRevision: r.createRevision, modRevision: r.modRevision, version: r.version }, revision };
    } finally {
      await snapshot?.close().catch(() => undefined);
    }
  }
  throw new StorageError('Internal', `${key}: its value is missing under a snapshot`, { key });
}

/** A range at the snapshot's own (current) revision, from the k/ index and the r/ values it points at. */
export async function rangeCurrent(
  db: Db, snapshot: Snapshot, span: KeySpan, opts: RangeOptions, revision: number, countFn?: RangeCountFn, cached?: CachedValue,
): Promise<RangeResult> {
  if (span.end !== undefined && span.end <= span.start) return { kvs: [], more: false, count: 0, revision };
  if (opts.countOnly) return { kvs: [], more: false, count: (await countFn?.()) ?? await countIndex(db, snapshot, span), revision };
  const from = opts.after !== undefined && opts.after >= span.start ? opts.after + '\u0000' : span.start;
  const limit = opts.limit && opts.limit > 0 ? opts.limit : 0;
  const kvs: KeyValue[] = [];
  let more = false;
  const it = db.iterator({
    gte: INDEX_PREFIX + from,
    lt: span.end === undefined ? spaceEnd(INDEX_PREFIX) : INDEX_PREFIX + span.end,
    limit: limit > 0 ? limit + 1 : -1,
    snapshot,
  });
  try {
    for (;;) {
      const entries = await it.nextv(limit > 0 ? Math.min(limit + 1, CHUNK) : CHUNK);
      if (entries.length === 0) break;
      const recs: [string, StoredIndexRecord][] = [];
      for (const [k, v] of entries) {
        if (limit > 0 && kvs.length + recs.length === limit) { more = true; break; }
        recs.push([k.slice(INDEX_PREFIX.length), decodeIndexRecord(v)]);
      }
      // The values of this chunk, read while the iterator holds its place.
      const values = await resolveValues(db, snapshot, recs, cached);
      for (let i = 0; i < recs.length; i++) {
        const [key, r] = recs[i]!;
        kvs.push({ key, value: values[i]!, createRevision: r.createRevision, modRevision: r.modRevision, version: r.version });
      }
      if (more) break;
    }
  } finally {
    await it.close();
  }
  const count = from === span.start && !more ? kvs.length : (await countFn?.()) ?? await countIndex(db, snapshot, span);
  return { kvs, more, count, revision };
}

/**
 * A range at a past revision: walk h/ over the span; for each key the newest entry at or below
 * `atRev` decides (PUT: present at that log record; DELETE or none: absent). When the count is
 * known without it, the walk starts after `after` and stops once it has limit + 1 keys;
 * otherwise it walks the whole span to count.
 */
export async function rangeAt(db: Db, snapshot: Snapshot, span: KeySpan, opts: RangeOptions, atRev: number, countFn?: RangeCountFn): Promise<RangeResult> {
  if (span.end !== undefined && span.end <= span.start) return { kvs: [], more: false, count: 0, revision: atRev };
  const partial = opts.countOnly || (opts.limit ?? 0) > 0 || opts.after !== undefined;
  const knownCount = partial ? await countFn?.() : undefined;
  if (opts.countOnly && knownCount !== undefined) return { kvs: [], more: false, count: knownCount, revision: atRev };
  const limit = opts.limit && opts.limit > 0 ? opts.limit : 0;
  const wanted: { key: string; rev: number }[] = [];
  let count = 0;
  let more = false;
  let curKey: string | undefined;
  let curRev = 0;
  let curPut = false;
  const settle = (): void => {
    if (curKey === undefined || !curPut) return;
    count++;
    if (opts.countOnly || (opts.after !== undefined && curKey <= opts.after)) return;
    if (limit > 0 && wanted.length === limit) more = true;
    else wanted.push({ key: curKey, rev: curRev });
  };
  // Keys > after start at h/<after>\u0001 (above every h/<after>\0<rev> entry).
  const skipTo = knownCount !== undefined && opts.after !== undefined && opts.after >= span.start;
  const gte = skipTo ? HISTORY_PREFIX + opts.after + '\u0001' : HISTORY_PREFIX + span.start + HISTORY_SEP;
  const it = db.iterator({ gte, lt: historyUpperBound(span.end), snapshot });
  try {
    for (;;) {
      if (knownCount !== undefined && more) break;
      const entries = await it.nextv(CHUNK);
      if (entries.length === 0) break;
      for (const [k, v] of entries) {
        const { key, rev } = parseHistoryKey(k);
        if (key !== curKey) {
          settle();
          if (knownCount !== undefined && more) break;
          curKey = key;
          curPut = false;
          curRev = 0;
        }
        if (rev <= atRev) {
          curRev = rev;
          curPut = v[0] === 0x50;
        }
      }
    }
    if (!(knownCount !== undefined && more)) settle();
  } finally {
    await it.close();
  }
  if (knownCount !== undefined) count = knownCount;
  if (opts.countOnly || wanted.length === 0) return { kvs: [], more, count, revision: atRev };
  const recs = await db.getMany(wanted.map((w) => logKey(w.rev)), { snapshot });
  const kvs: KeyValue[] = [];
  for (let i = 0; i < wanted.length; i++) {
    const b = recs[i];
    if (b === undefined) throw new StorageError('Internal', `revision log entry ${wanted[i]!.rev} of ${wanted[i]!.key} is missing`);
    const r = decodeLogRecord(b);
    kvs.push({ key: r.key, value: r.value, createRevision: r.createRevision, modRevision: wanted[i]!.rev, version: r.version });
  }
  return { kvs, more, count, revision: atRev };
}

/**
 * Events with revisions in [from, to] whose key matches, in revision order, in chunks; prevKv
 * resolved from the log (absent when compacted away). The caller owns the snapshot.
 */
export async function* historyEvents(
  db: Db, snapshot: Snapshot, from: number, to: number, match: (key: string) => boolean, chunk = 512,
): AsyncGenerator<WatchEvent[]> {
  if (from > to) return;
  const it = db.iterator({ gte: logKey(from), lte: logKey(to), snapshot });
  try {
    for (;;) {
      const entries = await it.nextv(chunk);
      if (entries.length === 0) return;
      const picked: { rev: number; rec: ReturnType<typeof decodeLogRecord> }[] = [];
      for (const [k, v] of entries) {
        const rec = decodeLogRecord(v);
        if (match(rec.key)) picked.push({ rev: parseRevHex(k.slice(LOG_PREFIX.length)), rec });
      }
      if (picked.length === 0) continue;
      const withPrev = picked.filter((p) => p.rec.prevRev > 0);
      const prevBufs = withPrev.length ? await db.getMany(withPrev.map((p) => logKey(p.rec.prevRev)), { snapshot }) : [];
      const prevByRev = new Map<number, KeyValue>();
      withPrev.forEach((p, i) => {
        const b = prevBufs[i];
        if (b === undefined) return;
        const pr = decodeLogRecord(b);
        prevByRev.set(p.rev, { key: pr.key, value: pr.value, createRevision: pr.createRevision, modRevision: p.rec.prevRev, version: pr.version });
      });
      yield picked.map(({ rev, rec }): WatchEvent => {
        const prevKv = prevByRev.get(rev);
        const kv: KeyValue = rec.type === 'PUT'
          ? { key: rec.key, value: rec.value, createRevision: rec.createRevision, modRevision: rev, version: rec.version }
          : { key: rec.key, value: EMPTY, createRevision: 0, modRevision: rev, version: 0 };
        return prevKv ? { type: rec.type, kv, prevKv } : { type: rec.type, kv };
      });
    }
  } finally {
    await it.close();
  }
}

export const EMPTY: Buffer = Buffer.alloc(0);

/**
 * Reads the revisions of every live key (the backend's in-memory index) from k/, rewriting
 * format 1 records (value inline) as format 2 pointers on the way (layout.ts). A record is
 * rewritten only when its r/<mod> record holds the same value (the layout guarantees it:
 * compaction keeps a key's newest write); any other stays inline (`inconsistent`), which readers
 * accept. The rewrites are ordinary batches: a crash before they are durable leaves format 1
 * records, which the next open rewrites again.
 */
export async function loadIndex(db: Db): Promise<{ index: Map<string, KeyMeta>; migrated: number; inconsistent: number }> {
  const index = new Map<string, KeyMeta>();
  let migrated = 0;
  let inconsistent = 0;
  const it = db.iterator({ gte: INDEX_PREFIX, lt: spaceEnd(INDEX_PREFIX) });
  try {
    for (;;) {
      const entries = await it.nextv(5000);
      if (entries.length === 0) return { index, migrated, inconsistent };
      const old: { k: string; v: Buffer; r: StoredIndexRecord }[] = [];
      for (const [k, v] of entries) {
        const r = decodeIndexRecord(v);
        index.set(k.slice(INDEX_PREFIX.length), { createRevision: r.createRevision, modRevision: r.modRevision, version: r.version, expireAt: r.expireAt });
        if (r.inline !== undefined) old.push({ k, v, r });
      }
      if (old.length === 0) continue;
      const logs = await db.getMany(old.map((o) => logKey(o.r.modRevision)));
      const rewrites: { type: 'put'; key: string; value: Buffer }[] = [];
      old.forEach((o, i) => {
        const b = logs[i];
        const l = b === undefined ? undefined : decodeLogRecord(b);
        if (l && l.type === 'PUT' && l.key === o.k.slice(INDEX_PREFIX.length) && l.value.equals(o.r.inline!)) {
          rewrites.push({ type: 'put', key: o.k, value: o.v.subarray(0, INDEX_HEADER) });
        } else {
          inconsistent++;
        }
      });
      if (rewrites.length > 0) await db.batch(rewrites);
      migrated += rewrites.length;
    }
  } finally {
    await it.close();
  }
}

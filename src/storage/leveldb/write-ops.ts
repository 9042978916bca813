/**
 * Builds the LevelDB operations and the watch event of one decided write (layout.ts describes
 * the records). Pure functions: the backend decides (revision, CAS) and the group committer
 * writes; this file only translates a decision into records.
 */
import type { KeyValue, WatchEvent } from '../interface.js';
import { StorageError } from '../errors.js';
import type { BatchOp } from './group-commit.js';
import {
  HISTORY_DELETE, HISTORY_PUT, encodeIndexRecord, encodeLogRecord, historyKeyOfHex, indexKey, logKeyOfHex, revHex, ttlKey,
} from './layout.js';
import { EMPTY } from './reads.js';

/** The in-memory view of one live key (its value stays on disk). */
export interface KeyMeta {
  readonly createRevision: number;
  readonly modRevision: number;
  readonly version: number;
  /** Expiry deadline in ms since the epoch; 0 when the key does not expire. */
  readonly expireAt: number;
}

export interface DecidedWrite {
  readonly ops: BatchOp[];
  readonly event: WatchEvent;
}

/**
 * A create (prev undefined) or an update of `key` to `value` at meta.modRevision. The value is
 * written once, into the r/ record; k/ gets the 24-byte pointer. The stored value (a view into
 * the encoded log record, not the caller's buffer) is event.kv.value.
 */
export function putWrite(key: string, value: Buffer, meta: KeyMeta, prev?: { meta: KeyMeta; value: Buffer }): DecidedWrite {
  const rev = meta.modRevision;
  const logRec = encodeLogRecord({ type: 'PUT', key, createRevision: meta.createRevision, version: meta.version, prevRev: prev?.meta.modRevision ?? 0, value });
  const stored = logRec.subarray(logRec.length - value.length);
  const hex = revHex(rev);
  const ops: BatchOp[] = [
    { type: 'put', key: logKeyOfHex(hex), value: logRec },
    { type: 'put', key: indexKey(key), value: encodeIndexRecord(meta) },
    { type: 'put', key: historyKeyOfHex(key, hex), value: HISTORY_PUT },
  ];
  // An update without ttlSeconds drops an earlier expiry (as an etcd put without a lease does).
  if (prev?.meta.expireAt) ops.push({ type: 'del', key: ttlKey(prev.meta.expireAt, key) });
  if (meta.expireAt) ops.push({ type: 'put', key: ttlKey(meta.expireAt, key), value: EMPTY });
  const kv: KeyValue = { key, value: stored, createRevision: meta.createRevision, modRevision: rev, version: meta.version };
  const event: WatchEvent = prev ? { type: 'PUT', kv, prevKv: toKv(key, prev) } : { type: 'PUT', kv };
  return { ops, event };
}

/** A delete of `key` at revision `rev`; event.prevKv is the deleted value. */
export function deleteWrite(key: string, rev: number, prev: { meta: KeyMeta; value: Buffer }): DecidedWrite & { prevKv: KeyValue } {
  const p = prev.meta;
  const hex = revHex(rev);
  const ops: BatchOp[] = [
    { type: 'del', key: indexKey(key) },
    { type: 'put', key: logKeyOfHex(hex), value: encodeLogRecord({ type: 'DELETE', key, createRevision: 0, version: 0, prevRev: p.modRevision, value: EMPTY }) },
    { type: 'put', key: historyKeyOfHex(key, hex), value: HISTORY_DELETE },
  ];
  if (p.expireAt) ops.push({ type: 'del', key: ttlKey(p.expireAt, key) });
  const prevKv = toKv(key, prev);
  return { ops, prevKv, event: { type: 'DELETE', kv: { key, value: EMPTY, createRevision: 0, modRevision: rev, version: 0 }, prevKv } };
}

function toKv(key: string, s: { meta: KeyMeta; value: Buffer }): KeyValue {
  return { key, value: s.value, createRevision: s.meta.createRevision, modRevision: s.meta.modRevision, version: s.meta.version };
}

export function validateKey(key: string, allowEmpty: boolean): void {
  if (typeof key !== 'string' || (key === '' && !allowEmpty)) throw new StorageError('InvalidArgument', 'empty key', { key });
  if (key.includes('\u0000')) throw new StorageError('InvalidArgument', 'keys may not contain NUL', { key });
}

/** The expiry deadline for ttlSeconds (0: none). */
export function ttlDeadline(key: string, ttlSeconds: number | undefined): number {
  if (ttlSeconds === undefined) return 0;
  if (!Number.isFinite(ttlSeconds) || ttlSeconds <= 0) throw new StorageError('InvalidArgument', `invalid ttlSeconds ${ttlSeconds}`, { key });
  return Date.now() + Math.ceil(ttlSeconds * 1000);
}

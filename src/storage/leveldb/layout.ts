/**
 * On-disk layout of the LevelDB backend: key prefixes and the binary records stored under them.
 *
 * All LevelDB keys are UTF-8 strings; revisions inside keys are 16 lower-case hex digits so that
 * byte order equals numeric order. Five key spaces:
 *
 *   m/rev                      -> current revision (written with every write batch)
 *   m/compact                  -> compaction point (0 = never compacted)
 *   m/compact-done             -> compaction point whose cleanup finished (resumed on open when behind)
 *   k/<key>                    -> current index: the live value of <key> with its revisions
 *   r/<rev>                    -> revision log: the one write stamped with <rev> (PUT or DELETE)
 *   h/<key>\0<rev>             -> per-key history: one entry per write of <key> ('P' or 'D')
 *   t/<deadline ms>/<key>      -> TTL index, scanned by the expiry sweeper
 *
 * Worked example (empty store, revision 1):
 *
 *   create('/a', v1)    r/..02 = PUT /a {create 2, version 1, prev 0} v1
 *                       k//a   = {create 2, mod 2, version 1} v1      h//a\0..02 = P   m/rev = 2
 *   update('/a', v2, 2) r/..03 = PUT /a {create 2, version 2, prev 2} v2
 *                       k//a   = {create 2, mod 3, version 2} v2      h//a\0..03 = P   m/rev = 3
 *   create('/b', w1)    r/..04 = PUT /b {create 4, version 1, prev 0}  k//b, h//b\0..04 = P
 *   delete('/a')        r/..05 = DELETE /a {prev 3};  k//a removed;   h//a\0..05 = D   m/rev = 5
 *   create('/a', v4)    r/..06 = PUT /a {create 6, version 1, prev 0}  (a new incarnation)
 *
 * Reads at the current revision use k/ only. A read at an older revision R walks h/ over the key
 * range, takes for each key the newest entry with rev <= R, and fetches r/<rev> when it is a PUT:
 * at R = 4 above, /a resolves to r/..03 (v2) and /b to r/..04; at R = 5, /a resolves to D (absent).
 * Watches from a past revision scan r/ in revision order, resolving prevKv through `prev`.
 *
 * compact(C) deletes, for each key, every h/ + r/ entry below C except the newest one below C when
 * it is a PUT (it is the key's value at C-1 and the prevKv of the key's first event at or after C).
 * compact(5) above keeps r/..03 (the prevKv of the DELETE at 5) and r/..04, and drops r/..02.
 */

export const META_REV = 'm/rev';
export const META_COMPACT = 'm/compact';
export const META_COMPACT_DONE = 'm/compact-done';
export const INDEX_PREFIX = 'k/';
export const LOG_PREFIX = 'r/';
export const HISTORY_PREFIX = 'h/';
export const TTL_PREFIX = 't/';

/** Separates the user key from the revision inside h/ keys; user keys may not contain it. */
export const HISTORY_SEP = '\u0000';

export function revHex(rev: number): string {
  return rev.toString(16).padStart(16, '0');
}

export function parseRevHex(hex: string): number {
  return parseInt(hex, 16);
}

export function indexKey(key: string): string {
  return INDEX_PREFIX + key;
}

export function logKey(rev: number): string {
  return LOG_PREFIX + revHex(rev);
}

export function historyKey(key: string, rev: number): string {
  return HISTORY_PREFIX + key + HISTORY_SEP + revHex(rev);
}

export function ttlKey(deadlineMs: number, key: string): string {
  return TTL_PREFIX + revHex(deadlineMs) + '/' + key;
}

/** Splits an h/ key into user key and revision. */
export function parseHistoryKey(k: string): { key: string; rev: number } {
  const sep = k.lastIndexOf(HISTORY_SEP);
  return { key: k.slice(HISTORY_PREFIX.length, sep), rev: parseRevHex(k.slice(sep + 1)) };
}

/** Splits a t/ key into deadline and user key. */
export function parseTtlKey(k: string): { deadlineMs: number; key: string } {
  const hexEnd = TTL_PREFIX.length + 16;
  return { deadlineMs: parseRevHex(k.slice(TTL_PREFIX.length, hexEnd)), key: k.slice(hexEnd + 1) };
}

export const HISTORY_PUT = Buffer.from('P');
export const HISTORY_DELETE = Buffer.from('D');

/** The k/ record: the live incarnation of a key. 24-byte header, then the value. */
export interface IndexRecord {
  readonly createRevision: number;
  readonly modRevision: number;
  readonly version: number;
  /** Expiry deadline in ms since the epoch; 0 when the key does not expire. */
  readonly expireAt: number;
  readonly value: Buffer;
}

const U48 = 6;
const INDEX_HEADER = 4 * U48;

export function encodeIndexRecord(r: IndexRecord): Buffer {
  // Not from the shared pool: watch events and caches keep views of this record's value for a
  // long time, and a pooled slice would keep its whole 8 KiB pool slab alive.
  const b = Buffer.allocUnsafeSlow(INDEX_HEADER + r.value.length);
  b.writeUIntBE(r.createRevision, 0, U48);
  b.writeUIntBE(r.modRevision, U48, U48);
  b.writeUIntBE(r.version, 2 * U48, U48);
  b.writeUIntBE(r.expireAt, 3 * U48, U48);
  r.value.copy(b, INDEX_HEADER);
  return b;
}

export function decodeIndexRecord(b: Buffer): IndexRecord {
  return {
    createRevision: b.readUIntBE(0, U48),
    modRevision: b.readUIntBE(U48, U48),
    version: b.readUIntBE(2 * U48, U48),
    expireAt: b.readUIntBE(3 * U48, U48),
    value: b.subarray(INDEX_HEADER),
  };
}

/** The r/ record: one write. For DELETE, createRevision/version are 0 and value is empty. */
export interface LogRecord {
  readonly type: 'PUT' | 'DELETE';
  readonly key: string;
  readonly createRevision: number;
  readonly version: number;
  /** Revision of the key's previous write in this incarnation (0 for a create). */
  readonly prevRev: number;
  readonly value: Buffer;
}

const LOG_HEADER = 1 + 3 * U48 + 4;

export function encodeLogRecord(r: LogRecord): Buffer {
  const keyLen = Buffer.byteLength(r.key);
  const b = Buffer.allocUnsafe(LOG_HEADER + keyLen + r.value.length);
  b[0] = r.type === 'PUT' ? 0x50 : 0x44;
  b.writeUIntBE(r.createRevision, 1, U48);
  b.writeUIntBE(r.version, 1 + U48, U48);
  b.writeUIntBE(r.prevRev, 1 + 2 * U48, U48);
  b.writeUInt32BE(keyLen, 1 + 3 * U48);
  b.write(r.key, LOG_HEADER, 'utf8');
  r.value.copy(b, LOG_HEADER + keyLen);
  return b;
}

export function decodeLogRecord(b: Buffer): LogRecord {
  const keyLen = b.readUInt32BE(1 + 3 * U48);
  return {
    type: b[0] === 0x50 ? 'PUT' : 'DELETE',
    createRevision: b.readUIntBE(1, U48),
    version: b.readUIntBE(1 + U48, U48),
    prevRev: b.readUIntBE(1 + 2 * U48, U48),
    key: b.toString('utf8', LOG_HEADER, LOG_HEADER + keyLen),
    value: b.subarray(LOG_HEADER + keyLen),
  };
}

export function encodeRev(rev: number): Buffer {
  return Buffer.from(revHex(rev));
}

export function decodeRev(b: Buffer | undefined): number {
  return b === undefined ? 0 : parseRevHex(b.toString('latin1'));
}

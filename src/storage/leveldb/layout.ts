/**
 * On-disk layout of the LevelDB backend: key prefixes and the binary records stored under them.
 *
 * All LevelDB keys are UTF-8 strings; revisions inside keys are 16 lower-case hex digits so that
 * byte order equals numeric order. The key spaces:
 *
 *   m/rev                      -> current revision (written with every write batch)
 *   m/format                   -> layout version: '2' (absent in directories written before it)
 *   m/compact                  -> compaction point (0 = never compacted)
 *   m/compact-done             -> compaction point whose cleanup finished (resumed on open when behind)
 *   k/<key>                    -> current index: a 24-byte pointer {create, mod, version, expireAt}
 *   r/<rev>                    -> revision log: the one write stamped with <rev> (PUT or DELETE),
 *                                 holding the value; the only copy of every value
 *   h/<key>\0<rev>             -> per-key history: one entry per write of <key> ('P' or 'D')
 *   t/<deadline ms>/<key>      -> TTL index, scanned by the expiry sweeper
 *
 * Each value is written once, into its r/ record; k/ only points at it (its mod revision). So a
 * write costs its value once in LevelDB's log, memtable and compactions, plus ~100 bytes of keys
 * and headers.
 *
 * Worked example (empty store, revision 1):
 *
 *   create('/a', v1)    r/..02 = PUT /a {create 2, version 1, prev 0} v1
 *                       k//a   = {create 2, mod 2, version 1}         h//a\0..02 = P   m/rev = 2
 *   update('/a', v2, 2) r/..03 = PUT /a {create 2, version 2, prev 2} v2
 *                       k//a   = {create 2, mod 3, version 2}         h//a\0..03 = P   m/rev = 3
 *   create('/b', w1)    r/..04 = PUT /b {create 4, version 1, prev 0}  k//b, h//b\0..04 = P
 *   delete('/a')        r/..05 = DELETE /a {prev 3};  k//a removed;   h//a\0..05 = D   m/rev = 5
 *   create('/a', v4)    r/..06 = PUT /a {create 6, version 1, prev 0}  (a new incarnation)
 *
 * A read at the current revision takes k/ (under one LevelDB snapshot with m/rev), then the
 * value from r/<mod>: get('/b') at revision 5 reads k//b = {mod 4} and r/..04 = w1 (the backend's
 * in-memory copy of k/ usually spares the first lookup, its value cache both). A read at an
 * older revision R walks h/ over the key range, takes for each key the newest entry with
 * rev <= R, and fetches r/<rev> when it is a PUT: at R = 4 above, /a resolves to r/..03 (v2) and
 * /b to r/..04; at R = 5, /a resolves to D (absent). Watches from a past revision scan r/ in
 * revision order, resolving prevKv through `prev`.
 *
 * compact(C) deletes, for each key, every h/ + r/ entry below C except the newest one below C when
 * it is a PUT (it is the key's value at C-1 and the prevKv of the key's first event at or after C).
 * compact(5) above keeps r/..03 (the prevKv of the DELETE at 5) and r/..04 (the value k//b points
 * at), and drops r/..02. So the r/ record a k/ pointer names is never compacted: it is the key's
 * newest write.
 *
 * Format 1 (directories without m/format): k/ records carried the value after the same 24-byte
 * header (a second copy of what r/<mod> holds). Opening such a directory rewrites its k/ records
 * as pointers and then records m/format = 2; readers accept both forms (a value after the header
 * is used as is), so a migration interrupted by a crash is simply finished on the next open.
 */

export const META_REV = 'm/rev';
export const META_FORMAT = 'm/format';
export const META_COMPACT = 'm/compact';
/** The layout version this code writes (see META_FORMAT). */
export const LAYOUT_FORMAT = 2;
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
  return logKeyOfHex(revHex(rev));
}

export function historyKey(key: string, rev: number): string {
  return historyKeyOfHex(key, revHex(rev));
}

/** logKey for a revision already written as revHex (a write's keys share it). */
export function logKeyOfHex(hex: string): string {
  return LOG_PREFIX + hex;
}

/** historyKey for a revision already written as revHex. */
export function historyKeyOfHex(key: string, hex: string): string {
  return HISTORY_PREFIX + key + HISTORY_SEP + hex;
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

/** The k/ record: the live incarnation of a key (format 2: a pointer to its r/<modRevision>). */
export interface IndexRecord {
  readonly createRevision: number;
  readonly modRevision: number;
  readonly version: number;
  /** Expiry deadline in ms since the epoch; 0 when the key does not expire. */
  readonly expireAt: number;
}

/** A k/ record as read: format 1 records also carry the value (`inline`). */
export interface StoredIndexRecord extends IndexRecord {
  /** The value stored after the header by format 1; undefined for a format 2 pointer. */
  readonly inline: Buffer | undefined;
}

const U48 = 6;
export const INDEX_HEADER = 4 * U48;

export function encodeIndexRecord(r: IndexRecord): Buffer {
  // Copied into the LevelDB batch and dropped: a pooled allocation is fine.
  const b = Buffer.allocUnsafe(INDEX_HEADER);
  b.writeUIntBE(r.createRevision, 0, U48);
  b.writeUIntBE(r.modRevision, U48, U48);
  b.writeUIntBE(r.version, 2 * U48, U48);
  b.writeUIntBE(r.expireAt, 3 * U48, U48);
  return b;
}

export function decodeIndexRecord(b: Buffer): StoredIndexRecord {
  return {
    createRevision: b.readUIntBE(0, U48),
    modRevision: b.readUIntBE(U48, U48),
    version: b.readUIntBE(2 * U48, U48),
    expireAt: b.readUIntBE(3 * U48, U48),
    inline: b.length > INDEX_HEADER ? b.subarray(INDEX_HEADER) : undefined,
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
  // Not from the shared pool: a PUT's value is handed out as a view of this record (watch
  // events, the watch cache, the value cache keep it for a long time), and a pooled slice would
  // keep its whole 8 KiB pool slab alive.
  const b = r.value.length > 0 ? Buffer.allocUnsafeSlow(LOG_HEADER + keyLen + r.value.length) : Buffer.allocUnsafe(LOG_HEADER + keyLen);
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

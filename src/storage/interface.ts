/**
 * The revisioned key-value contract every storage backend implements (LevelDB, etcd) and
 * every wrapper passes through unchanged (watch cache, encryption). One conformance suite
 * (test/storage/conformance.ts) runs against each.
 *
 * Model (the etcd v3 model):
 * - The store has one global revision counter, starting at 1 for an empty store (like etcd).
 *   Every successful write (create, update, delete) increments it by exactly one and stamps
 *   the written key with that revision. Reads never change it.
 * - A key carries createRevision (the revision that created its current incarnation),
 *   modRevision (the revision of its last write) and version (writes since creation, from 1).
 * - History: the store keeps every earlier revision of every key until compaction. Reads and
 *   watches at a revision below the compaction point fail with StorageError 'Compacted'.
 *
 * Worked example (empty store, revision 1):
 *   create('/a', v1)        -> revision 2; /a {create 2, mod 2, version 1}
 *   update('/a', v2, 2)     -> revision 3; /a {create 2, mod 3, version 2}
 *   update('/a', v3, 2)     -> StorageError Conflict (actualModRevision 3); revision stays 3
 *   create('/b', w1)        -> revision 4
 *   delete('/a', 3)         -> revision 5; watch sees DELETE /a with prevKv {mod 3}
 *   range('/', {prefix, revision: 3}) -> [/a@3]   (history read)
 *   compact(4); range(..., {revision: 3}) -> Compacted
 *   watch('/', {prefix, fromRevision: 4}) -> PUT /b@4, DELETE /a@5, ...
 *
 * Concurrency: all methods may be called concurrently. Writes to one key are linearizable.
 * Events of one watch arrive in revision order with no gaps and no duplicates.
 */

/** One key-value pair at one revision. Values are opaque bytes to the store. */
export interface KeyValue {
  readonly key: string;
  readonly value: Buffer;
  readonly createRevision: number;
  readonly modRevision: number;
  readonly version: number;
}

export interface ReadOptions {
  /** Read as of this revision (0 or absent: the current revision). */
  readonly revision?: number;
  readonly signal?: AbortSignal;
}

export interface RangeOptions extends ReadOptions {
  /**
   * The range is [key, end). With `prefix: true`, end is the prefix's successor, so every
   * key starting with `key` is returned. Keys are compared as UTF-8 bytes, in ascending order.
   */
  readonly prefix?: boolean;
  /** Exclusive end key (ignored with prefix). Absent and no prefix: only `key` itself. */
  readonly end?: string;
  /** Continue after this key (exclusive); used for pagination. */
  readonly after?: string;
  /** At most this many items (0 or absent: no limit). */
  readonly limit?: number;
  /** Return only the count (kvs empty). */
  readonly countOnly?: boolean;
}

export interface RangeResult {
  readonly kvs: readonly KeyValue[];
  /** True when more keys remain in the range after the last returned one. */
  readonly more: boolean;
  /** Number of keys in the whole range at that revision (ignoring limit and after). */
  readonly count: number;
  /** The revision the range was read at (the current revision when none was asked). */
  readonly revision: number;
}

export interface WriteOptions {
  /**
   * Time to live in seconds: the key is deleted by the store (a normal DELETE event) some
   * time after this many seconds. Used for events (--event-ttl). Absent: no expiry.
   */
  readonly ttlSeconds?: number;
  readonly signal?: AbortSignal;
}

export interface WriteResult {
  /** The revision the write was stamped with (the store's new current revision). */
  readonly revision: number;
}

export interface DeleteResult extends WriteResult {
  readonly prevKv: KeyValue;
}

export type WatchEventType = 'PUT' | 'DELETE';

export interface WatchEvent {
  readonly type: WatchEventType;
  /** For PUT the new value; for DELETE the key with an empty value, modRevision = the delete's revision. */
  readonly kv: KeyValue;
  /** The previous value, for updates and deletes (absent for creates). */
  readonly prevKv?: KeyValue;
}

export interface WatchOptions {
  readonly prefix?: boolean;
  /**
   * Deliver every event with revision >= fromRevision. Absent or 0: events after the
   * current revision only. Below the compaction point: the watch ends with a Compacted error.
   */
  readonly fromRevision?: number;
  /** Ending the watch: abort the signal (or break out of the iteration). */
  readonly signal?: AbortSignal;
  /**
   * When true, the watch also yields progress notifications: batches with no events whose
   * `revision` says every event up to it was delivered. Used for bookmarks.
   */
  readonly progressNotify?: boolean;
  /**
   * The watcher only wants events whose trigger values include `trigger.value` (its filter
   * pins an indexed field, as a node agent's pod watch pins spec.nodeName): a watch cache may
   * skip it for other events. Backends without such an index ignore it; the watcher's own
   * filter still decides every event it gets.
   */
  readonly trigger?: WatchTrigger;
}

/** See WatchOptions.trigger. */
export interface WatchTrigger {
  /** Names the index (the field, e.g. 'spec.nodeName'); watchers with equal ids share it. */
  readonly id: string;
  readonly value: string;
  /**
   * The index values of an event: of the object after the change and of the one before
   * (undefined where there is none). Equal for every watcher of one id.
   */
  readonly valuesOf: (e: WatchEvent) => readonly (string | undefined)[];
}

/**
 * Events of one revision come together in one batch; batches are in revision order. A batch may
 * hold several consecutive revisions (the embedded store delivers each group commit as one), so
 * whoever starts a watch inside a batch must cut it by the events' own revisions (kv.modRevision).
 */
export interface WatchBatch {
  readonly events: readonly WatchEvent[];
  /** The revision this batch brings the watcher up to. */
  readonly revision: number;
}

/**
 * A running watch. Iterate it for batches. The iteration ends when the signal aborts or
 * close() is called; it throws StorageError 'Compacted' when the start revision is gone, or
 * 'Unavailable' when the backend lost the watch (the caller resumes from its last revision).
 */
export interface Watch extends AsyncIterable<WatchBatch> {
  close(): void;
}

export interface Backend {
  /** A short name for logs and metrics: 'leveldb', 'etcd', 'watchcache(leveldb)'. */
  readonly name: string;
  get(key: string, opts?: ReadOptions): Promise<{ kv: KeyValue | undefined; revision: number }>;
  range(key: string, opts?: RangeOptions): Promise<RangeResult>;
  /** Fails with KeyExists when the key exists. */
  create(key: string, value: Buffer, opts?: WriteOptions): Promise<WriteResult>;
  /**
   * Compare-and-swap: writes only when the key's modRevision equals expectedModRevision.
   * Fails with Conflict otherwise (KeyNotFound when the key is absent).
   */
  update(key: string, value: Buffer, expectedModRevision: number, opts?: WriteOptions): Promise<WriteResult>;
  /**
   * Deletes the key; with expectedModRevision, only when it matches (Conflict otherwise).
   * Fails with KeyNotFound when the key is absent.
   */
  delete(key: string, expectedModRevision?: number, opts?: { signal?: AbortSignal }): Promise<DeleteResult>;
  watch(key: string, opts?: WatchOptions): Watch;
  /** Drops history below `revision` (exclusive): reads at revision >= it stay valid. */
  compact(revision: number): Promise<void>;
  /** The latest compaction point (0 if never compacted). */
  compactedRevision(): Promise<number>;
  currentRevision(): Promise<number>;
  /**
   * currentRevision() without a promise, for a store in this process that knows it at once
   * (every acknowledged write is at or below it); absent when asking takes a round trip.
   * Undefined when the store cannot answer now (closed, failed): currentRevision() says why.
   */
  currentRevisionNow?(): number | undefined;
  close(): Promise<void>;
}

/**
 * The successor of a prefix: the smallest key greater than every key that starts with it.
 * Keys are ASCII paths in practice ('/registry/pods/default/x'), where UTF-16 order equals
 * byte order, so incrementing the last code unit is exact.
 */
export function prefixEnd(prefix: string): string {
  if (prefix === '') throw new RangeError('prefixEnd of an empty prefix');
  return prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1);
}

/**
 * The LevelDB backend object (opened by openLevelBackend in level-backend.ts): the revisioned
 * key-value contract (../interface.ts) on LevelDB through classic-level. Layout and worked
 * example: layout.ts.
 *
 * Concurrency contract:
 * - Write decisions (existence and compare-and-swap checks, revision assignment) are made
 *   synchronously against an in-memory index of every live key's revisions, which already
 *   includes decided-but-not-yet-durable writes. An update or delete may first fetch the current
 *   value (for prevKv), but re-checks and decides with no await in between (withCurrent). So
 *   writes are totally ordered by revision without locks, and a CAS sees earlier pending writes.
 * - The GroupCommitter writes decided writes in revision order, many per synced LevelDB batch,
 *   and acknowledges a write only once its batch is durable. The watch hub hears about a batch
 *   before its writers are acknowledged.
 * - Reads run against a LevelDB snapshot and report the revision stored in that snapshot, so a
 *   result never mixes revisions; they see every acknowledged write.
 * - The process holds LevelDB's LOCK on the directory: a second opener gets 'Unavailable'.
 */
import type { Logger } from 'pino';
import type {
  Backend, DeleteResult, KeyValue, RangeOptions, RangeResult, ReadOptions, Watch, WatchEvent,
  WatchOptions, WriteOptions, WriteResult,
} from '../interface.js';
import { MAX_VALUE_BYTES, StorageError, isStorageError } from '../errors.js';
import {
  META_COMPACT, META_COMPACT_DONE, META_REV, decodeRev, encodeRev, ttlKey,
} from './layout.js';
import { GroupCommitter, type CommitEntry, type GroupCommitStats } from './group-commit.js';
import { type KeyMeta, deleteWrite, putWrite, ttlDeadline, validateKey } from './write-ops.js';
import { type Db, EMPTY, getCurrent, historyEvents, keySpan, rangeAt, rangeCurrent, readPut } from './reads.js';
import { WatchHub } from './watch-hub.js';
import { ValueCache } from './value-cache.js';
import { RangeCounter } from './range-counter.js';
import { TtlSweeper } from './ttl-sweeper.js';
import { compactHistory } from './compactor.js';

export interface LevelBackendOptions {
  /** The data directory (created when missing). */
  readonly dir: string;
  readonly log?: Logger;
  /** fsync each write batch before acknowledging (default true). */
  readonly sync?: boolean;
  /** How often expired TTL keys are swept (default 1000 ms). */
  readonly ttlSweepIntervalMs?: number;
  /** Progress notification period for watches that ask for it (default 1000 ms). */
  readonly progressIntervalMs?: number;
  /** Undelivered events a watch may hold before it is ended with 'Unavailable' (default 10 000). */
  readonly watchQueueLimit?: number;
  /** Bytes of recently written values kept in memory to answer prevKv without a read (default 32 MiB). */
  readonly valueCacheBytes?: number;
  /** Creates/deletes remembered for exact range counts at recent revisions (default 100 000). */
  readonly countWindow?: number;
  /** LevelDB's memtable size (its writeBufferSize; default 16 MiB, see level-backend.ts). */
  readonly writeBufferBytes?: number;
}

export interface LevelBackendStats extends GroupCommitStats {
  readonly revision: number;
  readonly keys: number;
  readonly watchers: number;
}

const MAX_PREV_READ_ATTEMPTS = 100;
const NO_OPTIONS: WriteOptions = Object.freeze({});

export function errorCode(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err ? String((err as { code: unknown }).code) : undefined;
}

export class LevelBackend implements Backend {
  readonly name = 'leveldb';
  private revision: number;
  private committed: number;
  private compactRev: number;
  private closed = false;
  /** Current values of recently written keys, for prevKv without a LevelDB read. */
  private readonly values: ValueCache;
  /** Exact range counts from the in-memory index instead of LevelDB scans. */
  private readonly counter: RangeCounter;
  private readonly committer: GroupCommitter<WatchEvent>;
  private readonly hub: WatchHub;
  private readonly sweeper: TtlSweeper;
  private compaction: Promise<unknown> = Promise.resolve();
  private readonly stopping = new AbortController();

  constructor(
    private readonly db: Db,
    opts: LevelBackendOptions,
    private readonly log: Logger,
    private readonly index: Map<string, KeyMeta>,
    revision: number,
    compactRev: number,
    private readonly release: () => void,
  ) {
    this.revision = revision;
    this.committed = revision;
    this.compactRev = compactRev;
    this.counter = new RangeCounter(revision, opts.countWindow);
    this.values = new ValueCache(opts.valueCacheBytes ?? 32 * 1024 * 1024);
    this.committer = new GroupCommitter<WatchEvent>(db, opts.sync ?? true, (entries) => this.onCommitted(entries), (e) => {
      this.log.error({ err: e }, 'leveldb write failed; backend stopped');
    });
    this.hub = new WatchHub({
      committedRevision: () => this.committed,
      compactedRevision: () => this.compactRev,
      openHistory: (from, to, match) => this.openHistory(from, to, match),
    }, { log, queueLimit: opts.watchQueueLimit, progressIntervalMs: opts.progressIntervalMs });
    this.sweeper = new TtlSweeper(db, opts.ttlSweepIntervalMs ?? 1000, (key, deadline) => this.expire(key, deadline), log);
  }

  get stats(): LevelBackendStats {
    return { ...this.committer.stats, revision: this.committed, keys: this.index.size, watchers: this.hub.size };
  }

  /** Runs one TTL sweep now (tests; the sweeper also runs on its interval). */
  sweepExpired(): Promise<void> {
    return this.sweeper.sweep();
  }

  // ---- reads ----

  async get(key: string, opts: ReadOptions = {}): Promise<{ kv: KeyValue | undefined; revision: number }> {
    this.checkReadable(key, opts.signal);
    if (opts.revision) {
      const r = await this.range(key, opts);
      return { kv: r.kvs[0], revision: r.revision };
    }
    // The in-memory index says which write is the key's value at the committed revision, unless
    // a write of the key is decided but not yet durable (then the index already shows it, or no
    // longer has the key): in that case LevelDB, which holds the state at its stored revision,
    // answers. The value is r/<mod>: one lookup, none when cached.
    const meta = this.index.get(key);
    const at = this.committed;
    if (meta && meta.modRevision <= at) {
      const value = this.values.get(key, meta.modRevision) ?? await this.guard(readPut(this.db, key, meta.modRevision));
      if (value !== undefined) {
        return { kv: { key, value, createRevision: meta.createRevision, modRevision: meta.modRevision, version: meta.version }, revision: at };
      }
      // Gone: the key moved on and a compaction removed the record meanwhile. Read it afresh.
    }
    return this.guard(getCurrent(this.db, key, this.cachedValue));
  }

  /** The value cache's answer for (key, modRevision), for the read paths. */
  private readonly cachedValue = (key: string, modRevision: number): Buffer | undefined => this.values.get(key, modRevision);

  async range(key: string, opts: RangeOptions = {}): Promise<RangeResult> {
    this.checkReadable(key, opts.signal, opts.prefix === true);
    if (opts.limit !== undefined && (opts.limit < 0 || !Number.isInteger(opts.limit))) {
      throw new StorageError('InvalidArgument', `invalid limit ${opts.limit}`, { key });
    }
    const span = keySpan(key, opts);
    const snapshot = this.db.snapshot();
    try {
      const want = opts.revision ?? 0;
      const revRead = this.guard(this.db.get(META_REV, { snapshot }));
      const readRev = async (): Promise<number> => decodeRev(await revRead) || 1;
      // Exact counts from the in-memory index (range-counter.ts) at the snapshot's revision, or
      // at `want`; the count is taken synchronously after the revision is known.
      const countFn = async (): Promise<number | undefined> => {
        const at = want || await readRev();
        return this.counter.countAt(this.index.keys(), span, at);
      };
      if (want === 0) {
        // The common case: read the range and the snapshot's revision concurrently.
        const [rev, res] = await Promise.all([readRev(), this.guard(rangeCurrent(this.db, snapshot, span, opts, 0, countFn, this.cachedValue))]);
        return { ...res, revision: rev };
      }
      const snapRev = decodeRev(await revRead) || 1;
      if (want > snapRev) {
        throw new StorageError('FutureRevision', `revision ${want} is newer than the current revision ${snapRev}`, { key, currentRevision: snapRev });
      }
      if (want === snapRev) return await this.guard(rangeCurrent(this.db, snapshot, span, opts, snapRev, countFn, this.cachedValue));
      if (want < this.compactRev) {
        throw new StorageError('Compacted', `revision ${want} was compacted (compaction point ${this.compactRev})`, { key, currentRevision: snapRev, compactRevision: this.compactRev });
      }
      return await this.guard(rangeAt(this.db, snapshot, span, opts, want, countFn));
    } finally {
      await snapshot.close().catch(() => undefined);
    }
  }

  async currentRevision(): Promise<number> {
    this.checkOpen();
    return this.committed;
  }

  currentRevisionNow(): number | undefined {
    return this.closed || this.committer.failed ? undefined : this.committed;
  }

  async compactedRevision(): Promise<number> {
    this.checkOpen();
    return this.compactRev;
  }

  // ---- writes ----

  /** Not an async function: the committer's promise is handed back as is (one promise per create). */
  create(key: string, value: Buffer, opts: WriteOptions = NO_OPTIONS): Promise<WriteResult> {
    try {
      this.checkWritable(key, value, opts.signal);
      const expireAt = ttlDeadline(key, opts.ttlSeconds);
      if (this.index.has(key)) throw new StorageError('KeyExists', `key ${key} already exists`, { key, currentRevision: this.committed });
      const rev = ++this.revision;
      const meta: KeyMeta = { createRevision: rev, modRevision: rev, version: 1, expireAt };
      this.index.set(key, meta);
      this.counter.record(rev, key, 1);
      return this.commitPut(key, value, meta);
    } catch (e) {
      return Promise.reject(e);
    }
  }

  async update(key: string, value: Buffer, expectedModRevision: number, opts: WriteOptions = {}): Promise<WriteResult> {
    this.checkWritable(key, value, opts.signal);
    const expireAt = ttlDeadline(key, opts.ttlSeconds);
    return this.withCurrent(key, expectedModRevision, (prev) => {
      const rev = ++this.revision;
      const meta: KeyMeta = { createRevision: prev.meta.createRevision, modRevision: rev, version: prev.meta.version + 1, expireAt };
      this.index.set(key, meta);
      return this.commitPut(key, value, meta, prev);
    });
  }

  async delete(key: string, expectedModRevision?: number, opts: { signal?: AbortSignal } = {}): Promise<DeleteResult> {
    this.checkWritable(key, EMPTY, opts.signal);
    return this.withCurrent(key, expectedModRevision, (prev) => {
      const rev = ++this.revision;
      this.index.delete(key);
      this.counter.record(rev, key, -1);
      this.values.deleted(key);
      const w = deleteWrite(key, rev, prev);
      return this.committer.submit({ revision: rev, ops: w.ops, payload: w.event }, { revision: rev, prevKv: w.prevKv });
    });
  }

  /** Hands a decided PUT (already in the index) to the committer; resolves once it is durable. */
  private commitPut(key: string, value: Buffer, meta: KeyMeta, prev?: { meta: KeyMeta; value: Buffer }): Promise<WriteResult> {
    const w = putWrite(key, value, meta, prev);
    this.values.decided(key, meta.modRevision, w.event.kv.value);
    return this.committer.submit({ revision: meta.modRevision, ops: w.ops, payload: w.event }, { revision: meta.modRevision });
  }

  /**
   * Checks existence and the expected revision, finds the key's current value (for prevKv), and
   * calls `decide` SYNCHRONOUSLY right after a final check against the in-memory index: no
   * other write can be decided between that check and `decide` (an await in between would let
   * a concurrent CAS on the same revision slip through).
   */
  private async withCurrent<R>(key: string, expected: number | undefined, decide: (prev: { meta: KeyMeta; value: Buffer }) => Promise<R>): Promise<R> {
    for (let attempt = 0; attempt < MAX_PREV_READ_ATTEMPTS; attempt++) {
      const meta = this.checkCas(key, expected);
      const cached = this.values.get(key, meta.modRevision);
      if (cached) return decide({ meta, value: cached });
      // The current value is the r/ record of the key's mod revision: durable (a pending write's
      // value is always cached) and never compacted while it is the key's newest write.
      const value = await this.guard(readPut(this.db, key, meta.modRevision));
      this.checkOpen();
      const now = this.checkCas(key, expected);
      if (value !== undefined && now.modRevision === meta.modRevision) return decide({ meta: now, value });
      // The key changed while we read it (and the expectation, if any, still holds): read again.
    }
    throw new StorageError('Unavailable', `too much write contention on ${key}`, { key });
  }

  private checkCas(key: string, expected: number | undefined): KeyMeta {
    const meta = this.index.get(key);
    if (!meta) throw new StorageError('KeyNotFound', `key ${key} not found`, { key, currentRevision: this.committed });
    if (expected !== undefined && meta.modRevision !== expected) {
      throw new StorageError('Conflict', `key ${key} was modified at revision ${meta.modRevision}, expected ${expected}`, {
        key, currentRevision: this.committed, actualModRevision: meta.modRevision,
      });
    }
    return meta;
  }

  private onCommitted(entries: readonly CommitEntry<WatchEvent>[]): void {
    const events: WatchEvent[] = [];
    for (const e of entries) {
      const ev = e.payload;
      events.push(ev);
      if (ev.type === 'PUT') this.values.committed(ev.kv.key, e.revision);
    }
    this.committed = entries[entries.length - 1]!.revision;
    this.hub.dispatch(events);
  }

  /** Called by the TTL sweeper for an entry whose deadline passed. */
  private async expire(key: string, deadlineMs: number): Promise<void> {
    if (this.closed) return;
    const meta = this.index.get(key);
    if (!meta || meta.expireAt !== deadlineMs) {
      // A leftover index entry (the key changed or went away): drop it, no revision involved.
      await this.db.del(ttlKey(deadlineMs, key));
      return;
    }
    try {
      await this.delete(key, meta.modRevision);
      this.log.debug({ key }, 'leveldb key expired');
    } catch (err) {
      if (!isStorageError(err, 'Conflict') && !isStorageError(err, 'KeyNotFound')) throw err;
    }
  }

  // ---- watch and compaction ----

  watch(key: string, opts: WatchOptions = {}): Watch {
    if (this.closed || this.committer.failed) return this.hub.failedWatch(new StorageError('Unavailable', 'the leveldb backend is closed'));
    validateKey(key, opts.prefix === true);
    return this.hub.watch(key, opts);
  }

  private openHistory(from: number, to: number, match: (key: string) => boolean): AsyncIterable<WatchEvent[]> {
    const snapshot = this.db.snapshot();
    const db = this.db;
    return (async function* (): AsyncGenerator<WatchEvent[]> {
      try {
        yield* historyEvents(db, snapshot, from, to, match);
      } finally {
        await snapshot.close().catch(() => undefined);
      }
    })();
  }

  async compact(revision: number): Promise<void> {
    this.checkOpen();
    if (revision > this.committed) {
      throw new StorageError('FutureRevision', `cannot compact at ${revision}: the current revision is ${this.committed}`, { currentRevision: this.committed });
    }
    if (revision <= this.compactRev) {
      throw new StorageError('Compacted', `revision ${revision} is already compacted (compaction point ${this.compactRev})`, { currentRevision: this.committed, compactRevision: this.compactRev });
    }
    // Reject reads and watches below the new point before any history disappears.
    this.compactRev = revision;
    await this.guard(this.db.put(META_COMPACT, encodeRev(revision), { sync: true }));
    await this.runCompaction(revision);
  }

  /** Finishes a compaction an earlier process recorded but did not complete. */
  resumeCompaction(): void {
    void this.runCompaction(this.compactRev).catch((err: unknown) => this.log.warn({ err }, 'leveldb compaction resume failed'));
  }

  private runCompaction(revision: number): Promise<void> {
    const run = this.compaction.catch(() => undefined).then(async () => {
      const signal = this.stopping.signal;
      const t0 = Date.now();
      const stats = await compactHistory(this.db, revision, signal);
      if (signal.aborted) return;
      await this.db.put(META_COMPACT_DONE, encodeRev(revision), { sync: true });
      this.log.info({ revision, removed: stats.removed, ms: Date.now() - t0 }, 'leveldb history compacted');
    });
    this.compaction = run;
    return this.guard(run);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stopping.abort();
    await this.sweeper.stop();
    this.hub.closeAll();
    await this.committer.idle();
    await this.compaction.catch(() => undefined);
    try {
      await this.db.close();
    } finally {
      this.release();
    }
  }

  // ---- checks ----

  private checkOpen(): void {
    if (this.closed) throw new StorageError('Unavailable', 'the leveldb backend is closed');
    const f = this.committer.failed;
    if (f) throw f;
  }

  private checkReadable(key: string, signal: AbortSignal | undefined, prefix = false): void {
    this.checkOpen();
    if (signal?.aborted) throw new StorageError('Unavailable', 'the request was aborted', { key });
    validateKey(key, prefix);
  }

  private checkWritable(key: string, value: Buffer, signal: AbortSignal | undefined): void {
    this.checkReadable(key, signal);
    if (value.length > MAX_VALUE_BYTES) {
      throw new StorageError('ValueTooLarge', `value of ${value.length} bytes for ${key} exceeds the limit of ${MAX_VALUE_BYTES} bytes`, { key });
    }
  }

  /** Maps LevelDB failures (typically: closed under a pending read) to StorageError. */
  private async guard<T>(p: Promise<T>): Promise<T> {
    try {
      return await p;
    } catch (err) {
      if (err instanceof StorageError) throw err;
      if (this.closed || errorCode(err) === 'LEVEL_DATABASE_NOT_OPEN' || errorCode(err) === 'LEVEL_ITERATOR_NOT_OPEN') {
        throw new StorageError('Unavailable', 'the leveldb backend is closed', {}, { cause: err });
      }
      throw new StorageError('Internal', `leveldb: ${String(err)}`, {}, { cause: err });
    }
  }
}

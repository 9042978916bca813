/**
 * Adaptive group commit for the LevelDB backend.
 *
 * Contract: entries are submitted already stamped with increasing revisions (the backend decides
 * them synchronously, in submission order). The committer writes them in submission order, many
 * per LevelDB batch, with at most one batch in flight: LevelDB's thread pool does not promise to
 * apply two concurrent batches in submission order, and a later batch must never become durable
 * without the earlier one. A batch starts as soon as the previous one returns (or on the next
 * microtask when idle), so a lone writer pays one fsync and concurrent writers share one; there
 * is no timer window. Submitted operations go straight into an open native batch, so encoding
 * the next batch overlaps the fsync of the current one.
 *
 * `onCommitted` runs for each batch, in order, after it is durable and BEFORE the writers'
 * promises resolve, so a writer that sees its acknowledgement can read its write.
 *
 * A failed batch is fatal: the backend's in-memory view already includes its writes, so the
 * committer rejects it and everything queued behind it, and stays failed.
 */
import type { ClassicLevel } from 'classic-level';
import { StorageError } from '../errors.js';
import { META_REV, encodeRev } from './layout.js';

export type BatchOp =
  | { readonly type: 'put'; readonly key: string; readonly value: Buffer }
  | { readonly type: 'del'; readonly key: string };

export interface CommitEntry<T> {
  readonly revision: number;
  readonly ops: readonly BatchOp[];
  /** Passed back to onCommitted (the watch event of this write). */
  readonly payload: T;
}

export interface GroupCommitStats {
  /** LevelDB write batches issued. */
  batches: number;
  /** Logical writes committed. */
  writes: number;
  /** The largest number of writes in one batch. */
  maxBatchWrites: number;
  /** Total time batches spent in LevelDB (write + fsync), in ms. */
  writeMs: number;
}

type Db = ClassicLevel<string, Buffer>;
type NativeBatch = ReturnType<Db['batch']>;

interface Waiter<T> {
  readonly entry: CommitEntry<T>;
  /** What the writer's promise resolves with once the batch is durable. */
  readonly result: unknown;
  readonly resolve: (v: unknown) => void;
  readonly reject: (e: unknown) => void;
}

interface Group<T> {
  batch: NativeBatch;
  waiters: Waiter<T>[];
  bytes: number;
}

/** Caps one batch so a flood of writers does not build an unbounded batch. */
const MAX_BATCH_WRITES = 4096;
const MAX_BATCH_BYTES = 16 * 1024 * 1024;

export class GroupCommitter<T> {
  readonly stats: GroupCommitStats = { batches: 0, writes: 0, maxBatchWrites: 0, writeMs: 0 };
  /** Groups not yet written, oldest first. */
  private open: Group<T>[] = [];
  private inFlight = false;
  private scheduled = false;
  private failure: StorageError | undefined;
  private idleWaiters: (() => void)[] = [];

  constructor(
    private readonly db: Db,
    private readonly sync: boolean,
    private readonly onCommitted: (entries: readonly CommitEntry<T>[]) => void,
    private readonly onFailure: (e: StorageError) => void,
  ) {}

  get failed(): StorageError | undefined {
    return this.failure;
  }

  /**
   * Queues a decided write; the promise resolves with `result` once its batch is durable. One
   * promise per write and no async wrapper: the backend returns it to its caller as is.
   */
  submit<R>(entry: CommitEntry<T>, result: R): Promise<R> {
    if (this.failure) return Promise.reject(this.failure);
    let g = this.open[this.open.length - 1];
    try {
      if (!g || g.waiters.length >= MAX_BATCH_WRITES || g.bytes >= MAX_BATCH_BYTES) {
        g = { batch: this.db.batch(), waiters: [], bytes: 0 };
        this.open.push(g);
      }
      const ops = entry.ops;
      for (let i = 0; i < ops.length; i++) {
        const op = ops[i]!;
        if (op.type === 'put') {
          g.batch.put(op.key, op.value);
          g.bytes += op.key.length + op.value.length;
        } else {
          g.batch.del(op.key);
          g.bytes += op.key.length;
        }
      }
    } catch (err) {
      // The batch cannot take the operations (the database is closing): nothing is durable.
      this.fail(new StorageError('Unavailable', `leveldb write failed; the backend is stopped: ${String(err)}`, {}, { cause: err }));
      return Promise.reject(this.failure);
    }
    const group = g;
    const p = new Promise<R>((resolve, reject) => {
      group.waiters.push({ entry, result, resolve: resolve as (v: unknown) => void, reject });
    });
    if (!this.inFlight && !this.scheduled) {
      // Defer to a microtask so writers decided in the same synchronous run share the batch.
      this.scheduled = true;
      queueMicrotask(this.flushScheduled);
    }
    return p;
  }

  private readonly flushScheduled = (): void => {
    this.scheduled = false;
    this.flush();
  };

  /** Resolves when nothing is queued or in flight. */
  idle(): Promise<void> {
    if (!this.inFlight && !this.scheduled && this.open.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private flush(): void {
    if (this.inFlight || this.failure) return;
    const g = this.open.shift();
    if (!g) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of waiters) w();
      return;
    }
    const entries = g.waiters.map((w) => w.entry);
    let written: Promise<void>;
    try {
      g.batch.put(META_REV, encodeRev(entries[entries.length - 1]!.revision));
      written = g.batch.write({ sync: this.sync });
    } catch (err) {
      written = Promise.reject(err);
    }
    this.inFlight = true;
    const t0 = performance.now();
    written.then(
      () => {
        this.inFlight = false;
        this.stats.writeMs += performance.now() - t0;
        this.stats.batches++;
        this.stats.writes += entries.length;
        if (entries.length > this.stats.maxBatchWrites) this.stats.maxBatchWrites = entries.length;
        try {
          this.onCommitted(entries);
        } finally {
          for (const w of g.waiters) w.resolve(w.result);
          this.flush();
        }
      },
      (err: unknown) => {
        this.inFlight = false;
        this.fail(new StorageError('Unavailable', `leveldb write failed; the backend is stopped: ${String(err)}`, {}, { cause: err }));
        for (const w of g.waiters) w.reject(this.failure);
        this.flush();
      },
    );
  }

  private fail(e: StorageError): void {
    if (this.failure) return;
    this.failure = e;
    const rest = this.open;
    this.open = [];
    for (const g of rest) {
      for (const w of g.waiters) w.reject(e);
      void g.batch.close().catch(() => undefined);
    }
    this.onFailure(e);
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }
}

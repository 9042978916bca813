/**
 * One watcher of a watch cache. The cache pushes batches (shared, read-only objects) into its
 * queue; the consumer pulls them through async iteration.
 *
 * Contract:
 * - Batches arrive in revision order, without gaps or duplicates, restricted to the watcher's
 *   key range; a batch is passed on as the same object when all its events are in range.
 * - Memory is bounded: when more than `maxPending` live batches wait unconsumed, the watcher
 *   is ended with StorageError 'Unavailable' (the consumer resumes from its last revision, as
 *   clients do after Kubernetes closes a slow watcher). The replayed history a watcher starts
 *   with does not count: it is shared with the ring.
 * - Never throws from offer(): a failing watcher only ends itself.
 */
import { StorageError } from '../errors.js';
import type { Watch, WatchBatch } from '../interface.js';

export interface KeyRange {
  readonly start: string;
  /** Exclusive end; '' = unbounded. */
  readonly end: string;
}

export class CacheWatcher implements Watch {
  private queue: WatchBatch[] = [];
  private head = 0;
  private backlog = 0;
  private wake: (() => void) | undefined;
  private failure: StorageError | undefined;
  private done = false;
  /** Revision of the last batch queued (events or progress). */
  lastRevision: number;
  lastDeliveryAt: number;
  lastProgressAt: number;

  constructor(
    readonly range: KeyRange,
    readonly progressNotify: boolean,
    private readonly maxPending: number,
    fromRevision: number,
    now: number,
    private readonly onEnd: (w: CacheWatcher) => void,
    signal?: AbortSignal,
  ) {
    this.lastRevision = fromRevision - 1;
    this.lastDeliveryAt = now;
    this.lastProgressAt = now;
    if (signal) {
      if (signal.aborted) this.close();
      else signal.addEventListener('abort', () => this.close(), { once: true });
    }
  }

  get ended(): boolean { return this.done || this.failure !== undefined; }

  /** Queues the history a new watcher starts with (not subject to maxPending). */
  replay(batches: readonly WatchBatch[]): void {
    for (const b of batches) {
      if (this.enqueue(b)) this.backlog++;
    }
  }

  /** A live batch from the cache. */
  offer(batch: WatchBatch, now: number): void {
    if (this.ended || batch.revision <= this.lastRevision) return;
    if (this.enqueue(batch)) {
      this.lastDeliveryAt = now;
      if (this.queue.length - this.head - this.backlog > this.maxPending) {
        this.fail(new StorageError('Unavailable', `watcher fell behind by more than ${this.maxPending} events and was closed`));
      }
    }
  }

  /**
   * Tells the watcher every event up to `revision` was offered (becomes a progress batch when
   * asked for); `repeat` sends one even when the revision did not move (periodic notification).
   */
  progress(revision: number, now: number, repeat = false): void {
    if (this.ended || revision < this.lastRevision || (revision === this.lastRevision && !repeat)) return;
    this.lastRevision = revision;
    if (!this.progressNotify) return;
    this.queue.push({ events: [], revision });
    this.lastProgressAt = now;
    this.lastDeliveryAt = now;
    this.notify();
  }

  fail(err: StorageError): void {
    if (this.ended) return;
    this.failure = err;
    this.release();
  }

  close(): void {
    if (this.done) return;
    this.done = true;
    this.release();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<WatchBatch> {
    try {
      for (;;) {
        if (this.done) return;
        if (this.head < this.queue.length) {
          const b = this.queue[this.head]!;
          this.queue[this.head++] = undefined as unknown as WatchBatch; // let the GC take it
          if (this.backlog > 0) this.backlog--;
          if (this.head > 256 && this.head * 2 > this.queue.length) { this.queue = this.queue.slice(this.head); this.head = 0; }
          yield b;
          continue;
        }
        if (this.failure) throw this.failure;
        await new Promise<void>((resolve) => { this.wake = resolve; });
      }
    } finally {
      this.close();
    }
  }

  private enqueue(batch: WatchBatch): boolean {
    const { start, end } = this.range;
    let events = batch.events;
    if (!events.every((e) => e.kv.key >= start && (end === '' || e.kv.key < end))) {
      events = events.filter((e) => e.kv.key >= start && (end === '' || e.kv.key < end));
    }
    this.lastRevision = batch.revision;
    if (events.length === 0) return false;
    this.queue.push(events === batch.events ? batch : { events, revision: batch.revision });
    this.notify();
    return true;
  }

  private release(): void {
    this.queue = [];
    this.head = 0;
    this.backlog = 0;
    this.notify();
    this.onEnd(this);
  }

  private notify(): void {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }
}

/**
 * One watcher of a watch cache. The cache pushes batches (shared, read-only objects) into its
 * queue; the consumer pulls them through async iteration, or takes them synchronously as they
 * arrive after calling push() (the fan-out fast path: no queue, no promise per batch).
 *
 * Contract:
 * - Batches arrive in revision order, without gaps or duplicates, restricted to the watcher's
 *   key range and to the revisions after its start (a batch of several revisions that began
 *   before it is cut); a batch is passed on as the same object when all its events are wanted.
 * - Memory is bounded: when more than `maxPending` live batches wait unconsumed, the watcher
 *   is ended with StorageError 'Unavailable' (the consumer resumes from its last revision, as
 *   clients do after Kubernetes closes a slow watcher). The replayed history a watcher starts
 *   with does not count: it is shared with the ring.
 * - Push mode: the consumer reports a full transport by returning false; batches delivered
 *   from then until resume() count as unconsumed, with the same maxPending bound. A consumer
 *   that throws ends the watcher ('Internal'). end() is called exactly once.
 * - Shared push work: consumers that carry a SharedDelivery with equal keys, on watchers of one
 *   range, get one prepare() per live batch between them (WatchCache.apply) and each its own
 *   deliver() of the result, under the same backpressure and maxPending rules as batch().
 * - Never throws from offer(): a failing watcher only ends itself.
 */
import { StorageError } from '../errors.js';
import type { Watch, WatchBatch } from '../interface.js';
import { eventsAfter } from './event-ring.js';

export interface KeyRange {
  readonly start: string;
  /** Exclusive end; '' = unbounded. */
  readonly end: string;
}

/** One string naming a range, so watchers with equal ranges can share work. */
export function rangeId(r: KeyRange): string {
  return `${r.start}\u0000${r.end}`;
}

/**
 * One string instance per distinct id among live watchers, so the fan-out compares ids by
 * identity (equal strings built apart would be compared character by character, touching both
 * for every watcher of every batch). Counted, so ids of ended watchers are let go.
 */
const canonicalIds = new Map<string, { id: string; refs: number }>();

function acquireId(s: string): string {
  const e = canonicalIds.get(s);
  if (e) { e.refs++; return e.id; }
  canonicalIds.set(s, { id: s, refs: 1 });
  return s;
}

function releaseId(s: string): void {
  const e = canonicalIds.get(s);
  if (e && --e.refs === 0) canonicalIds.delete(s);
}

/** A push-mode consumer of a watcher (see CacheWatcher.push). */
export interface BatchConsumer {
  /** One batch (in range; no events = progress). False: the transport is full until resume(). */
  batch(b: WatchBatch): boolean;
  /** The watcher ended: closed (undefined) or failed. Called once. */
  end(err: StorageError | undefined): void;
  /** The consumer's work on a live batch split into a shareable part and its own delivery. */
  shared?: SharedDelivery<unknown>;
}

/**
 * batch(b) split in two for a fan-out: `prepare(b)` is everything that depends only on the batch
 * and on `key` (converting, encoding); `sink.deliver(p)` the rest (writing to this consumer's
 * transport), called on the sink object itself so the fan-out touches only that object and the
 * transport per watcher. sink.deliver(prepare(b)) must do what batch(b) does for a live batch
 * with events. Consumers with equal keys on watchers of equal ranges share one prepare() per
 * batch, so the key names everything prepare depends on. prepare() may throw: those watchers
 * then get batch(b) as usual (each meets the failure its own way). It must not return
 * undefined. A deliver that throws ends its watcher quietly, as if closed.
 */
export interface SharedDelivery<P> {
  readonly key: string;
  prepare(b: WatchBatch): P;
  readonly sink: { deliver(p: P): boolean };
}

/** What a shared prepare() gave when it threw: deliver through batch() instead. */
export const UNSHARED: unique symbol = Symbol('unshared');

export class CacheWatcher implements Watch {
  private queue: WatchBatch[] = [];
  private head = 0;
  private backlog = 0;
  private wake: (() => void) | undefined;
  private failure: StorageError | undefined;
  private done = false;
  private consumer: BatchConsumer | undefined;
  /** Push mode: the consumer's transport is full (set by a false return, cleared by resume()). */
  private blocked = false;
  /** Push mode: live batches delivered while blocked. */
  private unconsumed = 0;
  private endSent = false;
  /** The ids were given back (release() runs once per way of ending). */
  private released = false;
  /** Revision of the last batch queued (events or progress). */
  lastRevision: number;
  /** rangeId(range), the one instance every live watcher of an equal range holds. */
  readonly rangeId: string;
  /** Push mode with a shared consumer: rangeId plus the SharedDelivery key, one instance per distinct value like rangeId (else undefined). */
  shareId: string | undefined;
  /** The trigger the cache indexes this watcher by (WatchOptions.trigger), if any. */
  trigger: { readonly id: string; readonly value: string } | undefined = undefined;
  /** Revision of the last batch handed over by offerPrepared (0: none). */
  lastShared = 0;
  private shared: SharedDelivery<unknown> | undefined;
  /** shared.sink, held directly: the fan-out's per-watcher call then reads one object less. */
  private sharedSink: { deliver(p: unknown): boolean } | undefined;
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
    this.rangeId = acquireId(rangeId(range));
    this.shareId = undefined;
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
      if (this.ended) return;
      if (this.enqueue(b, false) && !this.consumer) this.backlog++;
    }
  }

  /**
   * A live batch from the cache. `scoped`: the batch already restricted to this watcher's range
   * by the caller (null: nothing in range), so watchers sharing a range filter it once.
   */
  offer(batch: WatchBatch, now: number, scoped?: WatchBatch | null): void {
    if (this.ended || batch.revision <= this.lastRevision) return;
    const events = batch.events;
    if (events.length > 0 && events[0]!.kv.modRevision <= this.lastRevision) {
      // A batch of several revisions that began at or before this watcher's position (it
      // started inside the batch): only the later events are this watcher's.
      const after = eventsAfter(batch, this.lastRevision);
      if (after === null) { this.lastRevision = batch.revision; return; }
      batch = after;
      scoped = undefined;
    }
    if (this.enqueue(batch, true, scoped)) {
      this.lastDeliveryAt = now;
      if (this.consumer) return;
      if (this.queue.length - this.head - this.backlog > this.maxPending) {
        this.fail(new StorageError('Unavailable', `watcher fell behind by more than ${this.maxPending} events and was closed`));
      }
    }
  }

  /**
   * The shared part of this watcher's consumer for a batch already restricted to its range
   * (see SharedDelivery), or UNSHARED when prepare() threw. Only for watchers with a shareId.
   */
  prepare(scoped: WatchBatch): unknown {
    try {
      return this.shared!.prepare(scoped);
    } catch {
      return UNSHARED;
    }
  }

  /**
   * A live batch whose shared part was prepared (by this watcher or another with the same
   * shareId): as offer(), with the consumer's deliver(prepared) in place of batch(). Only for a
   * batch that began after this watcher's position (else offer() cuts it).
   */
  offerPrepared(batch: WatchBatch, now: number, prepared: unknown): void {
    if (this.ended || batch.revision <= this.lastRevision) return;
    this.lastRevision = batch.revision;
    this.lastShared = batch.revision;
    this.lastDeliveryAt = now;
    if (this.blocked && ++this.unconsumed > this.maxPending) {
      this.fail(new StorageError('Unavailable', `watcher fell behind by more than ${this.maxPending} events and was closed`));
      return;
    }
    let ok: boolean;
    try {
      ok = this.sharedSink!.deliver(prepared);
    } catch {
      this.close(); // the consumer's own transport failed: it ends itself, as with batch()
      return;
    }
    if (!ok) this.blocked = true;
  }

  /**
   * Tells the watcher every event up to `revision` was offered (becomes a progress batch when
   * asked for); `repeat` sends one even when the revision did not move (periodic notification).
   */
  progress(revision: number, now: number, repeat = false): void {
    if (this.ended || revision < this.lastRevision || (revision === this.lastRevision && !repeat)) return;
    this.lastRevision = revision;
    if (!this.progressNotify) return;
    this.lastProgressAt = now;
    this.lastDeliveryAt = now;
    if (this.consumer) { this.deliver({ events: [], revision }, false); return; }
    this.queue.push({ events: [], revision });
    this.notify();
  }

  /**
   * Switches to push delivery: batches already queued (the replayed history) go to `c` at once,
   * later ones as they arrive, synchronously. Use instead of iterating, never both. Returns
   * `resume`, to call when the consumer's transport has room again.
   */
  push(c: BatchConsumer): { resume(): void } {
    if (this.consumer) throw new StorageError('InvalidArgument', 'a watcher has one consumer');
    this.consumer = c;
    if (c.shared && !this.ended) {
      this.shared = c.shared;
      this.sharedSink = c.shared.sink;
      this.shareId = acquireId(`${this.rangeId}\u0001${c.shared.key}`);
    }
    const queued = this.queue.slice(this.head);
    this.queue = [];
    this.head = 0;
    this.backlog = 0;
    this.wake = undefined;
    for (const b of queued) {
      if (this.ended) break;
      this.deliver(b, false);
    }
    if (this.ended) this.endConsumer();
    return { resume: () => { this.blocked = false; this.unconsumed = 0; } };
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

  private enqueue(batch: WatchBatch, live: boolean, scoped?: WatchBatch | null): boolean {
    const b = scoped === undefined ? inRange(batch, this.range) : scoped;
    this.lastRevision = batch.revision;
    if (b === null) return false;
    if (this.consumer) { this.deliver(b, live); return true; }
    this.queue.push(b);
    this.notify();
    return true;
  }

  /** Push mode: hands one batch to the consumer, counting it against maxPending while blocked. */
  private deliver(b: WatchBatch, live: boolean): void {
    if (live && this.blocked && ++this.unconsumed > this.maxPending) {
      this.fail(new StorageError('Unavailable', `watcher fell behind by more than ${this.maxPending} events and was closed`));
      return;
    }
    let ok: boolean;
    try {
      ok = this.consumer!.batch(b);
    } catch (e) {
      this.fail(new StorageError('Internal', `watch consumer failed: ${(e as Error)?.message ?? String(e)}`, {}, { cause: e }));
      return;
    }
    if (!ok) this.blocked = true;
  }

  private endConsumer(): void {
    const c = this.consumer;
    if (!c || this.endSent) return;
    this.endSent = true;
    try {
      c.end(this.failure);
    } catch {
      // offer() and fail() never throw: the watcher is over either way
    }
  }

  private release(): void {
    if (!this.released) {
      this.released = true;
      releaseId(this.rangeId);
      if (this.shareId !== undefined) releaseId(this.shareId);
    }
    this.queue = [];
    this.head = 0;
    this.backlog = 0;
    this.notify();
    this.onEnd(this);
    this.endConsumer();
  }

  private notify(): void {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }
}

/** The batch restricted to `range`: the same object when every event is in it, null when none is. */
export function inRange(batch: WatchBatch, range: KeyRange): WatchBatch | null {
  const { start, end } = range;
  const inside = (k: string): boolean => k >= start && (end === '' || k < end);
  let events = batch.events;
  if (!events.every((e) => inside(e.kv.key))) events = events.filter((e) => inside(e.kv.key));
  if (events.length === 0) return null;
  return events === batch.events ? batch : { events, revision: batch.revision };
}

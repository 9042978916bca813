/**
 * Watches of the LevelDB backend.
 *
 * Contract: the backend calls `dispatch` with the events of each committed batch, in revision
 * order, synchronously right after the batch is durable and before its writers are acknowledged.
 * A watch starting in the past first replays history from a snapshot taken synchronously at
 * watch creation (up to the revision committed at that instant, H), buffering live events
 * (> H) meanwhile; then it turns live. So every watch sees each revision >= its start exactly
 * once, in order. Each watch has a bounded queue: a consumer that falls more than `queueLimit`
 * events behind gets its watch ended with StorageError 'Unavailable' (it resumes from its last
 * revision); history replay instead waits for the consumer, so a slow reader does not fail there.
 */
import type { Logger } from 'pino';
import type { Watch, WatchBatch, WatchEvent, WatchOptions } from '../interface.js';
import { StorageError } from '../errors.js';

export interface WatchSource {
  committedRevision(): number;
  compactedRevision(): number;
  /**
   * Opens a history replay of revisions [from, to] matching `match`. Must take its snapshot
   * synchronously (before returning) and release it when the iteration ends.
   */
  openHistory(from: number, to: number, match: (key: string) => boolean): AsyncIterable<WatchEvent[]>;
}

export interface WatchHubOptions {
  readonly log: Logger;
  /** Events a watch may hold undelivered before it is ended (default 10 000). */
  readonly queueLimit?: number;
  /** Progress notification period in ms (default 1000). */
  readonly progressIntervalMs?: number;
}

export class WatchHub {
  private readonly watchers = new Set<LevelWatch>();
  private readonly timer: NodeJS.Timeout;
  readonly queueLimit: number;

  constructor(private readonly source: WatchSource, readonly opts: WatchHubOptions) {
    this.queueLimit = opts.queueLimit ?? 10_000;
    this.timer = setInterval(() => this.progress(), opts.progressIntervalMs ?? 1000);
    this.timer.unref();
  }

  get size(): number {
    return this.watchers.size;
  }

  watch(key: string, opts: WatchOptions): Watch {
    const committed = this.source.committedRevision();
    const from = opts.fromRevision && opts.fromRevision > 0 ? opts.fromRevision : committed + 1;
    const w = new LevelWatch(this, key, opts, from);
    if (opts.signal?.aborted) {
      w.close();
      return w;
    }
    const compacted = this.source.compactedRevision();
    if (from < compacted) {
      w.fail(new StorageError('Compacted', `watch from revision ${from}: history before ${compacted} was compacted`, { compactRevision: compacted, currentRevision: committed }));
      return w;
    }
    this.watchers.add(w);
    if (from <= committed) {
      const history = this.source.openHistory(from, committed, (k) => w.matches(k));
      void w.catchUp(history);
    } else {
      w.goLive();
    }
    return w;
  }

  /** A watch that ends at once with `e` (the backend is closed or broken). */
  failedWatch(e: StorageError): Watch {
    const w = new LevelWatch(this, '', {}, 0);
    w.fail(e);
    return w;
  }

  dispatch(events: readonly WatchEvent[]): void {
    for (const w of this.watchers) w.offer(events);
  }

  remove(w: LevelWatch): void {
    this.watchers.delete(w);
  }

  closeAll(): void {
    clearInterval(this.timer);
    for (const w of [...this.watchers]) w.fail(new StorageError('Unavailable', 'the storage backend is closing'));
  }

  private progress(): void {
    const rev = this.source.committedRevision();
    for (const w of this.watchers) w.progress(rev);
  }
}

export class LevelWatch implements Watch {
  private queue: WatchBatch[] = [];
  private queued = 0;
  private pendingLive: WatchEvent[] = [];
  private live = false;
  private ended = false;
  private error: StorageError | undefined;
  private wake: (() => void) | undefined;
  private drained: (() => void) | undefined;
  private lastRev: number;
  private readonly prefix: boolean;
  private readonly progressNotify: boolean;
  private readonly onAbort = (): void => this.close();

  constructor(private readonly hub: WatchHub, private readonly key: string, opts: WatchOptions, private readonly from: number) {
    this.prefix = opts.prefix ?? false;
    this.progressNotify = opts.progressNotify ?? false;
    this.lastRev = from - 1;
    this.signal = opts.signal;
    this.signal?.addEventListener('abort', this.onAbort, { once: true });
  }

  private readonly signal: AbortSignal | undefined;

  matches(k: string): boolean {
    return this.prefix ? k.startsWith(this.key) : k === this.key;
  }

  /** Replays history, then delivers what arrived live meanwhile and turns live. */
  async catchUp(history: AsyncIterable<WatchEvent[]>): Promise<void> {
    try {
      for await (const events of history) {
        if (this.ended) return;
        this.push(events, true);
        while (!this.ended && this.queued >= this.hub.queueLimit / 2) {
          await new Promise<void>((resolve) => { this.drained = resolve; });
        }
        if (this.ended) return;
      }
      if (this.ended) return;
      this.goLive();
    } catch (err) {
      this.hub.opts.log.warn({ err, key: this.key }, 'leveldb watch history replay failed');
      this.fail(err instanceof StorageError ? err : new StorageError('Internal', `watch history replay failed: ${String(err)}`, {}, { cause: err }));
    }
  }

  goLive(): void {
    this.live = true;
    const pending = this.pendingLive;
    this.pendingLive = [];
    // Already bounded by the pendingLive limit; do not count it against the live queue limit.
    if (pending.length) this.push(pending, true);
  }

  offer(events: readonly WatchEvent[]): void {
    if (this.ended) return;
    // Batches are read-only: when every event is this watch's (a prefix watch over the whole
    // store, as the watch cache's feed is), the batch's array is passed on without a copy.
    let mine: readonly WatchEvent[] = events;
    for (let i = 0; i < events.length; i++) {
      const e = events[i]!;
      if (e.kv.modRevision >= this.from && this.matches(e.kv.key)) continue;
      mine = events.slice(0, i).concat(events.slice(i + 1).filter((x) => x.kv.modRevision >= this.from && this.matches(x.kv.key)));
      break;
    }
    if (mine.length === 0) return;
    if (!this.live) {
      for (const e of mine) this.pendingLive.push(e);
      if (this.pendingLive.length > this.hub.queueLimit) this.overflow();
      return;
    }
    this.push(mine, false);
  }

  progress(rev: number): void {
    if (!this.live || this.ended || !this.progressNotify || this.queue.length > 0) return;
    if (rev < this.lastRev || rev < this.from - 1) return;
    this.lastRev = rev;
    this.queue.push({ events: [], revision: rev });
    this.wakeUp();
  }

  private push(events: readonly WatchEvent[], fromHistory: boolean): void {
    this.queue.push({ events, revision: events[events.length - 1]!.kv.modRevision });
    this.lastRev = events[events.length - 1]!.kv.modRevision;
    this.queued += events.length;
    if (!fromHistory && this.queued > this.hub.queueLimit) {
      this.overflow();
      return;
    }
    this.wakeUp();
  }

  private overflow(): void {
    this.hub.opts.log.warn({ key: this.key, queued: this.queued }, 'leveldb watch consumer too slow; ending the watch');
    this.fail(new StorageError('Unavailable', `watch on ${this.key} ended: the consumer fell more than ${this.hub.queueLimit} events behind`));
  }

  fail(e: StorageError): void {
    if (this.ended) return;
    this.error = e;
    this.queue = [];
    this.queued = 0;
    this.end();
  }

  close(): void {
    this.end();
  }

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    this.pendingLive = [];
    this.hub.remove(this);
    this.signal?.removeEventListener('abort', this.onAbort);
    this.wakeUp();
    const d = this.drained;
    this.drained = undefined;
    d?.();
  }

  private wakeUp(): void {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  private async next(): Promise<IteratorResult<WatchBatch>> {
    for (;;) {
      const b = this.queue.shift();
      if (b) {
        this.queued -= b.events.length;
        if (this.drained && this.queued < this.hub.queueLimit / 2) {
          const d = this.drained;
          this.drained = undefined;
          d();
        }
        return { done: false, value: b };
      }
      if (this.error) {
        const e = this.error;
        this.error = undefined;
        throw e;
      }
      if (this.ended) return { done: true, value: undefined };
      await new Promise<void>((resolve) => { this.wake = resolve; });
    }
  }

  [Symbol.asyncIterator](): AsyncIterator<WatchBatch> {
    return {
      next: () => this.next(),
      return: async () => {
        this.close();
        return { done: true, value: undefined };
      },
    };
  }
}

/**
 * One backend watch shared by every watch cache on a backend.
 *
 * Why one watch per backend rather than one per resource: the feed's position is then the
 * backend's revision itself — after it has delivered revision R, every cache it feeds is known
 * to be complete up to R, even resources that had no event in a long time. That is what makes
 * consistent reads (resourceVersion unset) servable from the cache: ask the backend for its
 * current revision (cheap), wait until the feed reaches it, answer from memory. With one watch
 * per resource the same needs backend progress notifications on demand, which etcd gives only
 * through an extra request per read and LevelDB not at all.
 *
 * Contract:
 * - `revision` only grows while the feed runs; it is the revision every ready sink reflects.
 * - Batches reach sinks in revision order, synchronously, one batch at a time.
 * - A lost backend watch is resumed from revision+1 with capped exponential backoff (it never
 *   gives up while open: a cache that stops syncing would serve stale data). A compacted
 *   resume point (fell behind compaction) makes every sink re-list (`resync`).
 */
import { pino, type Logger } from 'pino';
import { isStorageError } from '../errors.js';
import { type Backend, type WatchBatch, type WatchEvent } from '../interface.js';

export interface FeedSink {
  /** Keys under this prefix belong to the sink. */
  readonly prefix: string;
  /** Rebuild from a list at `revision`; batches after it follow through onBatch. */
  resync(revision: number): void;
  onBatch(batch: WatchBatch): void;
}

interface Waiter { readonly revision: number; readonly resolve: (ok: boolean) => void; timer: NodeJS.Timeout | undefined; }

export class WatchFeed {
  private readonly sinks = new Set<FeedSink>();
  /** Sinks by prefix, when that finds a key's sink exactly (see reindex). */
  private byPrefix: Map<string, FeedSink> | undefined;
  private waiters: Waiter[] = [];
  private running: Promise<void> | undefined;
  private readonly abort = new AbortController();
  private rev = 0;
  private revInFlight: Promise<number> | undefined;
  private revNext: Promise<number> | undefined;
  private started = false;
  private readonly log: Logger;

  constructor(readonly inner: Backend, readonly rootPrefix: string, opts: { log?: Logger } = {}) {
    this.log = opts.log ?? pino({ level: 'silent' });
  }

  /** The revision every ready sink reflects (0 before the first start). */
  get revision(): number { return this.rev; }
  get isStarted(): boolean { return this.started; }

  attach(sink: FeedSink): void {
    this.sinks.add(sink);
    this.reindex();
    if (this.started) sink.resync(this.rev);
    this.running ??= this.run().catch((e: unknown) => this.log.error({ err: e }, 'watch feed stopped'));
  }

  detach(sink: FeedSink): void {
    this.sinks.delete(sink);
    this.reindex();
  }

  /**
   * The backend's current revision, read by a request sent after this call began (so a read
   * waiting for it is linearizable), shared by every caller that arrives while the previous
   * request is in flight: at most one revision request per round trip, however many reads
   * run concurrently (the consistent-read-from-cache cost on etcd).
   */
  freshRevision(): Promise<number> {
    if (!this.revInFlight) return this.startRevisionRequest();
    this.revNext ??= this.revInFlight.then(noop, noop).then(() => {
      this.revNext = undefined;
      return this.startRevisionRequest();
    });
    return this.revNext;
  }

  private startRevisionRequest(): Promise<number> {
    const p: Promise<number> = this.inner.currentRevision().finally(() => {
      if (this.revInFlight === p) this.revInFlight = undefined;
    });
    this.revInFlight = p;
    return p;
  }

  /** Resolves true once revision >= r, false at the deadline or when closed. */
  waitFor(r: number, timeoutMs: number): Promise<boolean> {
    if (this.started && this.rev >= r) return Promise.resolve(true);
    if (this.abort.signal.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      const w: Waiter = { revision: r, resolve, timer: undefined };
      w.timer = setTimeout(() => { this.waiters = this.waiters.filter((x) => x !== w); resolve(false); }, timeoutMs);
      this.waiters.push(w);
    });
  }

  async close(): Promise<void> {
    this.abort.abort();
    for (const w of this.waiters) { clearTimeout(w.timer); w.resolve(false); }
    this.waiters = [];
    await this.running;
  }

  private async run(): Promise<void> {
    const signal = this.abort.signal;
    let needResync = true;
    let failures = 0;
    while (!signal.aborted) {
      try {
        if (needResync) {
          this.rev = await this.inner.currentRevision();
          this.started = true;
          for (const s of this.sinks) s.resync(this.rev);
          this.wakeWaiters();
          needResync = false;
        }
        const watch = this.inner.watch(this.rootPrefix, {
          prefix: true, fromRevision: this.rev + 1, progressNotify: true, signal,
        });
        for await (const batch of watch) {
          failures = 0;
          this.dispatch(batch);
        }
        if (signal.aborted) return;
        throw new Error('backend watch ended');
      } catch (e) {
        if (signal.aborted) return;
        if (isStorageError(e, 'Compacted')) {
          this.log.warn({ revision: this.rev }, 'watch feed fell behind compaction; caches re-list');
          needResync = true;
        } else {
          this.log.warn({ err: e, revision: this.rev }, 'backend watch lost; resuming');
        }
        failures++;
        const delay = Math.min(30_000, 50 * 2 ** Math.min(failures, 10)) * (0.5 + Math.random() / 2);
        await sleep(delay, signal);
      }
    }
  }

  private dispatch(batch: WatchBatch): void {
    if (batch.revision <= this.rev) return; // duplicate after a resume
    if (batch.events.length > 0) {
      if (this.sinks.size === 1 || batch.events.length === 1) {
        const sink = this.sinkFor(batch.events[0]!.kv.key);
        if (sink && batch.events.every((e) => e.kv.key.startsWith(sink.prefix))) sink.onBatch(batch);
        else this.split(batch);
      } else {
        this.split(batch);
      }
    }
    this.rev = batch.revision;
    if (this.waiters.length) this.wakeWaiters();
  }

  private split(batch: WatchBatch): void {
    const bySink = new Map<FeedSink, WatchEvent[]>();
    for (const e of batch.events) {
      const s = this.sinkFor(e.kv.key);
      if (!s) continue;
      const list = bySink.get(s);
      if (list) list.push(e); else bySink.set(s, [e]);
    }
    for (const [s, events] of bySink) s.onBatch({ events, revision: batch.revision });
  }

  private sinkFor(key: string): FeedSink | undefined {
    const index = this.byPrefix;
    if (index) {
      // The sink, if any, owns the key up to its first or second '/' after the root.
      const a = key.indexOf('/', this.rootPrefix.length);
      if (a < 0 || !key.startsWith(this.rootPrefix)) return undefined;
      const s = index.get(key.slice(0, a + 1));
      if (s) return s;
      const b = key.indexOf('/', a + 1);
      return b < 0 ? undefined : index.get(key.slice(0, b + 1));
    }
    for (const s of this.sinks) if (key.startsWith(s.prefix)) return s;
    return undefined;
  }

  /**
   * Finding an event's sink by scanning every sink costs one prefix test per resource per event
   * (dozens in an API server). With many sinks whose prefixes are '<root><seg>/' or
   * '<root><seg>/<seg>/' (the object store's resource prefixes) and none a prefix of another, the
   * owner of a key is found by two map lookups instead; otherwise the scan stays.
   */
  private reindex(): void {
    this.byPrefix = undefined;
    if (this.sinks.size < 4) return;
    const index = new Map<string, FeedSink>();
    for (const s of this.sinks) {
      if (!s.prefix.startsWith(this.rootPrefix) || !s.prefix.endsWith('/')) return;
      const slashes = s.prefix.slice(this.rootPrefix.length).split('/').length - 1;
      if (slashes < 1 || slashes > 2 || index.has(s.prefix)) return;
      index.set(s.prefix, s);
    }
    for (const p of index.keys()) for (const q of index.keys()) if (p !== q && q.startsWith(p)) return;
    this.byPrefix = index;
  }

  private wakeWaiters(): void {
    const keep: Waiter[] = [];
    for (const w of this.waiters) {
      if (this.rev >= w.revision) { clearTimeout(w.timer); w.resolve(true); } else keep.push(w);
    }
    this.waiters = keep;
  }
}

function noop(): void { /* settle only */ }

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done(): void { clearTimeout(t); signal.removeEventListener('abort', done); resolve(); }
    signal.addEventListener('abort', done, { once: true });
  });
}

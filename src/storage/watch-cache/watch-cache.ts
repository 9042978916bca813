/**
 * The watch cache: a Backend wrapper that keeps, for the keys under one prefix (one resource),
 * an in-memory copy of the current values and a history of recent events (EventRing), fed by
 * a WatchFeed (one backend watch shared by all caches of a backend).
 *
 * It implements Backend, so it passes the same conformance suite as the backends:
 * - writes, compaction and revision queries go to the inner backend;
 * - reads without a revision are consistent: the inner backend's current revision is fetched
 *   and the read is answered from memory once the feed has reached it (falling back to the
 *   inner backend if that takes longer than `consistentWaitMs`);
 * - reads at an explicit revision are answered from memory when it is the cache's revision, or
 *   an earlier, uncompacted one after which no event in the history touched the keys read;
 *   else by the inner backend (history read);
 * - watches are served from the history ring; a start revision older than the ring either
 *   fails with 'Compacted' (`olderThanHistory: 'expired'`, what the object store uses: a 410
 *   for the client, as kube-apiserver's cacher does) or is served by an inner watch
 *   (`'backend'`, the default, exact Backend semantics).
 * Beyond Backend, readNotOlderThan() serves resourceVersion '0' and NotOlderThan reads.
 *
 * Values are kept as stored bytes (KeyValue); batches are shared, read-only objects handed to
 * every watcher, so a consumer can key per-event work (decoding, serialization) on identity.
 */
import { pino, type Logger } from 'pino';
import { StorageError } from '../errors.js';
import {
  prefixEnd, type Backend, type DeleteResult, type KeyValue, type RangeOptions, type RangeResult,
  type ReadOptions, type Watch, type WatchBatch, type WatchOptions, type WatchTrigger, type WriteOptions, type WriteResult,
} from '../interface.js';
import { CacheWatcher, inRange, UNSHARED, type KeyRange } from './cache-watcher.js';
import { EventRing } from './event-ring.js';
import { SortedStore } from './sorted-store.js';
import { WatchFeed, type FeedSink } from './watch-feed.js';

/** How long a cache read waits for the initial list before failing with Unavailable. */
const READY_TIMEOUT_MS = 30_000;

/** One trigger id's watchers (see WatchCache.triggered). */
interface TriggerIndex {
  readonly valuesOf: WatchTrigger['valuesOf'];
  readonly byValue: Map<string, Set<CacheWatcher>>;
}

export interface WatchCacheOptions {
  /** Keys cached: every key starting with it (e.g. '/registry/pods/'). */
  readonly prefix: string;
  /** The shared feed; default: a private feed watching `prefix` (closed with the cache). */
  readonly feed?: WatchFeed;
  /** Minimum events kept (--default-watch-cache-size / --watch-cache-sizes); default 100. */
  readonly minEvents?: number;
  /** Hard cap on events kept; default max(102 400, minEvents). */
  readonly maxEvents?: number;
  /** History kept regardless of minEvents (up to maxEvents); default 75 s. */
  readonly historyWindowMs?: number;
  /** Live batches a watcher may leave unconsumed before it is closed; default 1000. */
  readonly maxPendingPerWatcher?: number;
  readonly olderThanHistory?: 'expired' | 'backend';
  /** Idle time after which progress-notify watchers get a progress batch; default 1 s. */
  readonly progressIdleMs?: number;
  /** Longest time between progress batches to a progress-notify watcher; default 60 s. */
  readonly progressMaxIntervalMs?: number;
  /** How long a read waits for the cache to reach a revision; default 3 s. */
  readonly consistentWaitMs?: number;
  /** Close the inner backend with the cache (standalone use); default false. */
  readonly ownsInner?: boolean;
  readonly now?: () => number;
  readonly log?: Logger;
}

export class WatchCache implements Backend, FeedSink {
  readonly name: string;
  readonly prefix: string;
  private readonly end: string;
  private readonly feed: WatchFeed;
  private readonly ownsFeed: boolean;
  private readonly store = new SortedStore();
  private readonly ring: EventRing;
  private readonly watchers = new Set<CacheWatcher>();
  /** The watchers without a trigger, in registration order: the ones apply() offers every batch. */
  private readonly untriggered = new Set<CacheWatcher>();
  /**
   * Watchers with a trigger (WatchOptions.trigger), also in `watchers`: per trigger id, its
   * valuesOf and the watchers by the value they want. apply() offers a batch only to those
   * whose value one of its events has, so a node agent's pod watch costs nothing for the pods
   * of other nodes.
   */
  private readonly triggered = new Map<string, TriggerIndex>();
  private pending: WatchBatch[] | undefined = [];
  private syncGeneration = 0;
  private readyWaiters: Array<() => void> = [];
  private closed = false;
  private readonly timer: NodeJS.Timeout;
  private readonly now: () => number;
  private readonly log: Logger;
  private readonly o: Required<Pick<WatchCacheOptions, 'maxPendingPerWatcher' | 'olderThanHistory' | 'progressIdleMs' | 'progressMaxIntervalMs' | 'consistentWaitMs' | 'ownsInner'>>;

  constructor(readonly inner: Backend, opts: WatchCacheOptions) {
    if (!opts.prefix) throw new StorageError('InvalidArgument', 'watch cache needs a key prefix');
    this.name = `watchcache(${inner.name})`;
    this.prefix = opts.prefix;
    this.end = prefixEnd(opts.prefix);
    this.now = opts.now ?? Date.now;
    this.log = opts.log ?? pino({ level: 'silent' });
    this.o = {
      maxPendingPerWatcher: opts.maxPendingPerWatcher ?? 1000,
      olderThanHistory: opts.olderThanHistory ?? 'backend',
      progressIdleMs: opts.progressIdleMs ?? 1000,
      progressMaxIntervalMs: opts.progressMaxIntervalMs ?? 60_000,
      consistentWaitMs: opts.consistentWaitMs ?? 3000,
      ownsInner: opts.ownsInner ?? false,
    };
    const minEvents = Math.max(1, opts.minEvents ?? 100);
    this.ring = new EventRing({
      minEvents,
      maxEvents: Math.max(opts.maxEvents ?? 102_400, minEvents),
      windowMs: opts.historyWindowMs ?? 75_000,
      now: this.now,
    }, 1);
    this.ownsFeed = !opts.feed;
    this.feed = opts.feed ?? new WatchFeed(inner, opts.prefix, { log: this.log });
    this.timer = setInterval(() => this.tick(), Math.min(this.o.progressIdleMs, 1000));
    this.timer.unref?.();
    this.feed.attach(this);
  }

  /** True once the initial list is loaded. */
  get ready(): boolean { return this.pending === undefined && this.feed.isStarted; }
  /** The revision the cached state reflects (valid when ready). */
  get revision(): number { return this.feed.revision; }
  /** Events currently held in the history ring. */
  get historyLength(): number { return this.ring.length; }
  /** The oldest revision a watch can start from. */
  get historyStart(): number { return this.ring.startRevision(); }
  get watcherCount(): number { return this.watchers.size; }
  /** Watchers kept in a trigger index (see `triggered`). */
  get triggeredWatcherCount(): number { return this.watchers.size - this.untriggered.size; }

  // ---- FeedSink ----

  resync(revision: number): void {
    const generation = ++this.syncGeneration;
    this.pending = [];
    for (const w of this.watchers) w.fail(new StorageError('Unavailable', 'watch cache re-listed; resume the watch'));
    this.load(revision, generation).catch((e: unknown) => this.log.error({ err: e, prefix: this.prefix }, 'watch cache load failed'));
  }

  onBatch(batch: WatchBatch): void {
    if (this.pending) { this.pending.push(batch); return; }
    this.apply(batch);
  }

  // ---- Backend: reads ----

  async get(key: string, opts: ReadOptions = {}): Promise<{ kv: KeyValue | undefined; revision: number }> {
    if (!this.owns(key)) return this.inner.get(key, opts);
    const served = await this.serve(opts.revision, { start: key, end: key + '\u0000' }, (at) => ({ kv: this.store.get(key), revision: at }));
    return served ?? this.inner.get(key, opts);
  }

  async range(key: string, opts: RangeOptions = {}): Promise<RangeResult> {
    const r = this.keyRange(key, opts);
    if (!r) return this.inner.range(key, opts);
    const served = await this.serve(opts.revision, r, (at) => this.rangeNow(r, opts, at));
    return served ?? this.inner.range(key, opts);
  }

  /**
   * Reads from memory once the cache has reached `minRevision` (0: any state once loaded):
   * the resourceVersion '0' and NotOlderThan semantics. Fails with FutureRevision when the
   * cache does not reach it within consistentWaitMs.
   */
  async readNotOlderThan(key: string, opts: RangeOptions, minRevision: number): Promise<RangeResult> {
    const r = this.keyRange(key, opts);
    if (!r) throw new StorageError('InvalidArgument', `key ${key} is outside the cached prefix ${this.prefix}`);
    const deadline = this.now() + this.o.consistentWaitMs;
    for (;;) {
      // Checked and read in one synchronous step: a re-list cannot slip in between.
      if (this.ready && this.revision >= minRevision) return this.rangeNow(r, opts, this.revision);
      if (!this.ready) { await this.waitReady(); continue; }
      const left = deadline - this.now();
      if (left <= 0 || !(await this.feed.waitFor(minRevision, left))) {
        throw new StorageError('FutureRevision', `Too large resource version: ${minRevision}, current: ${this.revision}`,
          { currentRevision: this.revision });
      }
    }
  }

  /**
   * The entry under `key` read without a promise (undefined: no such key): as the cache stands
   * (what readNotOlderThan(key, {}, 0) gives), or with `consistent` what get(key) gives, which
   * the cache can only say when its backend tells its current revision at once and the cache
   * has reached it. Null when the cache cannot say: not ready, behind, or a key outside it.
   */
  peek(key: string, consistent = false): KeyValue | undefined | null {
    if (!this.ready || !this.owns(key)) return null;
    if (consistent) {
      const now = this.inner.currentRevisionNow?.();
      if (now === undefined || this.revision < now) return null;
    }
    return this.store.get(key);
  }

  /**
   * How many keys lie under `prefix`, as the cache stands (what readNotOlderThan(prefix,
   * { prefix: true }, 0) would list), read without a promise. Null when the cache cannot say:
   * not ready, or a prefix outside it.
   */
  peekCount(prefix: string): number | null {
    if (!this.ready || !prefix.startsWith(this.prefix)) return null;
    return this.store.count(prefix, prefixEnd(prefix));
  }

  // ---- Backend: writes and revisions pass through ----

  create(key: string, value: Buffer, opts?: WriteOptions): Promise<WriteResult> { return this.inner.create(key, value, opts); }
  update(key: string, value: Buffer, expectedModRevision: number, opts?: WriteOptions): Promise<WriteResult> {
    return this.inner.update(key, value, expectedModRevision, opts);
  }
  delete(key: string, expectedModRevision?: number, opts?: { signal?: AbortSignal }): Promise<DeleteResult> {
    return this.inner.delete(key, expectedModRevision, opts);
  }
  compact(revision: number): Promise<void> { return this.inner.compact(revision); }
  compactedRevision(): Promise<number> { return this.inner.compactedRevision(); }
  currentRevision(): Promise<number> { return this.inner.currentRevision(); }

  // ---- Backend: watch ----

  watch(key: string, opts: WatchOptions = {}): Watch {
    const range: KeyRange = opts.prefix ? { start: key, end: prefixEnd(key) } : { start: key, end: key + '\u0000' };
    if (!this.owns(key) || (opts.prefix && !key.startsWith(this.prefix))) return this.inner.watch(key, opts);
    const from = opts.fromRevision ?? 0;
    const w = new CacheWatcher(range, opts.progressNotify ?? false, this.o.maxPendingPerWatcher,
      from > 0 ? from : 1, this.now(), (x) => this.forget(x), opts.signal);
    // Pin "now" before any later write can land (the call starts synchronously).
    const current = from > 0 ? Promise.resolve(from - 1) : this.inner.currentRevision();
    this.startWatcher(w, current, key, opts).catch((e: unknown) => {
      w.fail(e instanceof StorageError ? e : new StorageError('Internal', (e as Error)?.message ?? String(e), {}, { cause: e }));
    });
    return w;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    this.feed.detach(this);
    for (const w of [...this.watchers]) w.close();
    for (const r of this.readyWaiters) r();
    this.readyWaiters = [];
    if (this.ownsFeed) await this.feed.close();
    if (this.o.ownsInner) await this.inner.close();
  }

  // ---- internals ----

  private async startWatcher(w: CacheWatcher, current: Promise<number>, key: string, opts: WatchOptions): Promise<void> {
    const after = await current;
    await this.waitReady(0);
    if (w.ended) return;
    const from = after + 1;
    if (this.o.olderThanHistory === 'backend') {
      // Exact Backend semantics: history below the backend's compaction point is gone even if
      // the ring still holds it.
      const compacted = await this.inner.compactedRevision();
      if (from < compacted) {
        throw new StorageError('Compacted', `required revision ${from} has been compacted (compaction point ${compacted})`,
          { currentRevision: this.revision, compactRevision: compacted });
      }
      if (w.ended) return;
    }
    if (from < this.ring.startRevision()) {
      if (this.o.olderThanHistory === 'backend') return this.pipeFromInner(w, key, opts, from);
      throw new StorageError('Compacted', `too old resource version: ${from - 1} (${this.ring.startRevision() - 1})`,
        { currentRevision: this.revision, compactRevision: this.ring.startRevision() - 1, beforeHistory: true });
    }
    if (!this.ready) throw new StorageError('Unavailable', 'watch cache is re-listing; resume the watch');
    // Synchronous from here: no batch can slip between the replay and the registration.
    w.lastRevision = from - 1;
    w.replay(this.ring.since(from));
    if (this.revision > w.lastRevision) w.progress(this.revision, this.now());
    if (!w.ended) this.register(w, opts.trigger);
  }

  private register(w: CacheWatcher, trigger: WatchTrigger | undefined): void {
    this.watchers.add(w);
    if (!trigger) { this.untriggered.add(w); return; }
    let index = this.triggered.get(trigger.id);
    if (!index) this.triggered.set(trigger.id, index = { valuesOf: trigger.valuesOf, byValue: new Map() });
    let set = index.byValue.get(trigger.value);
    if (!set) index.byValue.set(trigger.value, set = new Set());
    set.add(w);
    w.trigger = { id: trigger.id, value: trigger.value };
  }

  private forget(w: CacheWatcher): void {
    this.watchers.delete(w);
    this.untriggered.delete(w);
    const t = w.trigger;
    if (!t) return;
    const index = this.triggered.get(t.id);
    const set = index?.byValue.get(t.value);
    if (!index || !set) return;
    set.delete(w);
    if (set.size === 0) index.byValue.delete(t.value);
    if (index.byValue.size === 0) this.triggered.delete(t.id);
  }

  private async pipeFromInner(w: CacheWatcher, key: string, opts: WatchOptions, from: number): Promise<void> {
    const ac = new AbortController();
    const inner = this.inner.watch(key, { prefix: opts.prefix, fromRevision: from, progressNotify: opts.progressNotify, signal: ac.signal });
    try {
      w.lastRevision = from - 1;
      for await (const b of inner) {
        if (w.ended) break;
        if (b.events.length === 0) w.progress(b.revision, this.now()); else w.offer(b, this.now());
      }
    } finally {
      ac.abort();
      inner.close();
    }
  }

  private async load(revision: number, generation: number): Promise<void> {
    let failures = 0;
    for (;;) {
      if (this.closed || generation !== this.syncGeneration) return;
      try {
        const kvs: KeyValue[] = [];
        let after: string | undefined;
        for (;;) {
          const page = await this.inner.range(this.prefix, { prefix: true, revision, after, limit: 10_000 });
          kvs.push(...page.kvs);
          if (!page.more || page.kvs.length === 0) break;
          after = page.kvs[page.kvs.length - 1]!.key;
        }
        if (this.closed || generation !== this.syncGeneration) return;
        this.store.clear();
        for (const kv of kvs) this.store.put(kv);
        this.ring.reset(revision + 1);
        const pending = this.pending ?? [];
        this.pending = undefined;
        for (const b of pending) if (b.revision > revision) this.apply(b);
        const waiters = this.readyWaiters;
        this.readyWaiters = [];
        for (const r of waiters) r();
        return;
      } catch (e) {
        failures++;
        this.log.warn({ err: e, prefix: this.prefix, revision }, 'watch cache list failed; retrying');
        if (failures >= 3 && e instanceof StorageError && e.code === 'Compacted') {
          // The list revision is gone: list at the feed's position, keep only later batches.
          revision = this.feed.revision;
          this.pending = (this.pending ?? []).filter((b) => b.revision > revision);
        }
        await new Promise((r) => setTimeout(r, Math.min(5000, 50 * 2 ** Math.min(failures, 7))));
      }
    }
  }

  private apply(batch: WatchBatch): void {
    for (const e of batch.events) {
      if (e.type === 'PUT') this.store.put(e.kv); else this.store.delete(e.kv.key);
    }
    this.ring.push(batch);
    const now = this.now();
    /** The batch's first revision (a batch may hold several: the embedded store's group commit). */
    const first = batch.events.length > 0 ? batch.events[0]!.kv.modRevision : batch.revision;
    // Watchers of one range (one namespace, say) share the range check of each batch, and
    // push consumers that say so share their preparation too (converting, encoding), so each
    // watcher's own cost is its transport write. Watchers of one kind tend to be registered
    // together, so the last range and share are remembered before the maps are asked.
    let scoped: Map<string, WatchBatch | null> | undefined;
    let prepared: Map<string, unknown> | undefined;
    let lastRange = '';
    let lastScoped: WatchBatch | null = null;
    let lastShare = '';
    let lastPrepared: unknown;
    // Watchers with a trigger are not in this loop: applyTriggered offers them only their events.
    for (const w of this.untriggered) {
      if (w.ended || batch.revision <= w.lastRevision) continue;
      let b: WatchBatch | null | undefined;
      if (w.rangeId === lastRange) b = lastScoped;
      else {
        scoped ??= new Map();
        b = scoped.get(w.rangeId);
        if (b === undefined) { b = inRange(batch, w.range); scoped.set(w.rangeId, b); }
        lastRange = w.rangeId;
        lastScoped = b;
      }
      const share = w.shareId;
      // A watcher whose position lies inside the batch (it started there) gets only the events
      // after it, through offer(), so not the shared preparation of the whole batch.
      if (share !== undefined && b !== null && first > w.lastRevision) {
        let p: unknown;
        if (share === lastShare) p = lastPrepared;
        else {
          prepared ??= new Map();
          p = prepared.get(share);
          if (p === undefined) { p = w.prepare(b); prepared.set(share, p); }
          lastShare = share;
          lastPrepared = p;
        }
        if (p !== UNSHARED) { w.offerPrepared(batch, now, p); continue; }
      }
      w.offer(batch, now, b);
    }
    if (this.triggered.size > 0) this.applyTriggered(batch, now);
  }

  /**
   * The fan-out to watchers with a trigger: per index, the batch's values (each event's object
   * after and before the change), then the watchers wanting one of them. They have filters of
   * their own, so nothing is shared but the range check. Should the values not be had (a value
   * that does not decode), every watcher of the index gets the batch and meets the failure itself.
   */
  private applyTriggered(batch: WatchBatch, now: number): void {
    let scoped: Map<string, WatchBatch | null> | undefined;
    const offer = (w: CacheWatcher): void => {
      if (w.ended || batch.revision <= w.lastRevision) return;
      scoped ??= new Map();
      let b = scoped.get(w.rangeId);
      if (b === undefined) { b = inRange(batch, w.range); scoped.set(w.rangeId, b); }
      w.offer(batch, now, b);
    };
    for (const index of this.triggered.values()) {
      let values: Set<string | undefined> | undefined = new Set();
      try {
        for (const e of batch.events) for (const v of index.valuesOf(e)) values.add(v);
      } catch {
        values = undefined;
      }
      if (values === undefined) {
        for (const set of index.byValue.values()) for (const w of set) offer(w);
        continue;
      }
      for (const v of values) {
        const set = v === undefined ? undefined : index.byValue.get(v);
        if (set) for (const w of set) offer(w);
      }
    }
  }

  private tick(): void {
    if (!this.ready) return;
    this.ring.trim();
    const now = this.now();
    const rev = this.revision;
    for (const w of this.watchers) {
      if (!w.progressNotify || w.lastRevision > rev) continue;
      if (now - w.lastDeliveryAt >= this.o.progressIdleMs || now - w.lastProgressAt >= this.o.progressMaxIntervalMs) w.progress(rev, now, true);
    }
  }

  /** Waits for the initial list; fails with Unavailable after `timeoutMs` (0: no deadline) or on close. */
  private waitReady(timeoutMs = READY_TIMEOUT_MS): Promise<void> {
    if (this.closed) return Promise.reject(new StorageError('Unavailable', 'watch cache is closed'));
    if (this.ready) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const done = (): void => {
        clearTimeout(timer);
        if (this.closed) reject(new StorageError('Unavailable', 'watch cache is closed')); else resolve();
      };
      if (timeoutMs > 0) {
        timer = setTimeout(() => {
          this.readyWaiters = this.readyWaiters.filter((w) => w !== done);
          reject(new StorageError('Unavailable', `watch cache for ${this.prefix} is not ready yet`));
        }, timeoutMs);
      }
      this.readyWaiters.push(done);
    });
  }

  /**
   * Runs `read` (of the keys in `r`) against memory when the cache can answer: for an explicit
   * revision, when it is the cache's, or an earlier one that the backend has not compacted and
   * after which the history holds no event in `r` (what the cache holds of `r` now is what it
   * held then: a paginated list continued while other keys change); never for history reads
   * with exact Backend semantics. For a consistent read, once the cache has reached the
   * backend's current revision. Undefined: ask the inner backend. The checks of the cache's
   * state and the read happen in one synchronous step.
   */
  private async serve<T>(revision: number | undefined, r: KeyRange, read: (at: number) => T): Promise<T | undefined> {
    if (revision !== undefined && revision > 0) {
      if (this.o.olderThanHistory === 'backend') return undefined; // the backend knows its compaction point
      if (this.ready && revision === this.revision) return read(revision);
      // An earlier revision: checked before asking the backend for its compaction point (a
      // round trip on etcd), and again after it, with the read in the same synchronous step.
      if (!this.unchangedSince(r, revision)) return undefined;
      // Below the compaction point the backend answers Compacted, and so must this read.
      if (revision < await this.inner.compactedRevision()) return undefined;
      return this.unchangedSince(r, revision) ? read(revision) : undefined;
    }
    const deadline = this.now() + this.o.consistentWaitMs;
    if (!this.ready) {
      // Still loading: a consistent read does not have to wait for the cache.
      try { await this.waitReady(this.o.consistentWaitMs); } catch { return undefined; }
    }
    // An in-process backend tells its revision at once; others are asked (one request shared).
    const want = this.inner.currentRevisionNow?.() ?? await this.feed.freshRevision();
    for (;;) {
      if (this.ready && this.revision >= want) return read(this.revision);
      const left = deadline - this.now();
      if (left <= 0) break;
      if (!this.ready) {
        try { await this.waitReady(left); } catch { break; }
      } else if (!(await this.feed.waitFor(want, left))) {
        break;
      }
    }
    this.log.debug({ want, have: this.revision }, 'watch cache lagging; consistent read from the backend');
    return undefined;
  }

  /**
   * True when the cache is ready at or past `revision`, its history holds every event after
   * `revision`, and none of them is in `r`: memory then holds what `r` held at `revision`.
   */
  private unchangedSince(r: KeyRange, revision: number): boolean {
    if (!this.ready || revision > this.revision || revision + 1 < this.ring.startRevision()) return false;
    for (const b of this.ring.since(revision + 1)) {
      for (const e of b.events) {
        const k = e.kv.key;
        if (k >= r.start && (r.end === '' || k < r.end)) return false;
      }
    }
    return true;
  }

  private owns(key: string): boolean {
    return key.startsWith(this.prefix);
  }

  /** The [start, end) of a range if it lies inside the cached prefix. */
  private keyRange(key: string, opts: RangeOptions): KeyRange | undefined {
    if (opts.prefix) return key.startsWith(this.prefix) ? { start: key, end: prefixEnd(key) } : undefined;
    if (opts.end !== undefined && opts.end !== '') {
      return key >= this.prefix && opts.end <= this.end ? { start: key, end: opts.end } : undefined;
    }
    return this.owns(key) ? { start: key, end: key + '\u0000' } : undefined;
  }

  private rangeNow(r: KeyRange, opts: RangeOptions, revision: number): RangeResult {
    // One key (a GET through list): no need to rank the whole key order.
    const count = r.end === r.start + '\u0000' ? (this.store.get(r.start) ? 1 : 0) : this.store.count(r.start, r.end);
    if (opts.countOnly) return { kvs: [], more: false, count, revision };
    const { kvs, more } = this.store.range(r.start, r.end, opts.after, opts.limit ?? 0);
    return { kvs, more, count, revision };
  }
}

/** A standalone watch cache over `inner` for keys under `prefix` (owns its feed and the inner backend). */
export function createWatchCache(inner: Backend, opts: Omit<WatchCacheOptions, 'feed'>): WatchCache {
  return new WatchCache(inner, { ownsInner: true, ...opts });
}

/**
 * SharedIndexInformer: one reflector (list + watch) feeding one indexed cache, shared by any
 * number of event handlers.
 *
 * Guarantees:
 *  - the cache is eventually consistent with the server; for one object, the states seen are
 *    an ordered subsequence of its states on the server (intermediate ones may be skipped);
 *  - the cache is updated BEFORE handlers hear about the change, so a handler reading the
 *    cache sees at least the state it was told about;
 *  - onDelete gets the last state: the watch's final object, or a DeletedFinalStateUnknown
 *    tombstone (holding the last cached state) when a relist found the object gone;
 *  - a handler added late first gets onAdd for everything already cached;
 *  - every `resyncPeriod` the handler gets onUpdate(obj, obj) for every cached object.
 * Never:
 *  - it never calls handlers concurrently or out of order, and never after `run` returns;
 *  - it never copies objects: handlers get cached instances and must not modify them;
 *  - it never waits for handlers: they are called synchronously and must only enqueue work
 *    (a workqueue) and return. A throwing handler is logged and does not stop the others.
 * A delete and re-create under the same name can arrive as one update: compare metadata.uid.
 */
import { pino, type Logger } from 'pino';
import type { KubeObject } from '../api/resources/types.js';
import { realClock, type Clock } from './clock.js';
import { Indexer, keyOf, type IndexFunc } from './indexer.js';
import { Reflector, type ListerWatcher, type ReflectorOptions } from './reflector.js';
import type { ResourceRef } from './rest-client.js';

/** The object of a delete noticed by a relist rather than a watch event. */
export interface DeletedFinalStateUnknown {
  tombstone: true;
  key: string;
  /** The last state in the cache. */
  obj: KubeObject;
}

export function isTombstone(v: unknown): v is DeletedFinalStateUnknown {
  return typeof v === 'object' && v !== null && (v as { tombstone?: unknown }).tombstone === true;
}

/** The object of a delete notification, tombstone or not. */
export function deletedObject(v: KubeObject | DeletedFinalStateUnknown): KubeObject {
  return isTombstone(v) ? v.obj : v;
}

export interface EventHandler {
  onAdd?(obj: KubeObject, isInInitialList: boolean): void;
  onUpdate?(oldObj: KubeObject, newObj: KubeObject): void;
  onDelete?(obj: KubeObject | DeletedFinalStateUnknown): void;
}

export interface HandlerRegistration { remove(): void }

export interface InformerOptions {
  lw: ListerWatcher;
  ref?: ResourceRef;
  /** Default resync period for handlers (ms); 0 disables resync. */
  resyncPeriodMs?: number;
  clock?: Clock;
  log?: Logger;
  reflector?: Partial<Pick<ReflectorOptions, 'pageSize' | 'backoffInitialMs' | 'backoffMaxMs' | 'minWatchTimeoutSeconds'>>;
}

interface Listener { h: EventHandler; resyncMs: number; nextResync: number }

export class SharedIndexInformer {
  readonly indexer = new Indexer();
  private readonly listeners = new Set<Listener>();
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly reflector: Reflector;
  private synced = false;
  private started = false;
  private stopped = false;
  private syncWaiters: Array<() => void> = [];

  constructor(private readonly o: InformerOptions) {
    this.clock = o.clock ?? realClock;
    this.log = o.log ?? pino({ level: 'silent' });
    this.reflector = new Reflector({
      ...o.reflector, lw: o.lw, clock: this.clock, log: this.log,
      ...(o.ref ? { ref: o.ref } : {}),
      sink: { replace: (items) => this.replace(items), apply: (type, obj) => this.apply(type, obj) },
    });
  }

  /** Lists done (the first list plus relists). */
  get listCount(): number { return this.reflector.listCount; }
  get lastSyncResourceVersion(): string { return this.reflector.lastSyncResourceVersion; }

  addIndexers(funcs: Record<string, IndexFunc>): void {
    this.indexer.addIndexers(funcs);
  }

  addEventHandler(h: EventHandler, resyncPeriodMs?: number): HandlerRegistration {
    const resyncMs = resyncPeriodMs ?? this.o.resyncPeriodMs ?? 0;
    const l: Listener = { h, resyncMs, nextResync: this.clock.now() + resyncMs };
    this.listeners.add(l);
    if (this.synced) for (const obj of this.indexer.list()) this.call(() => h.onAdd?.(obj, false));
    return { remove: () => { this.listeners.delete(l); } };
  }

  hasSynced(): boolean { return this.synced; }

  /** Resolves true once the first list is cached and announced; false if the signal aborts first. */
  waitForSync(signal?: AbortSignal): Promise<boolean> {
    if (this.synced) return Promise.resolve(true);
    if (signal?.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      const done = (v: boolean): void => { signal?.removeEventListener('abort', onAbort); resolve(v); };
      const onAbort = (): void => { this.syncWaiters = this.syncWaiters.filter((w) => w !== ok); done(false); };
      const ok = (): void => done(true);
      this.syncWaiters.push(ok);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  private call(f: () => void): void {
    if (this.stopped) return;
    try { f(); } catch (e) { this.log.error({ err: (e as Error).message }, 'informer event handler failed'); }
  }

  private replace(items: KubeObject[]): void {
    const fresh = new Map(items.map((i) => [keyOf(i), i]));
    for (const key of this.indexer.keys()) {
      if (fresh.has(key)) continue;
      const old = this.indexer.deleteKey(key) as KubeObject;
      const tomb: DeletedFinalStateUnknown = { tombstone: true, key, obj: old };
      for (const l of this.listeners) this.call(() => l.h.onDelete?.(tomb));
    }
    const initial = !this.synced;
    for (const [, obj] of fresh) {
      const old = this.indexer.set(obj);
      for (const l of this.listeners) {
        if (old) this.call(() => l.h.onUpdate?.(old, obj));
        else this.call(() => l.h.onAdd?.(obj, initial));
      }
    }
    if (!this.synced) {
      this.synced = true;
      const w = this.syncWaiters;
      this.syncWaiters = [];
      for (const f of w) f();
    }
  }

  private apply(type: 'ADDED' | 'MODIFIED' | 'DELETED', obj: KubeObject): void {
    if (type === 'DELETED') {
      const old = this.indexer.deleteKey(keyOf(obj));
      // The watch's object is the final state; the cached one is the fallback.
      const last = obj.metadata ? obj : old;
      if (last) for (const l of this.listeners) this.call(() => l.h.onDelete?.(last));
      return;
    }
    const old = this.indexer.set(obj);
    for (const l of this.listeners) {
      if (old) this.call(() => l.h.onUpdate?.(old, obj));
      else this.call(() => l.h.onAdd?.(obj, false));
    }
  }

  private async resyncLoop(signal: AbortSignal): Promise<void> {
    for (;;) {
      const periods = [...this.listeners].filter((l) => l.resyncMs > 0);
      const now = this.clock.now();
      const next = periods.length ? Math.min(...periods.map((l) => l.nextResync)) : now + 1000;
      try { await this.clock.sleep(Math.max(0, Math.min(next - now, 1000)), signal); } catch { return; }
      if (!this.synced) continue;
      const t = this.clock.now();
      for (const l of this.listeners) {
        if (l.resyncMs <= 0 || t < l.nextResync) continue;
        l.nextResync = t + l.resyncMs;
        for (const obj of this.indexer.list()) this.call(() => l.h.onUpdate?.(obj, obj));
      }
    }
  }

  /** Runs the informer until the signal aborts; call once. */
  async run(signal: AbortSignal): Promise<void> {
    if (this.started) throw new Error('informer already started');
    this.started = true;
    try {
      await Promise.all([this.reflector.run(signal), this.resyncLoop(signal)]);
    } finally {
      this.stopped = true;
    }
  }
}

/**
 * Rate-limited work queue of keys (usually `namespace/name`).
 *
 * Guarantees:
 *  - fair: keys are processed in the order they were added;
 *  - stingy: a key added several times before a worker picks it up is processed once;
 *  - a key is never processed by two workers at once: a key added while it is being processed
 *    is queued again when its worker calls `done`;
 *  - `addRateLimited` delays a key by the larger of a per-key exponential backoff
 *    (5 ms doubling up to 1000 s, reset by `forget`) and an overall token bucket
 *    (10 qps, burst 100);
 *  - after `shutDown`, adds are ignored, waiting `get` calls return undefined and workers
 *    exit once their current key is done.
 */
import { pino, type Logger } from 'pino';
import { realClock, type Clock } from './clock.js';
import { TokenBucket } from './rate-limiter.js';

export interface RateLimiter {
  /** How long to wait before `key` may be processed again. */
  when(key: string): number;
  forget(key: string): void;
  numRequeues(key: string): number;
}

export class ItemExponentialRateLimiter implements RateLimiter {
  private readonly failures = new Map<string, number>();
  constructor(readonly baseMs = 5, readonly maxMs = 1000_000) {}
  when(key: string): number {
    const n = this.failures.get(key) ?? 0;
    this.failures.set(key, n + 1);
    return Math.min(this.baseMs * 2 ** n, this.maxMs);
  }
  forget(key: string): void { this.failures.delete(key); }
  numRequeues(key: string): number { return this.failures.get(key) ?? 0; }
}

export class BucketRateLimiter implements RateLimiter {
  constructor(readonly bucket: TokenBucket) {}
  when(): number { return this.bucket.reserve(); }
  forget(): void { /* the bucket is shared by all keys */ }
  numRequeues(): number { return 0; }
}

export class MaxOfRateLimiter implements RateLimiter {
  private readonly limiters: RateLimiter[];
  constructor(...limiters: RateLimiter[]) { this.limiters = limiters; }
  when(key: string): number { return Math.max(...this.limiters.map((l) => l.when(key))); }
  forget(key: string): void { for (const l of this.limiters) l.forget(key); }
  numRequeues(key: string): number { return Math.max(...this.limiters.map((l) => l.numRequeues(key))); }
}

/** client-go's default controller rate limiter. */
export function defaultControllerRateLimiter(clock: Clock = realClock): RateLimiter {
  return new MaxOfRateLimiter(new ItemExponentialRateLimiter(5, 1000_000), new BucketRateLimiter(new TokenBucket({ qps: 10, burst: 100, clock })));
}

export interface WorkQueueOptions {
  name?: string;
  rateLimiter?: RateLimiter;
  clock?: Clock;
  log?: Logger;
}

/** What a worker's handler may ask for after a successful pass. */
export interface HandlerResult { requeueAfterMs?: number }

export class WorkQueue {
  readonly name: string;
  private readonly queue: string[] = [];
  private readonly dirty = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly waiters: Array<(key: string | undefined) => void> = [];
  private readonly timers = new Set<AbortController>();
  private readonly limiter: RateLimiter;
  private readonly clock: Clock;
  private readonly log: Logger;
  private shuttingDown = false;

  constructor(o: WorkQueueOptions = {}) {
    this.name = o.name ?? 'queue';
    this.clock = o.clock ?? realClock;
    this.limiter = o.rateLimiter ?? defaultControllerRateLimiter(this.clock);
    this.log = o.log ?? pino({ level: 'silent' });
  }

  get length(): number { return this.queue.length; }
  get isShuttingDown(): boolean { return this.shuttingDown; }

  add(key: string): void {
    if (this.shuttingDown || this.dirty.has(key)) return;
    this.dirty.add(key);
    if (this.processing.has(key)) return;
    const w = this.waiters.shift();
    if (w) { this.dirty.delete(key); this.processing.add(key); w(key); return; }
    this.queue.push(key);
  }

  /** Adds `key` after `ms` (at once when ms <= 0). */
  addAfter(key: string, ms: number): void {
    if (this.shuttingDown) return;
    if (ms <= 0) { this.add(key); return; }
    const ac = new AbortController();
    this.timers.add(ac);
    void this.clock.sleep(ms, ac.signal).then(() => { this.timers.delete(ac); this.add(key); }, () => { this.timers.delete(ac); });
  }

  addRateLimited(key: string): void { this.addAfter(key, this.limiter.when(key)); }
  forget(key: string): void { this.limiter.forget(key); }
  numRequeues(key: string): number { return this.limiter.numRequeues(key); }

  /** The next key, marked as processing; undefined once shut down (or the signal aborts). */
  get(signal?: AbortSignal): Promise<string | undefined> {
    const key = this.queue.shift();
    if (key !== undefined) {
      this.dirty.delete(key);
      this.processing.add(key);
      return Promise.resolve(key);
    }
    if (this.shuttingDown || signal?.aborted) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const w = (k: string | undefined): void => { signal?.removeEventListener('abort', onAbort); resolve(k); };
      const onAbort = (): void => { const i = this.waiters.indexOf(w); if (i >= 0) this.waiters.splice(i, 1); resolve(undefined); };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(w);
    });
  }

  /** Ends processing of `key`; re-queues it if it was added meanwhile. */
  done(key: string): void {
    this.processing.delete(key);
    if (!this.dirty.has(key)) return;
    this.dirty.delete(key);
    this.add(key);
  }

  shutDown(): void {
    this.shuttingDown = true;
    for (const t of this.timers) t.abort();
    this.timers.clear();
    for (const w of this.waiters.splice(0)) w(undefined);
  }

  /**
   * Runs `n` workers until the signal aborts (which shuts the queue down) and each has
   * finished its current key. A handler that throws gets its key re-added rate-limited; one
   * that succeeds gets the key forgotten (and re-added after `requeueAfterMs` if it asks).
   */
  async runWorkers(n: number, handler: (key: string, signal: AbortSignal) => Promise<HandlerResult | void>, signal: AbortSignal): Promise<void> {
    const onAbort = (): void => this.shutDown();
    if (signal.aborted) this.shutDown(); else signal.addEventListener('abort', onAbort, { once: true });
    const worker = async (): Promise<void> => {
      for (;;) {
        const key = await this.get();
        if (key === undefined) return;
        try {
          const r = await handler(key, signal);
          this.forget(key);
          if (r && r.requeueAfterMs !== undefined) this.addAfter(key, r.requeueAfterMs);
        } catch (e) {
          this.log.info({ queue: this.name, key, err: (e as Error).message, requeues: this.numRequeues(key) }, 'sync failed; requeueing');
          this.addRateLimited(key);
        } finally {
          this.done(key);
        }
      }
    };
    try {
      await Promise.all(Array.from({ length: Math.max(1, n) }, () => worker()));
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  }
}

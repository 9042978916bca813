/**
 * --max-requests-inflight (reads) and --max-mutating-requests-inflight (writes). Long-running
 * requests (watch, exec, proxy, followed logs) take no seat. 0 = unlimited. A seat is held until
 * the handler finishes and its response body has been handed to the connection (a slow reader
 * keeps it: body-writer.ts), or the request times out.
 *
 * Deliberate difference from a plain limiter: a request that finds every seat taken waits, FIFO,
 * for up to `maxQueueWaitMs` (default 1 s) in a bounded queue (default 2 × the limit) before it
 * is refused, like API Priority and Fairness queues requests instead of refusing them at once.
 * A short burst above the limit (e.g. a ReplicaSet creating 500 pods against 200 seats) is then
 * served instead of losing a whole Retry-After second. A request is answered 429
 * TooManyRequests with Retry-After: 1 (which client-go retries by itself) when the queue is full
 * or when its wait ends without a seat. A queued request whose client goes away leaves the queue.
 *
 * Contract: single-threaded; a released seat passes straight to the oldest waiter, so `inUse`
 * never drops below the limit while anyone waits and newcomers cannot overtake the queue.
 */
import { errors } from '../../../api/meta/status.js';
import { bodyWriting } from '../body-writer.js';
import type { ApiserverMetrics } from '../metrics.js';
import { isReadOnlyRequest } from '../request-info.js';
import type { Exchange, Filter } from './filter.js';

interface Waiter {
  /** Called with true when handed a seat, false when the wait ended without one. */
  settle(seated: boolean): void;
}

class Pool {
  inUse = 0;
  private readonly queue: Waiter[] = [];
  private head = 0;
  constructor(readonly kind: 'readOnly' | 'mutating', readonly limit: number, readonly queueLength: number) {}

  get waiting(): number { return this.queue.length - this.head; }

  /** Resolves true with a seat taken, false when refused (queue full, wait over, aborted). */
  acquire(waitMs: number, ctx: { readonly signal: AbortSignal }): boolean | Promise<boolean> {
    if (this.limit <= 0 || this.inUse < this.limit) { this.inUse++; return true; }
    // The signal is asked for only here: a request that gets a seat at once never needs one.
    const signal = ctx.signal;
    if (this.waiting >= this.queueLength || waitMs <= 0 || signal.aborted) return false;
    return new Promise<boolean>((resolve) => {
      let done = false;
      const w: Waiter = {
        settle: (seated) => {
          if (done) return;
          done = true;
          clearTimeout(timer);
          signal.removeEventListener('abort', onAbort);
          resolve(seated);
        },
      };
      const leave = (): void => {
        if (done) return;
        const i = this.queue.indexOf(w, this.head);
        if (i >= 0) this.queue.splice(i, 1);
        w.settle(false);
      };
      const onAbort = (): void => leave();
      const timer = setTimeout(leave, waitMs);
      signal.addEventListener('abort', onAbort, { once: true });
      this.queue.push(w);
    });
  }

  release(): void {
    if (this.waiting > 0) {
      const w = this.queue[this.head]!;
      this.head++;
      if (this.head > 1024 && this.head * 2 > this.queue.length) { this.queue.splice(0, this.head); this.head = 0; }
      w.settle(true); // the seat moves to the waiter: inUse stays the same
      return;
    }
    this.inUse--;
  }
}

export interface InflightLimitOptions {
  maxRequestsInflight: number;
  maxMutatingRequestsInflight: number;
  /** How long a request may wait for a seat before 429; default 1000 ms, 0 = refuse at once. */
  maxQueueWaitMs?: number;
  /** Waiters per pool as a multiple of its limit; default 2. */
  queueLengthFactor?: number;
  metrics?: ApiserverMetrics;
}

export function inflightLimit(opts: InflightLimitOptions): Filter {
  const factor = opts.queueLengthFactor ?? 2;
  const waitMs = opts.maxQueueWaitMs ?? 1000;
  const pools = {
    readOnly: new Pool('readOnly', opts.maxRequestsInflight, Math.ceil(opts.maxRequestsInflight * factor)),
    mutating: new Pool('mutating', opts.maxMutatingRequestsInflight, Math.ceil(opts.maxMutatingRequestsInflight * factor)),
  };
  opts.metrics?.setInflightSource(() => ({ readOnly: pools.readOnly.inUse, mutating: pools.mutating.inUse }));
  return {
    name: 'inflight-limit',
    async run(x: Exchange, next: () => Promise<void>): Promise<void> {
      if (x.ctx.isLongRunning || x.upgrade) return next();
      const pool = isReadOnlyRequest(x.ctx.info) ? pools.readOnly : pools.mutating;
      let seated = pool.acquire(waitMs, x.ctx);
      if (seated !== true && seated !== false) seated = await seated;
      if (!seated) {
        opts.metrics?.rejectedRequests.inc({ request_kind: pool.kind, reason: 'inflight' });
        throw errors.tooManyRequests(1);
      }
      try {
        await next();
        // A body still being written to a slow reader keeps its seat (body-writer.ts).
        for (let w = bodyWriting(x.res); w; w = bodyWriting(x.res)) await w;
      } finally {
        pool.release();
      }
    },
  };
}

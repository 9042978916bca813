/**
 * Kubernetes' RateLimitedTimedQueue: node names waiting for an action (tainting, or deleting
 * their pods), ordered by when they are due, handed out at most `qps` per second (a token
 * bucket of burst 1, like the zone evictors of Kubernetes).
 *
 * Contract:
 *  - a name is queued once: `add` is refused while the name was added and not `remove`d — also
 *    after it was processed, so a node is acted upon once per outage;
 *  - `try` takes a token per item it looks at and stops at the first item not yet due or when
 *    the bucket is empty; an action reporting failure puts its item back, due after its wait;
 *  - `swapLimiter(0)` stops everything until a positive rate comes back; swapping while the
 *    bucket is empty leaves the new one empty too (no extra burst from a swap).
 * Callers serialise `try`, `add` and `remove` (the controller holds its evictor lock).
 */
import type { Clock } from '../../deps.js';
import { TokenBucket } from '../../../../client/rate-limiter.js';

export interface TimedValue {
  value: string;
  /** The node's uid when it was queued. */
  uid: string;
  addedAt: number;
  processAt: number;
}

/** The zone's token bucket of burst 1 (client/rate-limiter.ts); undefined while the rate is 0 (stopped). */
function bucket(qps: number, clock: Clock): TokenBucket | undefined {
  return qps > 0 ? new TokenBucket({ qps, burst: 1, clock }) : undefined;
}

export type TimedAction = (v: TimedValue) => Promise<{ done: boolean; retryAfterMs?: number }>;

export class RateLimitedTimedQueue {
  private items: Array<TimedValue & { seq: number }> = [];
  private readonly names = new Set<string>();
  private limiter: TokenBucket | undefined;
  private seq = 0;

  constructor(qps: number, private readonly clock: Clock) { this.limiter = bucket(qps, clock); }

  get qps(): number { return this.limiter?.qps ?? 0; }
  /** Names waiting (not yet processed). */
  get pending(): string[] { return this.items.map((i) => i.value); }

  add(value: string, uid: string): boolean {
    if (this.names.has(value)) return false;
    const now = this.clock.now();
    this.names.add(value);
    this.push({ value, uid, addedAt: now, processAt: now, seq: this.seq++ });
    return true;
  }

  /** Forgets the name (queued or processed); true when it was known. */
  remove(value: string): boolean {
    if (!this.names.delete(value)) return false;
    this.items = this.items.filter((i) => i.value !== value);
    return true;
  }

  swapLimiter(qps: number): void {
    if (this.qps === qps || (this.qps <= 0 && qps <= 0)) return;
    const next = bucket(qps, this.clock);
    // An empty bucket stays empty across the swap (no extra burst).
    if (next && !(this.limiter?.tryTake() ?? false)) next.tryTake();
    this.limiter = next;
  }

  async try(fn: TimedAction): Promise<void> {
    for (let head = this.items[0]; head; head = this.items[0]) {
      if (!this.limiter?.tryTake()) return;
      const now = this.clock.now();
      if (now < head.processAt) return;
      const r = await fn(head);
      const i = this.items.indexOf(head);
      if (i < 0) continue; // removed meanwhile
      this.items.splice(i, 1);
      if (!r.done) this.push({ ...head, processAt: now + (r.retryAfterMs ?? 0) + 1 });
    }
  }

  private push(v: TimedValue & { seq: number }): void {
    let i = this.items.length;
    while (i > 0) {
      const p = this.items[i - 1] as TimedValue & { seq: number };
      if (p.processAt < v.processAt || (p.processAt === v.processAt && p.seq < v.seq)) break;
      i--;
    }
    this.items.splice(i, 0, v);
  }
}

/**
 * The scheduling queue: pod keys waiting for a scheduling attempt.
 *
 *  - active: keys ready to be tried, higher spec.priority first, FIFO within a priority;
 *  - backoff: keys that failed recently, each until its backoff (1 s doubling per failed
 *    attempt, at most 10 s) expires, then moved to active by `flush`;
 *  - unschedulable: keys that no node fits; they stay until something in the cluster changes
 *    (`moveAllToActiveOrBackoff`, called on node and pod events) or they have waited
 *    `maxUnschedulableMs` (the periodic safety net in `flush`).
 *
 * A failure reported after a cluster change that happened while the pod was being tried goes
 * to backoff instead of unschedulable, so that change is not missed (the move cycle).
 *
 * Contract: synchronous, event-loop only; a key is in at most one of the three sets; `pop`
 * hands a key out once (it is then in none until the caller re-adds it); after `close`,
 * `pop` resolves undefined and adds are ignored.
 */
import type { Clock } from '../../client/clock.js';

export interface QueuedPod {
  key: string;
  /** Failed attempts so far. */
  attempts: number;
  /** spec.priority of the pod (0 when unset). */
  priority: number;
  /** When the key first entered the queue (ms). */
  firstSeen: number;
  /** When the key last entered unschedulable or backoff (ms). */
  lastFailure: number;
  /** moveCycle when the key was popped. */
  popCycle: number;
}

export interface QueueOptions {
  clock: Clock;
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  maxUnschedulableMs?: number;
}

export class SchedulingQueue {
  private readonly active = new ActiveQueue();
  private readonly backoff = new Map<string, QueuedPod>();
  private readonly unschedulable = new Map<string, QueuedPod>();
  /** Keys popped and not yet returned: remembers attempts across a scheduling cycle. */
  private readonly inFlight = new Map<string, QueuedPod>();
  /** In-flight keys whose pod changed during the attempt: a failure retries after backoff. */
  private readonly changedInFlight = new Set<string>();
  private readonly waiters: Array<(p: QueuedPod | undefined) => void> = [];
  private moveCycle = 0;
  private closed = false;
  private readonly clock: Clock;
  private readonly initialBackoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly maxUnschedulableMs: number;

  constructor(o: QueueOptions) {
    this.clock = o.clock;
    this.initialBackoffMs = o.initialBackoffMs ?? 1000;
    this.maxBackoffMs = o.maxBackoffMs ?? 10_000;
    this.maxUnschedulableMs = o.maxUnschedulableMs ?? 300_000;
  }

  get sizes(): { active: number; backoff: number; unschedulable: number } {
    return { active: this.active.size, backoff: this.backoff.size, unschedulable: this.unschedulable.size };
  }

  has(key: string): boolean {
    return this.active.has(key) || this.backoff.has(key) || this.unschedulable.has(key) || this.inFlight.has(key);
  }

  private toActive(p: QueuedPod): void {
    const w = this.waiters.shift();
    if (w) { this.handOut(p, w); return; }
    this.active.push(p);
  }

  private handOut(p: QueuedPod, to: (p: QueuedPod | undefined) => void): void {
    p.popCycle = this.moveCycle;
    this.inFlight.set(p.key, p);
    to(p);
  }

  /** A new pending pod, or one whose spec changed: try it (again) soon. */
  add(key: string, priority = 0): void {
    if (this.closed || this.active.has(key)) return;
    if (this.inFlight.has(key)) { this.changedInFlight.add(key); return; }
    const held = this.backoff.get(key) ?? this.unschedulable.get(key);
    if (held) {
      held.priority = priority;
      this.unschedulable.delete(key);
      if (this.backoffExpired(held)) { this.backoff.delete(key); this.toActive(held); }
      else this.backoff.set(key, held);
      return;
    }
    const now = this.clock.now();
    this.toActive({ key, priority, attempts: 0, firstSeen: now, lastFailure: 0, popCycle: 0 });
  }

  delete(key: string): void {
    this.active.delete(key);
    this.backoff.delete(key);
    this.unschedulable.delete(key);
    this.inFlight.delete(key);
    this.changedInFlight.delete(key);
  }

  /** The next key to try; waits when none is ready; undefined once closed or aborted. */
  pop(signal?: AbortSignal): Promise<QueuedPod | undefined> {
    if (this.closed || signal?.aborted) return Promise.resolve(undefined);
    const p = this.active.shift();
    if (p) {
      p.popCycle = this.moveCycle;
      this.inFlight.set(p.key, p);
      return Promise.resolve(p);
    }
    return new Promise((resolve) => {
      const w = (p: QueuedPod | undefined): void => { signal?.removeEventListener('abort', onAbort); resolve(p); };
      const onAbort = (): void => { const i = this.waiters.indexOf(w); if (i >= 0) this.waiters.splice(i, 1); resolve(undefined); };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(w);
    });
  }

  /** The attempt finished (bound or given up): forget the key. */
  done(key: string): void { this.inFlight.delete(key); this.changedInFlight.delete(key); }

  private backoffMs(p: QueuedPod): number {
    return Math.min(this.maxBackoffMs, this.initialBackoffMs * 2 ** Math.max(0, p.attempts - 1));
  }

  private backoffExpired(p: QueuedPod): boolean {
    return this.clock.now() >= p.lastFailure + this.backoffMs(p);
  }

  /**
   * The attempt failed. `unschedulable`: no node fits (wait for a cluster change); otherwise
   * an error (binding failed): retry after the backoff.
   */
  requeue(p: QueuedPod, unschedulable: boolean): void {
    if (this.closed || !this.inFlight.has(p.key)) return; // deleted meanwhile
    this.inFlight.delete(p.key);
    const changed = this.changedInFlight.delete(p.key);
    p.attempts++;
    p.lastFailure = this.clock.now();
    if (unschedulable && !changed && p.popCycle === this.moveCycle) this.unschedulable.set(p.key, p);
    else this.backoff.set(p.key, p);
  }

  /** Something changed that may make unschedulable pods fit. */
  moveAllToActiveOrBackoff(): void {
    this.moveCycle++;
    for (const p of this.unschedulable.values()) {
      if (this.backoffExpired(p)) this.toActive(p);
      else this.backoff.set(p.key, p);
    }
    this.unschedulable.clear();
  }

  /** Moves expired backoffs to active and long-waiting unschedulable pods to active/backoff. */
  flush(): void {
    for (const p of [...this.backoff.values()]) {
      if (!this.backoffExpired(p)) continue;
      this.backoff.delete(p.key);
      this.toActive(p);
    }
    const now = this.clock.now();
    for (const p of [...this.unschedulable.values()]) {
      if (now - p.lastFailure < this.maxUnschedulableMs) continue;
      this.unschedulable.delete(p.key);
      this.toActive(p);
    }
  }

  /** Runs `flush` every `periodMs` until the signal aborts. */
  async runFlusher(signal: AbortSignal, periodMs = 1000): Promise<void> {
    for (;;) {
      try { await this.clock.sleep(periodMs, signal); } catch { return; }
      this.flush();
    }
  }

  close(): void {
    this.closed = true;
    for (const w of this.waiters.splice(0)) w(undefined);
  }
}

/** Buckets per priority, each FIFO (a Map keeps insertion order); highest priority first. */
class ActiveQueue {
  private readonly buckets = new Map<number, Map<string, QueuedPod>>();
  /** Priorities with a non-empty bucket, highest first. */
  private order: number[] = [];
  private count = 0;

  get size(): number { return this.count; }

  has(key: string): boolean {
    for (const b of this.buckets.values()) if (b.has(key)) return true;
    return false;
  }

  push(p: QueuedPod): void {
    let b = this.buckets.get(p.priority);
    if (!b) {
      this.buckets.set(p.priority, b = new Map());
      this.order.push(p.priority);
      this.order.sort((x, y) => y - x);
    }
    if (!b.has(p.key)) this.count++;
    b.set(p.key, p);
  }

  shift(): QueuedPod | undefined {
    const top = this.order[0];
    if (top === undefined) return undefined;
    const b = this.buckets.get(top) as Map<string, QueuedPod>;
    const p = b.values().next().value as QueuedPod;
    this.remove(p.key, top);
    return p;
  }

  delete(key: string): void {
    for (const [prio, b] of this.buckets) if (b.has(key)) { this.remove(key, prio); return; }
  }

  private remove(key: string, prio: number): void {
    const b = this.buckets.get(prio);
    if (!b?.delete(key)) return;
    this.count--;
    if (b.size === 0) {
      this.buckets.delete(prio);
      this.order = this.order.filter((x) => x !== prio);
    }
  }
}

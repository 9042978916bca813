/**
 * Time as a dependency: the rate limiter, work queue, informer resync and leader election
 * read `now()` and wait with `sleep()`, so tests can drive them with `ManualClock` instead of
 * waiting in real time.
 */

export interface Clock {
  /** Milliseconds since the epoch (or since any fixed origin; only differences matter). */
  now(): number;
  /** Resolves after `ms`; rejects with the signal's reason when it aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new Error('aborted');
}

export const realClock: Clock = {
  now: () => Date.now(),
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) { reject(abortReason(signal)); return; }
      const onAbort = (): void => { clearTimeout(timer); reject(abortReason(signal as AbortSignal)); };
      const timer = setTimeout(() => { signal?.removeEventListener('abort', onAbort); resolve(); }, Math.max(0, ms));
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  },
};

interface Sleeper { at: number; seq: number; resolve: () => void }

/**
 * A clock that moves only when told. `advance(ms)` wakes sleepers in deadline order, letting
 * promise continuations run between wake-ups so that chains of sleeps behave as in real time.
 */
export class ManualClock implements Clock {
  private t: number;
  private seq = 0;
  private sleepers: Sleeper[] = [];

  constructor(start = 1_700_000_000_000) { this.t = start; }

  now(): number { return this.t; }

  /** Number of pending sleeps (tests wait for components to reach a sleep). */
  get waiting(): number { return this.sleepers.length; }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) { reject(abortReason(signal)); return; }
      const s: Sleeper = { at: this.t + Math.max(0, ms), seq: this.seq++, resolve: () => { signal?.removeEventListener('abort', onAbort); resolve(); } };
      const onAbort = (): void => {
        this.sleepers = this.sleepers.filter((x) => x !== s);
        reject(abortReason(signal as AbortSignal));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.sleepers.push(s);
    });
  }

  /** Moves time forward by `ms`, waking due sleepers one at a time in order. */
  async advance(ms: number): Promise<void> {
    const target = this.t + ms;
    for (;;) {
      await flushMicrotasks();
      const due = this.sleepers.filter((s) => s.at <= target).sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
      if (!due) break;
      this.sleepers = this.sleepers.filter((s) => s !== due);
      this.t = Math.max(this.t, due.at);
      due.resolve();
    }
    this.t = target;
    await flushMicrotasks();
  }
}

/** Lets pending promise continuations (several hops deep) run. */
export async function flushMicrotasks(rounds = 20): Promise<void> {
  for (let i = 0; i < rounds; i++) await Promise.resolve();
}

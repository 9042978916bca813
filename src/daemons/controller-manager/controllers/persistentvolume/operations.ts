/**
 * Slow volume operations (provision, delete, recycle) run beside the sync workers, one at a
 * time per operation name, as Kubernetes' goroutinemap with exponential backoff does: a sync
 * that finds the operation running, or failed too recently, leaves it be; the next sync after
 * the backoff (first 500 ms, doubling up to 2 min 2 s) starts it again.
 *
 * Contract: `run` never throws and never waits for the operation; `drain` waits for all
 * operations in flight (the controller calls it when stopping).
 */
import type { Logger } from 'pino';

const INITIAL_BACKOFF_MS = 500;
const MAX_BACKOFF_MS = 122_000;

interface Failure { until: number; backoffMs: number }

export class OperationMap {
  private readonly running = new Map<string, Promise<void>>();
  private readonly failures = new Map<string, Failure>();

  constructor(private readonly log: Logger, private readonly now: () => number = Date.now) {}

  /** Starts `op` as `name` unless it is running or backing off after a failure. */
  run(name: string, op: () => Promise<void>): void {
    if (this.running.has(name)) { this.log.debug({ operation: name }, 'operation already running'); return; }
    const failed = this.failures.get(name);
    if (failed && this.now() < failed.until) { this.log.debug({ operation: name }, 'operation postponed by backoff'); return; }
    const p = op().then(
      () => { this.failures.delete(name); },
      (e: unknown) => {
        const backoffMs = failed ? Math.min(failed.backoffMs * 2, MAX_BACKOFF_MS) : INITIAL_BACKOFF_MS;
        this.failures.set(name, { until: this.now() + backoffMs, backoffMs });
        this.log.info({ operation: name, err: (e as Error).message, retryInMs: backoffMs }, 'volume operation failed');
      },
    ).finally(() => { this.running.delete(name); });
    this.running.set(name, p);
  }

  async drain(): Promise<void> {
    await Promise.allSettled([...this.running.values()]);
  }
}

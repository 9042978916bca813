/**
 * Expires keys written with ttlSeconds. The deadline lives in the key's k/ record and in the t/
 * index (layout.ts), so expiry survives restarts. Every interval the sweeper walks t/ entries
 * whose deadline has passed and asks the backend to expire each (a normal, revisioned DELETE,
 * guarded by the key's modRevision so a concurrent update wins). Sweeps never overlap.
 */
import type { Logger } from 'pino';
import type { Db } from './reads.js';
import { TTL_PREFIX, parseTtlKey, revHex } from './layout.js';

const BATCH = 1000;

export class TtlSweeper {
  private readonly timer: NodeJS.Timeout;
  private running: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly db: Db,
    intervalMs: number,
    private readonly expire: (key: string, deadlineMs: number) => Promise<void>,
    private readonly log: Logger,
  ) {
    this.timer = setInterval(() => void this.sweep(), intervalMs);
    this.timer.unref();
  }

  /** Runs one sweep now (or joins the one running). */
  sweep(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    this.running ??= this.sweepOnce()
      .catch((err: unknown) => this.log.warn({ err }, 'leveldb ttl sweep failed'))
      .finally(() => { this.running = undefined; });
    return this.running;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.running;
  }

  private async sweepOnce(): Promise<void> {
    // Bounded: each round expires up to BATCH keys; the next interval continues.
    for (let round = 0; round < 100; round++) {
      const now = Date.now();
      const keys = await this.db.keys({ gte: TTL_PREFIX, lt: TTL_PREFIX + revHex(now + 1), limit: BATCH }).all();
      if (keys.length === 0 || this.stopped) return;
      await Promise.all(keys.map((k) => {
        const { deadlineMs, key } = parseTtlKey(k);
        return this.expire(key, deadlineMs);
      }));
      if (keys.length < BATCH) return;
    }
  }
}

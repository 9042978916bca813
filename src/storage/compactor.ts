/**
 * Periodic compaction (--kvstore-compaction-interval; 0 disables), the way kube-apiserver does
 * it: at every tick, compact each backend to the revision it had at the PREVIOUS tick. So the
 * history of the last full interval (5 min by default) always survives, which is what continue
 * tokens (valid for about one interval) and watchers resuming from the watch cache need — the
 * watch cache's ring is in memory and never needs backend history once loaded.
 * (Kubernetes also coordinates several apiservers through a compaction key; corectl runs one
 * API server per store, so each backend simply compacts itself.)
 */
import { pino, type Logger } from 'pino';
import type { Backend } from './interface.js';

export interface CompactorOptions {
  /** The backends to compact (called at each tick: backends may appear over time). */
  readonly backends: () => readonly Backend[];
  /** Milliseconds between compactions; 0 disables. */
  readonly intervalMs: number;
  readonly log?: Logger;
}

export interface Compactor {
  /** One compaction round now (also what the timer runs). Never throws. */
  runOnce(): Promise<void>;
  stop(): Promise<void>;
}

export function startCompactor(opts: CompactorOptions): Compactor {
  const log = opts.log ?? pino({ level: 'silent' });
  const seen = new Map<Backend, number>();
  let running: Promise<void> | undefined;
  let stopped = false;

  async function round(): Promise<void> {
    let backends: readonly Backend[];
    try {
      backends = opts.backends();
    } catch (e) {
      log.warn({ err: e }, 'compaction: cannot list backends');
      return;
    }
    for (const b of backends) {
      try {
        const current = await b.currentRevision();
        const previous = seen.get(b);
        seen.set(b, current);
        if (previous === undefined || previous <= 1) continue;
        if (previous <= await b.compactedRevision()) continue;
        await b.compact(previous);
        log.info({ backend: b.name, revision: previous }, 'compacted');
      } catch (e) {
        log.warn({ err: e, backend: b.name }, 'compaction failed; will retry next interval');
      }
    }
  }

  function runOnce(): Promise<void> {
    running ??= round().finally(() => { running = undefined; });
    return running;
  }

  const timer = opts.intervalMs > 0 ? setInterval(() => { if (!stopped) void runOnce(); }, opts.intervalMs) : undefined;
  timer?.unref?.();
  return {
    runOnce,
    async stop(): Promise<void> {
      stopped = true;
      if (timer) clearInterval(timer);
      await running;
    },
  };
}

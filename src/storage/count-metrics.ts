/**
 * Object counts per resource (--kvstore-count-metric-poll-period; 0 disables), polled in the
 * background so /metrics reads a number instead of counting on every scrape
 * (kube-apiserver's apiserver_storage_objects gauge).
 */
import { pino, type Logger } from 'pino';

export interface CountedResource { readonly group: string; readonly resource: string; }

export interface CountMetricsOptions {
  readonly count: (resource: string, group: string) => Promise<number>;
  /** The resources to count (called at each poll). */
  readonly resources: () => readonly CountedResource[];
  /** Milliseconds between polls; 0 disables. */
  readonly periodMs: number;
  readonly log?: Logger;
}

export interface CountMetrics {
  /** Last polled count per 'resource[.group]' (absent before the first poll or when disabled). */
  counts(): ReadonlyMap<string, number>;
  /** Poll now (also what the timer runs). Never throws. */
  poll(): Promise<void>;
  stop(): Promise<void>;
}

export function startCountMetrics(opts: CountMetricsOptions): CountMetrics {
  const log = opts.log ?? pino({ level: 'silent' });
  const counts = new Map<string, number>();
  let running: Promise<void> | undefined;

  async function round(): Promise<void> {
    let resources: readonly CountedResource[];
    try {
      resources = opts.resources();
    } catch (e) {
      log.debug({ err: e }, 'object count: cannot list resources');
      return;
    }
    for (const r of resources) {
      const name = r.group ? `${r.resource}.${r.group}` : r.resource;
      try {
        counts.set(name, await opts.count(r.resource, r.group));
      } catch (e) {
        log.debug({ err: e, resource: name }, 'object count failed');
        counts.delete(name); // a stale count would mislead; report nothing
      }
    }
  }

  function poll(): Promise<void> {
    running ??= round().finally(() => { running = undefined; });
    return running;
  }

  const timer = opts.periodMs > 0 ? setInterval(() => { void poll(); }, opts.periodMs) : undefined;
  timer?.unref?.();
  if (opts.periodMs > 0) void poll();
  return {
    counts: () => counts,
    poll,
    async stop(): Promise<void> {
      if (timer) clearInterval(timer);
      await running;
    },
  };
}

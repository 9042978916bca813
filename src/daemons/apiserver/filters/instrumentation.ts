/**
 * Counts and times every request into apiserver_request_total / _duration_seconds when it ends,
 * and writes the access-log line (debug level).
 */
import type { Logger } from 'pino';
import type { ApiserverMetrics } from '../metrics.js';
import { observeRequest } from '../metrics.js';
import type { Exchange, Filter } from './filter.js';

export function instrumentation(metrics: ApiserverMetrics, log: Logger): Filter {
  const debug = log.isLevelEnabled('debug');
  // One closure per request (the close callback), not two.
  const record = (x: Exchange, start: number, code: number): void => {
    const seconds = (performance.now() - start) / 1000;
    observeRequest(metrics, x.req.method ?? 'GET', x.ctx.info, code, seconds);
    if (debug) x.ctx.log.debug({ verb: x.ctx.info.verb, user: x.ctx.user.name, code, ms: Math.round(seconds * 1000) }, 'request done');
  };
  return {
    name: 'instrumentation',
    run(x: Exchange, next: () => Promise<void>): Promise<void> {
      const start = performance.now();
      const res = x.res;
      if (res) {
        // Recorded when the response closes (also for reset streams), with whatever status was set.
        x.onClose(() => record(x, start, res.statusCode));
        return next();
      }
      return next().finally(() => record(x, start, x.upgrade?.socket.destroyed === false ? 101 : 0));
    },
  };
}

/**
 * --max-requests-inflight (reads) and --max-mutating-requests-inflight (writes): beyond the limit
 * a request is answered 429 TooManyRequests with Retry-After: 1, which client-go retries by
 * itself. Long-running requests (watch, exec, proxy, followed logs) take no seat. 0 = unlimited.
 * A seat is held until the handler finishes or the request times out.
 */
import { errors } from '../../../api/meta/status.js';
import type { ApiserverMetrics } from '../metrics.js';
import { isReadOnlyRequest } from '../request-info.js';
import type { Exchange, Filter } from './filter.js';

class Pool {
  inUse = 0;
  constructor(readonly kind: 'readOnly' | 'mutating', readonly limit: number) {}
}

export function inflightLimit(opts: { maxRequestsInflight: number; maxMutatingRequestsInflight: number; metrics?: ApiserverMetrics }): Filter {
  const pools = {
    readOnly: new Pool('readOnly', opts.maxRequestsInflight),
    mutating: new Pool('mutating', opts.maxMutatingRequestsInflight),
  };
  return {
    name: 'inflight-limit',
    async run(x: Exchange, next: () => Promise<void>): Promise<void> {
      if (x.ctx.isLongRunning || x.upgrade) return next();
      const pool = isReadOnlyRequest(x.ctx.info) ? pools.readOnly : pools.mutating;
      if (pool.limit > 0 && pool.inUse >= pool.limit) {
        opts.metrics?.rejectedRequests.inc({ request_kind: pool.kind, reason: 'inflight' });
        throw errors.tooManyRequests(1);
      }
      pool.inUse++;
      opts.metrics?.currentInflight.set({ request_kind: pool.kind }, pool.inUse);
      try {
        await next();
      } finally {
        pool.inUse--;
        opts.metrics?.currentInflight.set({ request_kind: pool.kind }, pool.inUse);
      }
    },
  };
}

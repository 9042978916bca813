/** Reads what the request means (RequestInfo) and whether it is long-running. */
import { isLongRunningRequest, parseRequestInfo } from '../request-info.js';
import type { Exchange, Filter } from './filter.js';

export function requestInfo(): Filter {
  return {
    name: 'request-info',
    run(x: Exchange, next: () => Promise<void>): Promise<void> {
      const ctx = x.ctx;
      ctx.info = parseRequestInfo(x.req.method ?? 'GET', x.url);
      ctx.isLongRunning = isLongRunningRequest(ctx.info, ctx.query);
      return next();
    },
  };
}

/**
 * --request-timeout for everything that is not long-running: after the time limit the client
 * gets 504 Timeout, ctx.signal is aborted so the handler abandons its work, and the seat in the
 * in-flight pool is freed at once. `?timeout=32s` may shorten the limit (never lengthen it;
 * 0 means "the server default"). Writes a late handler still attempts go nowhere.
 */
import { ApiError, errors } from '../../../api/meta/status.js';
import { parseDuration } from '../../../util/duration.js';
import type { Exchange, Filter } from './filter.js';

export const TIMEOUT_MESSAGE = 'Timeout: request did not complete within requested timeout - context deadline exceeded';

/** The effective limit in ms for a request, or throws 400 for an unparsable ?timeout. */
export function effectiveTimeoutMs(defaultMs: number, query: URLSearchParams): number {
  const text = query.get('timeout');
  if (text === null || text === '') return defaultMs;
  let userMs: number;
  try {
    userMs = parseDuration(text);
  } catch {
    throw errors.badRequest(`invalid timeout specified in the request URL`);
  }
  return userMs > 0 && userMs < defaultMs ? userMs : defaultMs;
}

export function requestTimeout(opts: { requestTimeout: number }): Filter {
  return {
    name: 'request-timeout',
    async run(x: Exchange, next: () => Promise<void>): Promise<void> {
      if (x.ctx.isLongRunning || x.upgrade || !(opts.requestTimeout > 0)) return next();
      const ms = effectiveTimeoutMs(opts.requestTimeout, x.ctx.query);
      x.ctx.deadline = Date.now() + ms;
      let timer: NodeJS.Timeout | undefined;
      const expired = new Promise<'expired'>((resolve) => { timer = setTimeout(() => resolve('expired'), ms); });
      const work = next().then(() => 'done' as const);
      try {
        const outcome = await Promise.race([work, expired]);
        if (outcome === 'expired') {
          // The handler keeps running until it notices the aborted signal; its outcome is moot.
          work.catch((e: unknown) => x.ctx.log.debug({ err: e }, 'handler failed after its request timed out'));
          x.fail(new ApiError(504, 'Timeout', TIMEOUT_MESSAGE, { retryAfterSeconds: 1 }));
          x.abort.abort(new Error('request timed out'));
        }
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

/**
 * --request-timeout for everything that is not long-running: after the time limit the client
 * gets 504 Timeout, ctx.signal is aborted so the handler abandons its work, and the seat in the
 * in-flight pool is freed at once. `?timeout=32s` may shorten the limit (never lengthen it;
 * 0 means "the server default"). Writes a late handler still attempts go nowhere.
 */
import { ApiError, errors } from '../../../api/meta/status.js';
import { parseDuration } from '../../../util/duration.js';
import { bodyWriting } from '../body-writer.js';
import { DeadlineList, type DeadlineEntry } from './deadline-list.js';
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
  // Requests with the server's own limit (nearly all) share one timer; a shorter ?timeout gets
  // a timer of its own.
  const shared = opts.requestTimeout > 0 ? new DeadlineList(opts.requestTimeout) : undefined;
  return {
    name: 'request-timeout',
    run(x: Exchange, next: () => Promise<void>): Promise<void> {
      if (x.ctx.isLongRunning || x.upgrade || !shared) return next();
      let ms: number;
      try { ms = effectiveTimeoutMs(opts.requestTimeout, x.ctx.query); } catch (e) { return Promise.reject(e); }
      x.ctx.deadline = Date.now() + ms;
      // One promise per request (no race of two): settled by the handler or by the timer,
      // whichever comes first; on expiry the filter returns at once, freeing the seat.
      return new Promise<void>((resolve, reject) => {
        let expired = false;
        const onExpiry = (): void => {
          expired = true;
          x.fail(new ApiError(504, 'Timeout', TIMEOUT_MESSAGE, { retryAfterSeconds: 1 }));
          x.abort.abort(new Error('request timed out'));
          resolve();
        };
        const deadline = ms === shared.ms ? shared.add(onExpiry) : ownTimer(onExpiry, ms);
        let handled: Promise<void>;
        try { handled = next(); } catch (e) { deadline.cancel(); reject(e); return; }
        // The request is done once its body has been handed to the connection: a slow reader
        // past the deadline is cut off (x.fail), as Kubernetes aborts a handler blocked writing.
        const finished = (): void => {
          const w = bodyWriting(x.res);
          if (w) { void w.then(finished); return; }
          deadline.cancel();
          resolve();
        };
        handled.then(finished, (e: unknown) => {
          deadline.cancel();
          // The handler keeps running until it notices the aborted signal; its outcome is moot.
          if (expired) x.ctx.log.debug({ err: e }, 'handler failed after its request timed out');
          else reject(e);
        });
      });
    },
  };
}

function ownTimer(fn: () => void, ms: number): DeadlineEntry {
  const t = setTimeout(fn, ms);
  return { cancel: () => clearTimeout(t) };
}

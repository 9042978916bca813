/**
 * First filter: whatever a later filter or handler throws becomes a Status answer (ApiError as
 * is, anything else 500 InternalError), never a crashed process.
 */
import { errors, isApiError } from '../../../api/meta/status.js';
import type { Exchange, Filter } from './filter.js';

export function panicRecovery(): Filter {
  return {
    name: 'panic-recovery',
    async run(x: Exchange, next: () => Promise<void>): Promise<void> {
      try {
        await next();
      } catch (e) {
        if (isApiError(e)) {
          x.fail(e);
          return;
        }
        x.ctx.log.error({ err: e }, 'request handler failed');
        x.fail(errors.internal('the server could not complete the request', e));
      }
    },
  };
}

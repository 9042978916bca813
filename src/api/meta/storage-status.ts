/** The one translation of storage error codes into API Status errors. */
import { isStorageError } from '../../storage/errors.js';
import { ApiError, errors, type Qualified } from './status.js';

export function storageToApiError(e: unknown, q: Qualified): ApiError {
  if (e instanceof ApiError) return e;
  if (!isStorageError(e)) return errors.internal(e instanceof Error ? e.message : String(e), e);
  switch (e.code) {
    case 'KeyExists': return errors.alreadyExists(q);
    case 'KeyNotFound': return errors.notFound(q);
    // Precondition failures keep their own text (which precondition, which values).
    case 'Conflict':
      return e.message.startsWith('Precondition failed') ? errors.conflict(q, e.message) : errors.conflict(q);
    case 'Compacted':
      // Kubernetes' words (etcd3 interpretListError): an expired continue token carries its own;
      // a list at a compacted resourceVersion is "too old". (Watches answer with an ERROR event.)
      if (e.message.includes('continue parameter')) return errors.expired(e.message);
      return errors.expired('The resourceVersion for the provided list is too old.');
    case 'FutureRevision':
      // NewTooLargeResourceVersionError: a Timeout whose message NewTimeoutError prefixes. The
      // requested resourceVersion is taken from the message, where it is written as asked.
      return new ApiError(504, 'Timeout', `Timeout: Too large resource version: ${e.message.match(/\d+/)?.[0] ?? '?'}, current: ${e.details.currentRevision ?? 0}`,
        { causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }], retryAfterSeconds: 1 });
    case 'ValueTooLarge': return errors.tooLarge(1.5 * 1024 * 1024);
    case 'InvalidArgument': return errors.badRequest(e.message);
    case 'Unavailable': return errors.unavailable(e.message);
    default: return errors.internal(e.message, e);
  }
}

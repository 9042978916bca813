/** Parsing of resourceVersion strings at the storage boundary. */
import { StorageError } from './errors.js';

/** Kubernetes parses a resourceVersion as an unsigned 64-bit integer. */
const UINT64_MAX = 18446744073709551615n;

/**
 * Where a resourceVersion beyond any revision a store can reach lands: revisions are numbers,
 * exact up to 2^53, and a store never gets near that, so every larger resourceVersion is "in
 * the future" alike. One below the limit, so `revision + 1` stays exact.
 */
export const FAR_FUTURE_REVISION = Number.MAX_SAFE_INTEGER - 1;

/** True when `rv` is a resourceVersion Kubernetes accepts: a decimal unsigned 64-bit integer. */
export function isResourceVersion(rv: string): boolean {
  return /^\d{1,20}$/.test(rv) && BigInt(rv) <= UINT64_MAX;
}

/**
 * '' / undefined → undefined; a decimal revision → its number (FAR_FUTURE_REVISION for those
 * beyond it, up to 2^64-1); anything else is InvalidArgument.
 */
export function parseResourceVersion(rv: string | undefined, what = 'resourceVersion'): number | undefined {
  if (rv === undefined || rv === '') return undefined;
  if (!isResourceVersion(rv)) throw new StorageError('InvalidArgument', `invalid ${what}: ${JSON.stringify(rv)}`);
  const n = Number(rv);
  return n > FAR_FUTURE_REVISION ? FAR_FUTURE_REVISION : n;
}

/**
 * The FutureRevision error of a read that asked for `requested` (as the client wrote it: a
 * resourceVersion past 2^53 has no exact number here) while the store is at `current`, in
 * Kubernetes' words (NewTooLargeResourceVersionError).
 */
export function tooLargeResourceVersion(requested: string | number, current: number): StorageError {
  return new StorageError('FutureRevision', `Too large resource version: ${requested}, current: ${current}`, { currentRevision: current });
}

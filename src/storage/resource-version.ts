/** Parsing of resourceVersion strings at the storage boundary. */
import { StorageError } from './errors.js';

/** '' / undefined → undefined; a decimal revision → its number; anything else is InvalidArgument. */
export function parseResourceVersion(rv: string | undefined, what = 'resourceVersion'): number | undefined {
  if (rv === undefined || rv === '') return undefined;
  if (!/^\d{1,15}$/.test(rv)) throw new StorageError('InvalidArgument', `invalid ${what}: ${JSON.stringify(rv)}`);
  return Number(rv);
}

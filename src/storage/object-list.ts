/**
 * Lists: resourceVersion semantics, server-side filtering before the limit, and pagination
 * with continue tokens. All pages of one list are read at the first page's revision.
 */
import type { KubeObject } from '../api/resources/types.js';
import { decodeContinue, encodeContinue } from './continue-token.js';
import { StorageError, isStorageError } from './errors.js';
import { prefixEnd, type KeyValue, type RangeOptions, type RangeResult } from './interface.js';
import { listPrefixUnder, objectKeyUnder } from './keys.js';
import type { ListQuery, ListResult } from './object-store-types.js';
import type { ResourceStore } from './resource-store.js';
import { parseResourceVersion, tooLargeResourceVersion } from './resource-version.js';

/** Items read per backend round when a filter drops items (so pages still fill up). */
const FILTER_CHUNK = 500;

/** How the first page is read; `requested` is the resourceVersion as the client wrote it (for messages). */
type Mode = { kind: 'exact'; revision: number } | { kind: 'consistent' } | { kind: 'notOlderThan'; revision: number; requested: string };

export async function listObjects(rs: ResourceStore, q: ListQuery): Promise<ListResult> {
  const prefix = listPrefixUnder(rs.keyPrefix, q.namespace);
  // A named list reads one key (no prefix scan); continue tokens still name the list's prefix.
  const single = q.name !== undefined && q.name !== '' ? objectKeyUnder(rs.keyPrefix, q.namespace, q.name) : undefined;
  const rangeKey = single ?? prefix;
  const limit = q.limit !== undefined && q.limit > 0 ? Math.floor(q.limit) : 0;
  let after: string | undefined;
  let mode: Mode;
  if (q.continue) {
    if (q.resourceVersion && q.resourceVersion !== '0') {
      throw new StorageError('InvalidArgument', 'specifying resource version is not allowed when using continue');
    }
    const token = decodeContinue(q.continue, prefix);
    after = token.after;
    mode = { kind: 'exact', revision: token.rv };
  } else {
    const rv = parseResourceVersion(q.resourceVersion);
    if (q.resourceVersionMatch === 'Exact') {
      if (rv === undefined || rv === 0) throw new StorageError('InvalidArgument', 'resourceVersionMatch "Exact" requires a non-zero resourceVersion');
      mode = { kind: 'exact', revision: rv };
    } else if (q.resourceVersionMatch === 'NotOlderThan' && rv === undefined) {
      throw new StorageError('InvalidArgument', 'resourceVersionMatch "NotOlderThan" requires a resourceVersion');
    } else {
      mode = rv === undefined ? { kind: 'consistent' } : { kind: 'notOlderThan', revision: rv, requested: q.resourceVersion! };
    }
  }

  const filter = q.filter;
  const wantEntries = q.entries === true;
  const chunk = limit === 0 ? 0 : filter ? Math.max(limit, FILTER_CHUNK) : limit;
  const items: KubeObject[] = [];
  const entries: KeyValue[] = [];
  const keys: string[] = [];
  let revision = 0;
  let first: RangeResult | undefined;
  let cursor = after;
  let exhausted = false;
  let droppedAfterLast = false; // scanned items past the last returned one exist
  for (;;) {
    const opts: RangeOptions = { prefix: single === undefined, after: cursor, limit: chunk };
    const page = first === undefined ? await readFirst(rs, rangeKey, opts, mode, q.continue !== undefined) : await rs.backend.range(rangeKey, { ...opts, revision });
    if (first === undefined) { first = page; revision = page.revision; }
    let i = 0;
    for (; i < page.kvs.length; i++) {
      if (limit > 0 && keys.length === limit) break;
      const kv = page.kvs[i]!;
      if (wantEntries) {
        if (filter) {
          const d = rs.decodeNow(kv);
          if (!filter(d instanceof Promise ? await d : d)) continue;
        }
        entries.push(kv);
      } else {
        const d = rs.decodeNow(kv);
        const obj = d instanceof Promise ? await d : d;
        if (filter && !filter(obj)) continue;
        items.push(obj);
      }
      keys.push(kv.key);
    }
    if (i < page.kvs.length) { droppedAfterLast = true; break; }
    if (!page.more || page.kvs.length === 0) { exhausted = true; break; }
    if (limit > 0 && keys.length === limit) break;
    cursor = page.kvs[page.kvs.length - 1]!.key;
  }

  const result: {
    items: KubeObject[]; resourceVersion: string; continue?: string; remainingItemCount?: number;
    entries?: readonly KeyValue[]; decode?: (kv: KeyValue) => Promise<KubeObject>; plainJson?: boolean;
  } = { items, resourceVersion: String(revision) };
  if (wantEntries) {
    result.entries = entries;
    result.decode = rs.decoder;
    if (rs.storesPlainJson) result.plainJson = true;
  }
  const more = !exhausted || droppedAfterLast;
  if (limit > 0 && more && keys.length > 0) {
    const lastKey = keys[keys.length - 1]!;
    result.continue = encodeContinue(revision, prefix, lastKey);
    if (!filter) {
      const rest = after === undefined
        ? first!.count - keys.length
        // [lastKey, end) at the list revision, minus lastKey itself (it was just returned).
        : (await rs.backend.range(lastKey, { end: single === undefined ? prefixEnd(prefix) : single + '\u0000', revision, countOnly: true })).count - 1;
      if (rest > 0) result.remainingItemCount = rest; else delete result.continue;
    }
  }
  return result;
}

async function readFirst(rs: ResourceStore, prefix: string, opts: RangeOptions, mode: Mode, continuing: boolean): Promise<RangeResult> {
  try {
    switch (mode.kind) {
      case 'exact':
        return await rs.backend.range(prefix, { ...opts, revision: mode.revision });
      case 'consistent':
        return await rs.backend.range(prefix, opts);
      case 'notOlderThan': {
        // The cache waits for the revision (as the cacher does, 3 s); the backend answers at once.
        if (rs.cache) return await rs.cache.readNotOlderThan(prefix, opts, mode.revision);
        const page = await rs.backend.range(prefix, opts);
        if (page.revision < mode.revision) throw tooLargeResourceVersion(mode.requested, page.revision);
        return page;
      }
    }
  } catch (e) {
    if (mode.kind === 'notOlderThan' && isStorageError(e, 'FutureRevision')) {
      throw tooLargeResourceVersion(mode.requested, e.details.currentRevision ?? 0);
    }
    if (continuing && isStorageError(e, 'Compacted')) {
      throw new StorageError('Compacted',
        'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.',
        e.details, { cause: e });
    }
    throw e;
  }
}

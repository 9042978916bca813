/**
 * Object watches on top of a Backend watch (the watch cache's when enabled).
 *
 * - resourceVersion '' / '0': synthetic ADDED events for the current objects (a consistent
 *   list for '', any cached state for '0'), then every change after that list's revision.
 * - resourceVersion N: every change after N. A start older than the history yields one ERROR
 *   event with a 410 Expired Status ("too old resource version: N (M)") and ends.
 * - Filters (the predicate; namespace and name come from the key range): a MODIFIED event that
 *   makes an object leave the filter is delivered as DELETED (the previous object with the
 *   event's resourceVersion), one that makes it enter as ADDED, as kube-apiserver does.
 * - BOOKMARK (allowBookmarks): when the backend reports progress past the last revision sent,
 *   an event whose object carries only metadata.resourceVersion.
 * - A watcher ended for falling behind (backend 'Unavailable') just ends: clients resume.
 *
 * Sharing: decoded objects and ObjectEvents are shared by every watcher that sees the same
 * backend event (the watch cache hands each watcher the same event objects), so an event is
 * decoded once and its `cache` Map (serializations filled by the REST layer) is shared.
 * Consumers must treat event objects as read-only.
 */
import type { KubeObject } from '../api/resources/types.js';
import { errors } from '../api/meta/status.js';
import { StorageError, isStorageError } from './errors.js';
import type { RangeResult, WatchEvent } from './interface.js';
import { listPrefix, objectKey } from './keys.js';
import type { ObjectEvent, ObjectEventType, ObjectWatch, WatchQuery } from './object-store-types.js';
import type { ResourceStore } from './resource-store.js';
import { parseResourceVersion } from './resource-version.js';

interface Shared {
  cur?: Promise<KubeObject>;
  prev?: Promise<KubeObject>;
  readonly events: Map<ObjectEventType, ObjectEvent>;
}

/** Decoded events by backend event identity, bounded (recent events are the ones watchers share). */
export class SharedEventCache {
  private readonly map = new Map<WatchEvent, Shared>();
  constructor(private readonly capacity = 8192) {}

  entry(e: WatchEvent): Shared {
    let s = this.map.get(e);
    if (!s) {
      s = { events: new Map() };
      this.map.set(e, s);
      if (this.map.size > this.capacity) this.map.delete(this.map.keys().next().value!);
    }
    return s;
  }
}

export function watchObjects(rs: ResourceStore, storePrefix: string, q: WatchQuery, shared: SharedEventCache): ObjectWatch {
  const rv = parseResourceVersion(q.resourceVersion);
  const exact = q.name !== undefined && q.name !== '';
  const key = exact
    ? objectKey(storePrefix, { group: q.group, resource: q.resource, namespace: q.namespace, name: q.name! })
    : listPrefix(storePrefix, q.group, q.resource, q.namespace);
  const ac = new AbortController();
  const onAbort = (): void => ac.abort();
  if (q.signal) { if (q.signal.aborted) ac.abort(); else q.signal.addEventListener('abort', onAbort, { once: true }); }
  const matches = (o: KubeObject): boolean => !q.filter || q.filter(o);

  async function* run(): AsyncGenerator<ObjectEvent> {
    let start: number;
    if (rv === undefined || rv === 0) {
      let page: RangeResult;
      try {
        page = rv === 0 && rs.cache
          ? await rs.cache.readNotOlderThan(key, { prefix: !exact }, 0)
          : await rs.backend.range(key, { prefix: !exact, signal: ac.signal });
      } catch (e) {
        if (!ac.signal.aborted) yield failure(e, 0);
        return;
      }
      for (const kv of page.kvs) {
        let obj: KubeObject;
        try {
          obj = await rs.decode(kv);
        } catch (e) {
          yield failure(e, 0);
          return;
        }
        if (matches(obj)) yield { type: 'ADDED', object: obj, cache: new Map() };
      }
      start = page.revision;
    } else {
      start = rv;
    }
    let lastSent = start;
    const watch = rs.backend.watch(key, { prefix: !exact, fromRevision: start + 1, progressNotify: q.allowBookmarks === true, signal: ac.signal });
    try {
      for await (const batch of watch) {
        if (batch.events.length === 0) {
          if (q.allowBookmarks && batch.revision > lastSent) {
            lastSent = batch.revision;
            yield { type: 'BOOKMARK', object: { metadata: { resourceVersion: String(batch.revision) } } };
          }
          continue;
        }
        for (const e of batch.events) {
          const r = convert(rs, e, q.filter ? matches : undefined, shared);
          const ev = r instanceof Promise ? await r : r;
          if (ev) { lastSent = batch.revision; yield ev; }
        }
      }
    } catch (e) {
      if (ac.signal.aborted || isStorageError(e, 'Unavailable')) return; // the client resumes
      yield failure(e, start);
    } finally {
      watch.close();
    }
  }

  let iterating = false;
  return {
    close(): void { ac.abort(); q.signal?.removeEventListener('abort', onAbort); },
    [Symbol.asyncIterator](): AsyncIterator<ObjectEvent> {
      if (iterating) throw new StorageError('InvalidArgument', 'an object watch can be iterated once');
      iterating = true;
      const it = run();
      // End the iteration as soon as the watch is closed, even while waiting for the next event.
      return {
        next: () => (ac.signal.aborted ? it.return(undefined) : it.next()),
        return: (v?: unknown) => { ac.abort(); return it.return(v as undefined); },
        throw: (err?: unknown) => it.throw(err),
      };
    },
  };
}

function errorEvent(status: object): ObjectEvent {
  return { type: 'ERROR', object: status as unknown as KubeObject };
}

/** The ERROR event ending a watch: 410 Expired for a start older than the history, else the mapped failure. */
function failure(e: unknown, start: number): ObjectEvent {
  if (isStorageError(e, 'Compacted')) {
    return errorEvent(errors.expired(`too old resource version: ${start} (${e.details.compactRevision ?? 0})`).status);
  }
  if (isStorageError(e, 'Unavailable')) return errorEvent(errors.unavailable(e.message).status);
  return errorEvent(errors.internal(e instanceof Error ? e.message : String(e)).status);
}

/** The event type a change has for a watcher without a filter. */
function plainType(e: WatchEvent): ObjectEventType {
  if (e.type === 'DELETE') return 'DELETED';
  return e.prevKv || e.kv.version > 1 ? 'MODIFIED' : 'ADDED';
}

/**
 * The ObjectEvent for one backend event as one watcher sees it, or undefined when the watcher's
 * filter drops it. Synchronous when another watcher already built the same event (the common
 * fan-out case), so delivery to many watchers costs no decoding and no extra awaits.
 */
function convert(rs: ResourceStore, e: WatchEvent, matches: ((o: KubeObject) => boolean) | undefined,
  shared: SharedEventCache): ObjectEvent | undefined | Promise<ObjectEvent | undefined> {
  const s = shared.entry(e);
  if (!matches) {
    if (e.type === 'DELETE' && !e.prevKv) return undefined; // backends always send prevKv on delete
    const type = plainType(e);
    return s.events.get(type) ?? build(rs, e, s, type);
  }
  return convertFiltered(rs, e, matches, s);
}

async function convertFiltered(rs: ResourceStore, e: WatchEvent, matches: (o: KubeObject) => boolean, s: Shared): Promise<ObjectEvent | undefined> {
  if (e.type === 'DELETE') {
    if (!e.prevKv || !matches(await prevOf(rs, e, s))) return undefined;
    return s.events.get('DELETED') ?? build(rs, e, s, 'DELETED');
  }
  const curPasses = matches(await curOf(rs, e, s));
  const prevPasses = e.prevKv ? matches(await prevOf(rs, e, s)) : false;
  let type: ObjectEventType | undefined;
  if (!e.prevKv) type = curPasses ? plainType(e) : undefined;
  else if (curPasses) type = prevPasses ? 'MODIFIED' : 'ADDED';
  else if (prevPasses) type = 'DELETED';
  if (!type) return undefined;
  return s.events.get(type) ?? build(rs, e, s, type);
}

function curOf(rs: ResourceStore, e: WatchEvent, s: Shared): Promise<KubeObject> {
  return (s.cur ??= rs.decode(e.kv));
}

function prevOf(rs: ResourceStore, e: WatchEvent, s: Shared): Promise<KubeObject> {
  return (s.prev ??= rs.decode(e.prevKv!));
}

async function build(rs: ResourceStore, e: WatchEvent, s: Shared, type: ObjectEventType): Promise<ObjectEvent> {
  let ev: ObjectEvent;
  if (type === 'DELETED') {
    // The last state, stamped with the revision of the change that removed it.
    const p = await prevOf(rs, e, s);
    const object = { ...p, metadata: { ...p.metadata, resourceVersion: String(e.kv.modRevision) } };
    ev = { type, object, prevObject: p, cache: new Map() };
  } else if (type === 'MODIFIED') {
    ev = { type, object: await curOf(rs, e, s), prevObject: e.prevKv ? await prevOf(rs, e, s) : undefined, cache: new Map() };
  } else {
    ev = { type, object: await curOf(rs, e, s), cache: new Map() };
  }
  const raced = s.events.get(type); // another watcher built it while we awaited
  if (raced) return raced;
  s.events.set(type, ev);
  return ev;
}

/**
 * Object watches on top of a Backend watch (the watch cache's when enabled).
 *
 * - resourceVersion '' / '0': synthetic ADDED events for the current objects (a consistent
 *   list for '', any cached state for '0'), then every change after that list's revision.
 * - resourceVersion N: every change after N (none yet for an N in the future: the watch waits). A
 *   start older than the history yields one ERROR event with a 410 Expired Status ("too old
 *   resource version: N (M)" from the watch cache) and ends.
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
 *
 * Delivery: iterate, or call push() for synchronous delivery inside the watch cache's fan-out
 * (the path the API server's HTTP watches take; see ObjectWatch.push).
 */
import type { KubeObject } from '../api/resources/types.js';
import { errors } from '../api/meta/status.js';
import { StorageError, isStorageError } from './errors.js';
import type { RangeResult, Watch, WatchBatch, WatchTrigger } from './interface.js';
import { listPrefix, objectKey } from './keys.js';
import { SharedEventCache, convert, convertSync, eventValuesSync } from './object-events.js';
import type { ObjectEvent, ObjectEventConsumer, ObjectWatch, WatchQuery } from './object-store-types.js';
import type { ResourceStore } from './resource-store.js';
import { parseResourceVersion } from './resource-version.js';
import { CacheWatcher, type SharedDelivery } from './watch-cache/cache-watcher.js';

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
  const matcher = q.filter ? matches : undefined;

  /** The current objects for a start without a revision: a page, or the ERROR event ending the watch. */
  async function initialPage(): Promise<RangeResult | ObjectEvent | undefined> {
    try {
      return rv === 0 && rs.cache
        ? await rs.cache.readNotOlderThan(key, { prefix: !exact }, 0)
        : await rs.backend.range(key, { prefix: !exact, signal: ac.signal });
    } catch (e) {
      return ac.signal.aborted ? undefined : failure(e, 0);
    }
  }

  // The watch cache's index reads the trigger field of each event once, from the shared decode.
  const t = q.trigger;
  const trigger: WatchTrigger | undefined = t && q.filter && rs.canDecodeSync
    ? { id: t.field, value: t.value, valuesOf: (e) => eventValuesSync(rs, e, shared, t.valueOf) }
    : undefined;
  const backendWatch = (start: number): Watch =>
    rs.backend.watch(key, { prefix: !exact, fromRevision: start + 1, progressNotify: q.allowBookmarks === true, signal: ac.signal, trigger });

  async function* run(): AsyncGenerator<ObjectEvent> {
    let start: number;
    if (rv === undefined || rv === 0) {
      const page = await initialPage();
      if (!page) return;
      if ('type' in page) { yield page; return; }
      for (const kv of page.kvs) {
        let obj: KubeObject;
        try {
          const d = rs.decodeNow(kv);
          obj = d instanceof Promise ? await d : d;
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
    const watch = backendWatch(start);
    try {
      for await (const batch of watch) {
        if (batch.events.length === 0) {
          if (q.allowBookmarks && batch.revision > lastSent) {
            lastSent = batch.revision;
            yield bookmark(batch.revision);
          }
          continue;
        }
        for (const e of batch.events) {
          const r = convert(rs, e, matcher, shared);
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

  /**
   * Push delivery (ObjectWatch.push): the same events as run(), in the same order. On a watch
   * cache without an at-rest transformer every live event is converted and handed over
   * synchronously inside the cache's fan-out (no queue, no promise per watcher); otherwise the
   * backend watch is iterated and events are pushed as they come.
   */
  function push(c: ObjectEventConsumer): { resume(): void } {
    claim();
    let ended = false;
    let full = false;
    /** The revision of the last event (or bookmark) handed over. */
    let lastSent = 0;
    let waiting: (() => void) | undefined;
    let flow: { resume(): void } | undefined;
    const end = (): void => {
      if (ended) return;
      ended = true;
      ac.abort();
      q.signal?.removeEventListener('abort', onAbort);
      const w = waiting;
      waiting = undefined;
      w?.();
      c.end();
    };
    const emit = (ev: ObjectEvent): boolean => {
      if (ended) return true;
      let ok: boolean;
      try {
        ok = c.event(ev);
      } catch {
        end(); // a failing consumer ends its own watch, never the cache's fan-out
        return true;
      }
      if (!ok) full = true;
      return ok;
    };
    /** Resolves once the consumer has room (or the watch ended). */
    const room = (): Promise<void> => (full && !ended ? new Promise<void>((r) => { waiting = r; }) : Promise.resolve());
    if (ac.signal.aborted) queueMicrotask(end); else ac.signal.addEventListener('abort', end, { once: true });

    /**
     * onBatch split for the cache's shared fan-out (CacheWatcher SharedDelivery): conversion and
     * the consumer's prepare once per batch for every watcher of this cache and range with an
     * equal consumer key; then the consumer's own deliver, called by the cache directly (this
     * watch's state needs nothing per event there: ending it closes the cache watcher at once,
     * and the bookmark check reads the cache watcher's lastShared). Only without a filter (with
     * one, the event types depend on the watcher). A prepare that throws makes the cache fall
     * back to onBatch, which meets the failure as before.
     */
    function sharedDelivery(c: ObjectEventConsumer): SharedDelivery<unknown> | undefined {
      const cs = c.shared;
      if (!cs || matcher) return undefined;
      return {
        // One watch cache serves one ResourceStore, so the consumer's key says it all.
        key: cs.key,
        prepare: (b) => {
          const items: unknown[] = [];
          for (const e of b.events) {
            const ev = convertSync(rs, e, undefined, shared);
            if (ev) items.push(cs.prepare(ev));
          }
          return items.length === 1 ? items[0] : cs.join(items);
        },
        sink: cs,
      };
    }

    async function startPush(): Promise<void> {
      let start: number;
      if (rv === undefined || rv === 0) {
        const page = await initialPage();
        if (!page) return end();
        if ('type' in page) { emit(page); return end(); }
        for (const kv of page.kvs) {
          if (ended) return;
          let obj: KubeObject;
          try {
            const d = rs.decodeNow(kv);
            obj = d instanceof Promise ? await d : d;
          } catch (e) {
            emit(failure(e, 0));
            return end();
          }
          if (matches(obj) && !emit({ type: 'ADDED', object: obj, cache: new Map() })) await room();
        }
        start = page.revision;
      } else {
        start = rv;
      }
      if (ended) return;
      lastSent = start;
      const watch = backendWatch(start);
      if (watch instanceof CacheWatcher && rs.canDecodeSync) {
        const onBatch = (batch: WatchBatch): boolean => {
          if (ended) return true;
          if (batch.events.length === 0) {
            if (!q.allowBookmarks || batch.revision <= Math.max(lastSent, watch.lastShared)) return true;
            lastSent = batch.revision;
            return emit(bookmark(batch.revision));
          }
          let ok = true;
          for (const e of batch.events) {
            let ev: ObjectEvent | undefined;
            try {
              ev = convertSync(rs, e, matcher, shared);
            } catch (err) {
              emit(failure(err, start));
              end();
              return true;
            }
            if (ev) { lastSent = batch.revision; if (!emit(ev)) ok = false; }
            if (ended) return true;
          }
          return ok;
        };
        flow = watch.push({
          batch: onBatch,
          shared: sharedDelivery(c),
          end: (err) => {
            if (err && !ac.signal.aborted && !isStorageError(err, 'Unavailable')) emit(failure(err, start));
            end();
          },
        });
        return;
      }
      try {
        for await (const batch of watch) {
          if (ended) break;
          if (batch.events.length === 0) {
            if (q.allowBookmarks && batch.revision > lastSent) {
              lastSent = batch.revision;
              if (!emit(bookmark(batch.revision))) await room();
            }
            continue;
          }
          for (const e of batch.events) {
            const r = convert(rs, e, matcher, shared);
            const ev = r instanceof Promise ? await r : r;
            if (ev && !ended) { lastSent = batch.revision; if (!emit(ev)) await room(); }
          }
        }
      } catch (e) {
        if (!ac.signal.aborted && !isStorageError(e, 'Unavailable')) emit(failure(e, start));
      } finally {
        watch.close();
        end();
      }
    }

    startPush().catch((e: unknown) => { emit(failure(e, 0)); end(); });
    return {
      resume: (): void => {
        full = false;
        const w = waiting;
        waiting = undefined;
        w?.();
        flow?.resume();
      },
    };
  }

  let iterating = false;
  const claim = (): void => {
    if (iterating) throw new StorageError('InvalidArgument', 'an object watch can be iterated once');
    iterating = true;
  };
  return {
    close(): void { ac.abort(); q.signal?.removeEventListener('abort', onAbort); },
    push,
    [Symbol.asyncIterator](): AsyncIterator<ObjectEvent> {
      claim();
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

function bookmark(revision: number): ObjectEvent {
  return { type: 'BOOKMARK', object: { metadata: { resourceVersion: String(revision) } } };
}

function errorEvent(status: object): ObjectEvent {
  return { type: 'ERROR', object: status as unknown as KubeObject };
}

/**
 * The ERROR event ending a watch: 410 Expired for a start older than the history, in Kubernetes'
 * words: the cacher's "too old resource version: <requested> (<last before its history>)", or
 * etcd's when the backend was compacted past it (a watch without the cache); else the mapped failure.
 */
function failure(e: unknown, start: number): ObjectEvent {
  if (isStorageError(e, 'Compacted')) {
    return errorEvent(errors.expired(e.details.beforeHistory
      ? `too old resource version: ${start} (${e.details.compactRevision ?? 0})`
      : 'The resourceVersion for the provided watch is too old.').status);
  }
  if (isStorageError(e, 'Unavailable')) return errorEvent(errors.unavailable(e.message).status);
  return errorEvent(errors.internal(e instanceof Error ? e.message : String(e)).status);
}

export { SharedEventCache };

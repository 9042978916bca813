/**
 * The object store: Kubernetes objects on revisioned Backends (contract:
 * object-store-types.ts; key layout: keys.ts; lists: object-list.ts; watches: object-watch.ts).
 *
 * Per resource it keeps a ResourceStore: the backend chosen by `backendFor`, wrapped in a
 * WatchCache when the watch cache is on for the resource (all caches of one backend share one
 * WatchFeed, i.e. one backend watch), the at-rest transformer and the codec.
 *
 * Reads by resourceVersion: unset → consistent (the watch cache answers once it has reached
 * the backend's current revision); '0' → whatever the cache holds; N → not older than N
 * (from the cache once it reaches N); N + Exact → a history read from the backend.
 *
 * Writes: create rejects a set resourceVersion; guaranteedUpdate reads (first from the cache,
 * a possibly stale suggestion, then from the backend after a conflict), checks preconditions,
 * calls tryUpdate, skips the write when nothing changed, and compare-and-swaps on the
 * modification revision, retrying conflicts up to MAX_UPDATE_ATTEMPTS times with backoff.
 */
import { pino, type Logger } from 'pino';
import type { KubeObject } from '../api/resources/types.js';
import { jsonCodec, type ObjectCodec } from './codec.js';
import type { ValueTransformer } from './encryption/transformer.js';
import { StorageError, isStorageError } from './errors.js';
import type { Backend, KeyValue } from './interface.js';
import { listPrefixUnder, normalizePrefix, objectKeyUnder, resourcePrefix } from './keys.js';
import { listObjects } from './object-list.js';
import type {
  GuaranteedUpdateOptions, ListQuery, ListResult, ObjectRef, ObjectStore, ObjectWatch, StoredEntry, WatchQuery, WrittenJson,
} from './object-store-types.js';
import { SharedEventCache, watchObjects } from './object-watch.js';
import { ResourceStore, jsonEqual, type EncodedObject } from './resource-store.js';
import { parseResourceVersion, tooLargeResourceVersion } from './resource-version.js';
import { WatchCache } from './watch-cache/watch-cache.js';
import { WatchFeed } from './watch-cache/watch-feed.js';
import { cloneJson } from '../util/json-clone.js';

/** Conflict retries of one guaranteedUpdate/delete (Kubernetes retries without a bound; we bound it). */
const MAX_UPDATE_ATTEMPTS = 16;

export interface WatchCacheConfig {
  readonly enabled: boolean;
  /** --default-watch-cache-size: minimum events of history per resource (0 disables caching). */
  readonly defaultSize: number;
  /** --watch-cache-sizes: 'resource[.group]' → size (0 disables the cache for that resource). */
  readonly sizes: Readonly<Record<string, number>>;
  /** Live events a watcher may leave unconsumed before it is closed (default 1000). */
  readonly maxPendingPerWatcher?: number;
  /** History kept regardless of size (default 75 s). */
  readonly historyWindowMs?: number;
}

export interface ObjectStoreOptions {
  readonly backendFor: (group: string, resource: string) => Backend;
  /** --kvstore-prefix (default '/registry'). */
  readonly prefix?: string;
  readonly codec?: ObjectCodec;
  /** Encryption at rest: one transformer for all resources, or one per resource (undefined: plain). */
  readonly transformer?: ValueTransformer | ((group: string, resource: string) => ValueTransformer | undefined);
  readonly watchCache?: WatchCacheConfig;
  readonly log?: Logger;
}

export function createObjectStore(opts: ObjectStoreOptions): ObjectStore & ObjectStoreInternals {
  return new KubeObjectStore(opts);
}

/** Extra surface for the API server's internals and tests. */
export interface ObjectStoreInternals {
  /** The watch cache serving a resource, if any (metrics, tests). */
  watchCacheFor(group: string, resource: string): WatchCache | undefined;
  /** Every distinct backend used so far (compaction, metrics). */
  backends(): Backend[];
}

class KubeObjectStore implements ObjectStore, ObjectStoreInternals {
  private readonly prefix: string;
  private readonly codec: ObjectCodec;
  private readonly log: Logger;
  private readonly resources = new Map<string, ResourceStore>();
  private readonly feeds = new Map<Backend, WatchFeed>();
  private readonly shared = new SharedEventCache();
  /** The ResourceStore rs() returned last. */
  private lastRs: ResourceStore | undefined;
  private closed = false;

  constructor(private readonly opts: ObjectStoreOptions) {
    this.prefix = normalizePrefix(opts.prefix ?? '/registry');
    this.codec = opts.codec ?? jsonCodec;
    this.log = opts.log ?? pino({ level: 'silent' });
  }

  watchCacheFor(group: string, resource: string): WatchCache | undefined {
    return this.rs(group, resource).cache;
  }

  backends(): Backend[] {
    return [...new Set([...this.resources.values()].map((r) => r.raw))];
  }

  async get(ref: ObjectRef, opts: { resourceVersion?: string } = {}): Promise<KubeObject> {
    const rs = this.rs(ref.group, ref.resource);
    const key = objectKeyUnder(rs.keyPrefix, ref.namespace, ref.name);
    const kv = await readEntry(rs, key, opts.resourceVersion);
    if (!kv) throw notFound(key);
    return rs.decode(kv);
  }

  async getEntry(ref: ObjectRef, opts: { resourceVersion?: string } = {}): Promise<StoredEntry | undefined> {
    const rs = this.rs(ref.group, ref.resource);
    const kv = await readEntry(rs, objectKeyUnder(rs.keyPrefix, ref.namespace, ref.name), opts.resourceVersion);
    return kv ? entryOf(rs, kv) : undefined;
  }

  peekEntry(ref: ObjectRef, consistent = false): StoredEntry | undefined | null {
    const rs = this.rs(ref.group, ref.resource);
    const kv = rs.cache ? rs.cache.peek(objectKeyUnder(rs.keyPrefix, ref.namespace, ref.name), consistent) : null;
    return kv ? entryOf(rs, kv) : kv;
  }

  peekCount(q: { group: string; resource: string; namespace: string }): number | null {
    const rs = this.rs(q.group, q.resource);
    return rs.cache ? rs.cache.peekCount(listPrefixUnder(rs.keyPrefix, q.namespace)) : null;
  }

  list(q: ListQuery): Promise<ListResult> {
    return listObjects(this.rs(q.group, q.resource), q);
  }

  async create(ref: ObjectRef, obj: KubeObject, opts: { ttlSeconds?: number; dryRun?: boolean; adopt?: boolean; onWritten?: (w: WrittenJson) => void } = {}): Promise<KubeObject> {
    if (obj.metadata?.resourceVersion) {
      throw new StorageError('InvalidArgument', 'resourceVersion should not be set on objects to be created');
    }
    const rs = this.rs(ref.group, ref.resource);
    const key = objectKeyUnder(rs.keyPrefix, ref.namespace, ref.name);
    const pending = rs.encode(obj, key, opts.adopt);
    const enc = pending instanceof Promise ? await pending : pending;
    if (opts.dryRun) {
      if ((await rs.backend.get(key)).kv) throw new StorageError('KeyExists', `${key} already exists`, { key });
      const out = rs.decodeWritten(enc, 0);
      delete out.metadata!.resourceVersion;
      return out;
    }
    const { revision } = await rs.backend.create(key, enc.stored, ttl(opts.ttlSeconds));
    return toldWritten(rs, opts.onWritten, rs.decodeWritten(enc, revision), enc, revision);
  }

  async guaranteedUpdate(ref: ObjectRef, tryUpdate: (current: KubeObject | undefined) => Promise<KubeObject> | KubeObject,
    opts: GuaranteedUpdateOptions = {}): Promise<KubeObject> {
    const rs = this.rs(ref.group, ref.resource);
    const key = objectKeyUnder(rs.keyPrefix, ref.namespace, ref.name);
    let fresh = !rs.cache; // without a cache every read is already fresh
    for (let attempt = 0; attempt < MAX_UPDATE_ATTEMPTS; attempt++) {
      if (attempt > 1) await backoff(attempt);
      const read = this.readCurrent(rs, key, fresh);
      const kv = read instanceof Promise ? await read : read;
      const decoded = kv ? rs.decodeNow(kv) : undefined;
      const current = decoded instanceof Promise ? await decoded : decoded;
      let updated: KubeObject;
      try {
        if (current) checkPreconditions(current, opts.preconditions);
        updated = await tryUpdate(current ? cloneJson(current) : undefined);
      } catch (e) {
        // A stale suggestion may be why the precondition or tryUpdate failed: retry on fresh data.
        if (!fresh) { fresh = true; continue; }
        throw e;
      }
      const pending = rs.encode(updated, key);
      const enc = pending instanceof Promise ? await pending : pending;
      // The canonical (decoded) form of what is written: compared with the current object, and
      // handed back after the write (it is a fresh object nobody else holds).
      const written = rs.decodeWritten(enc, 0);
      if (current && unchanged(rs, enc, kv!, written, current)) {
        if (!fresh) { fresh = true; continue; } // equal to a stale copy proves nothing
        return current;
      }
      if (opts.dryRun) return withRevision(written, kv ? kv.modRevision : 0);
      try {
        const { revision } = kv
          ? await rs.backend.update(key, enc.stored, kv.modRevision, ttl(opts.ttlSeconds))
          : await rs.backend.create(key, enc.stored, ttl(opts.ttlSeconds));
        return toldWritten(rs, opts.onWritten, withRevision(written, revision), enc, revision);
      } catch (e) {
        if (isStorageError(e, 'Conflict') || isStorageError(e, 'KeyExists') || (kv && isStorageError(e, 'KeyNotFound'))) {
          fresh = true;
          continue;
        }
        throw e;
      }
    }
    throw new StorageError('Conflict', `too many conflicting updates of ${key}; please apply your changes to the latest version and try again`, { key });
  }

  async delete(ref: ObjectRef, opts: { preconditions?: { uid?: string; resourceVersion?: string }; dryRun?: boolean } = {}): Promise<KubeObject> {
    const rs = this.rs(ref.group, ref.resource);
    const key = objectKeyUnder(rs.keyPrefix, ref.namespace, ref.name);
    let fresh = !rs.cache;
    for (let attempt = 0; attempt < MAX_UPDATE_ATTEMPTS; attempt++) {
      if (attempt > 1) await backoff(attempt);
      const read = this.readCurrent(rs, key, fresh);
      const kv = read instanceof Promise ? await read : read;
      if (!kv) {
        if (!fresh) { fresh = true; continue; }
        throw notFound(key);
      }
      const decoded = rs.decodeNow(kv);
      const current = decoded instanceof Promise ? await decoded : decoded;
      try {
        checkPreconditions(current, opts.preconditions);
      } catch (e) {
        if (!fresh) { fresh = true; continue; }
        throw e;
      }
      if (opts.dryRun) return current;
      try {
        await rs.backend.delete(key, kv.modRevision);
        return current;
      } catch (e) {
        if (isStorageError(e, 'Conflict')) { fresh = true; continue; }
        throw e;
      }
    }
    throw new StorageError('Conflict', `too many conflicting updates of ${key}; please try again`, { key });
  }

  watch(q: WatchQuery): ObjectWatch {
    return watchObjects(this.rs(q.group, q.resource), this.prefix, q, this.shared);
  }

  async count(resource: string, group: string): Promise<number> {
    const rs = this.rs(group, resource);
    if (rs.cache?.ready) return (await rs.cache.readNotOlderThan(rs.keyPrefix, { prefix: true, countOnly: true }, 0)).count;
    return (await rs.raw.range(rs.keyPrefix, { prefix: true, countOnly: true })).count;
  }

  currentRevision(): Promise<number> {
    return this.opts.backendFor('', '').currentRevision();
  }

  /** Closes the watch caches and feeds; the backends belong to the caller. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all([...this.resources.values()].map((r) => r.cache?.close()));
    await Promise.all([...this.feeds.values()].map((f) => f.close()));
  }

  /**
   * The entry an update or delete starts from: with `fresh`, read from the backend; else the
   * watch cache's copy as a suggestion (the write's revision check catches a stale one), at once
   * when the cache is ready.
   */
  private readCurrent(rs: ResourceStore, key: string, fresh: boolean): KeyValue | undefined | Promise<KeyValue | undefined> {
    if (!fresh && rs.cache) {
      const cached = rs.cache.peek(key);
      if (cached !== null) return cached;
      return rs.cache.readNotOlderThan(key, {}, 0).then((r) => r.kvs[0]);
    }
    return rs.raw.get(key).then((r) => r.kv);
  }

  private rs(group: string, resource: string): ResourceStore {
    if (this.closed) throw new StorageError('Unavailable', 'object store is closed');
    // Writes come in runs on one resource: the last one answers without building the map key.
    const last = this.lastRs;
    if (last !== undefined && last.resource === resource && last.group === group) return last;
    const id = `${group}/${resource}`;
    let rs = this.resources.get(id);
    if (rs) { this.lastRs = rs; return rs; }
    const raw = this.opts.backendFor(group, resource);
    const keyPrefix = resourcePrefix(this.prefix, group, resource);
    const cache = this.makeCache(group, resource, raw, keyPrefix);
    const t = this.opts.transformer;
    const transformer = typeof t === 'function' ? t(group, resource) : t;
    rs = new ResourceStore(group, resource, cache ?? raw, raw, cache, keyPrefix, this.codec, transformer);
    this.resources.set(id, rs);
    this.lastRs = rs;
    return rs;
  }

  private makeCache(group: string, resource: string, raw: Backend, keyPrefix: string): WatchCache | undefined {
    const wc = this.opts.watchCache;
    if (!wc?.enabled) return undefined;
    const size = wc.sizes[group ? `${resource}.${group}` : resource] ?? wc.defaultSize;
    if (size <= 0) return undefined;
    let feed = this.feeds.get(raw);
    if (!feed) {
      feed = new WatchFeed(raw, `${this.prefix}/`, { log: this.log.child({ component: 'watch-feed', backend: raw.name }) });
      this.feeds.set(raw, feed);
    }
    return new WatchCache(raw, {
      prefix: keyPrefix,
      feed,
      minEvents: size,
      historyWindowMs: wc.historyWindowMs,
      maxPendingPerWatcher: wc.maxPendingPerWatcher,
      olderThanHistory: 'expired',
      log: this.log.child({ component: 'watch-cache', resource: group ? `${resource}.${group}` : resource }),
    });
  }
}

const NO_TTL: { ttlSeconds?: number } = Object.freeze({});

function ttl(ttlSeconds: number | undefined): { ttlSeconds?: number } {
  return ttlSeconds !== undefined && ttlSeconds > 0 ? { ttlSeconds } : NO_TTL;
}

function notFound(key: string): StorageError {
  return new StorageError('KeyNotFound', `${key} not found`, { key });
}

/** Sets metadata.resourceVersion of an object the store just decoded (and so owns). */
function withRevision(o: KubeObject, revision: number): KubeObject {
  o.metadata!.resourceVersion = String(revision);
  return o;
}

function entryOf(rs: ResourceStore, kv: KeyValue): StoredEntry {
  return { kv, decode: rs.decoder, plainJson: rs.storesPlainJson };
}

/** Returns the object a write stored, after telling `onWritten` its stored JSON (when the values are plain JSON). */
function toldWritten(rs: ResourceStore, onWritten: ((w: WrittenJson) => void) | undefined, object: KubeObject, enc: EncodedObject, revision: number): KubeObject {
  if (onWritten && rs.storesPlainJson) onWritten({ object, json: enc.plain, revision, rvAt: enc.rvAt });
  return object;
}

/**
 * Whether an update's result equals the current object (keys in any order), so nothing is
 * written. With plain JSON values the bytes decide first: the stored value is the current
 * object's JSON without resourceVersion, as `enc.plain` is the result's, so equal bytes mean
 * equal objects, and texts of different lengths cannot be equal (reordered members keep the
 * length). Equal lengths with different bytes compare the objects.
 */
function unchanged(rs: ResourceStore, enc: EncodedObject, kv: KeyValue, written: KubeObject, current: KubeObject): boolean {
  if (rs.storesPlainJson) {
    if (enc.plain.length !== kv.value.length) return false;
    if (enc.plain.equals(kv.value)) return true;
  }
  return jsonEqual(stripRv(written), stripRv(current));
}

function stripRv(o: KubeObject): KubeObject {
  const { resourceVersion: _rv, ...meta } = o.metadata ?? {};
  return { ...o, metadata: meta };
}

function checkPreconditions(obj: KubeObject, p: { uid?: string; resourceVersion?: string } | undefined): void {
  if (!p) return;
  const meta = obj.metadata ?? {};
  if (p.uid !== undefined && p.uid !== '' && p.uid !== meta.uid) {
    throw new StorageError('Conflict', `Precondition failed: UID in precondition: ${p.uid}, UID in object meta: ${meta.uid ?? ''}`);
  }
  if (p.resourceVersion !== undefined && p.resourceVersion !== '' && p.resourceVersion !== meta.resourceVersion) {
    throw new StorageError('Conflict',
      `Precondition failed: ResourceVersion in precondition: ${p.resourceVersion}, ResourceVersion in object meta: ${meta.resourceVersion ?? ''}`);
  }
}

function backoff(attempt: number): Promise<void> {
  const ms = Math.min(50, 2 ** (attempt - 2)) * (0.5 + Math.random());
  return new Promise((r) => setTimeout(r, ms));
}

/** The entry of `key` as a get reads it: from the cache for a resourceVersion (not older than it), else consistently. */
async function readEntry(rs: ResourceStore, key: string, resourceVersion: string | undefined): Promise<KeyValue | undefined> {
  const rv = parseResourceVersion(resourceVersion);
  if (rv !== undefined && rs.cache) {
    try {
      return (await rs.cache.readNotOlderThan(key, {}, rv)).kvs[0];
    } catch (e) {
      throw isStorageError(e, 'FutureRevision') ? tooLargeResourceVersion(resourceVersion!, e.details.currentRevision ?? 0) : e;
    }
  }
  const r = await rs.backend.get(key);
  if (rv !== undefined && r.revision < rv) throw tooLargeResourceVersion(resourceVersion!, r.revision);
  return r.kv;
}

/**
 * The object store: Kubernetes objects on top of a revisioned Backend.
 * Keys are `<prefix>/<resource>/<namespace>/<name>` (no namespace part for cluster-scoped
 * resources), where <resource> is the plural, prefixed by the group for non-core groups the
 * way Kubernetes does ('/registry/deployments/default/x', '/registry/pods/ns/p').
 * `metadata.resourceVersion` of every returned object is its modification revision (string).
 * All errors are StorageError codes (the API layer maps them to Status).
 */
import type { KubeObject } from '../api/resources/types.js';
import type { KeyValue } from './interface.js';

export interface ObjectRef {
  /** Plural resource name, e.g. 'pods' or 'deployments'. */
  readonly resource: string;
  /** API group ('' for core). */
  readonly group: string;
  /** Namespace, or '' for cluster-scoped resources. */
  readonly namespace: string;
  readonly name: string;
}

export interface ListQuery {
  readonly resource: string;
  readonly group: string;
  /** Namespace to list in; '' = all namespaces (or cluster-scoped). */
  readonly namespace: string;
  /**
   * Only the object of this name: a one-key read instead of a scan (e.g. for a fieldSelector
   * pinning metadata.name). For a namespaced resource only together with a namespace.
   */
  readonly name?: string;
  readonly limit?: number;
  /** Opaque continue token from a previous page (an expired one: StorageError 'Compacted'). */
  readonly continue?: string;
  /**
   * resourceVersion semantics of Kubernetes lists:
   *  undefined / ''   most recent (consistent read);
   *  '0'              any cached state (served from the watch cache when on);
   *  'N' + match 'NotOlderThan' (default when N given)   at least as new as N;
   *  'N' + match 'Exact'                                  exactly at N (history read).
   */
  readonly resourceVersion?: string;
  readonly resourceVersionMatch?: 'NotOlderThan' | 'Exact';
  /** Server-side filtering; applied before limit so pages are full. */
  readonly filter?: (obj: KubeObject) => boolean;
  /**
   * Return the page's stored entries (ListResult.entries) instead of decoded items (`items`
   * stays empty): for callers that serve per-entry serializations and decode only on a miss
   * (the REST layer's list fast path). The filter still sees decoded objects.
   */
  readonly entries?: boolean;
}

export interface ListResult {
  readonly items: KubeObject[];
  /** The revision the list is consistent at (string). */
  readonly resourceVersion: string;
  /** Token for the next page; absent on the last page. */
  readonly continue?: string;
  readonly remainingItemCount?: number;
  /**
   * With ListQuery.entries: the stored entries of the page, in order. An entry is immutable
   * and, from the watch cache, the same object for as long as the stored object is unchanged,
   * so callers may key per-entry caches (serializations) on its identity.
   */
  readonly entries?: readonly KeyValue[];
  /** With ListQuery.entries: decodes one of `entries` into the item it stands for. */
  readonly decode?: (entry: KeyValue) => Promise<KubeObject>;
  /**
   * With ListQuery.entries: true when every entry's value is exactly JSON.stringify of its object
   * without metadata.resourceVersion (the revision is the entry's modRevision), so a caller may
   * splice the bytes instead of decoding them.
   */
  readonly plainJson?: boolean;
}

export type ObjectEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

export interface ObjectEvent {
  readonly type: ObjectEventType;
  /** The object (for DELETED its last state with the delete's resourceVersion; for BOOKMARK only metadata.resourceVersion). */
  readonly object: KubeObject;
  /** The object before the change (MODIFIED, DELETED), for filters that need both. */
  readonly prevObject?: KubeObject;
  /**
   * Lazily computed, shared serializations of this event, one per encoding (e.g. 'json'):
   * an event is serialized once and the bytes are shared by every watcher.
   */
  readonly cache?: Map<string, Buffer>;
}

export interface WatchQuery {
  readonly resource: string;
  readonly group: string;
  readonly namespace: string;
  /** Single object watch (fieldSelector metadata.name=x) when set. */
  readonly name?: string;
  /** '' / undefined / '0': start with synthetic ADDED events for current objects, then changes. 'N': changes after N. */
  readonly resourceVersion?: string;
  readonly allowBookmarks?: boolean;
  readonly filter?: (obj: KubeObject) => boolean;
  /**
   * The filter admits only objects whose `field` is `value`, as `valueOf` reads it (a field
   * selector pinning one of the definition's watchTriggers): the watch cache then skips this
   * watch for events whose object has another value before and after the change.
   */
  readonly trigger?: { readonly field: string; readonly value: string; readonly valueOf: (obj: KubeObject) => string | undefined };
  readonly signal?: AbortSignal;
}

/**
 * A watch. Iterate for events. Ends when the signal aborts or close() is called. An expired
 * start revision yields one ERROR event carrying a 410 Expired Status and then ends.
 * A watcher that falls too far behind is ended too (the client resumes from its last version).
 */
export interface ObjectWatch extends AsyncIterable<ObjectEvent> {
  close(): void;
  /**
   * Optional push delivery, the fan-out fast path (use it instead of iterating, never both):
   * the same events, in the same order, handed to `consumer.event` synchronously as the store
   * sees them. `event` returns false when the consumer's transport is full; call `resume()`
   * once it has room. A consumer that stays full too long is ended like a slow iterating
   * watcher. `end` is called once, when the watch ends for any reason (close, abort, falling
   * behind, after an ERROR event). Absent when the store cannot push (the caller iterates).
   */
  push?(consumer: ObjectEventConsumer): { resume(): void };
}

export interface ObjectEventConsumer {
  event(ev: ObjectEvent): boolean;
  end(): void;
  /**
   * event(ev) split for a fan-out, as the watch cache's SharedDelivery: `prepare(ev)` depends
   * only on the event and on `key` (it may throw; the consumer then gets event(ev)), `join`
   * makes one prepared value of several (or none) for a batch, and deliver(prepared) does what
   * event(ev) does for each event joined; the fan-out calls it on this object. Watchers of one
   * range without a filter whose consumers carry equal keys share one prepare() per event.
   * Used for live changes only; a deliver that throws ends the watch quietly.
   */
  shared?: { readonly key: string; prepare(ev: ObjectEvent): unknown; join(prepared: unknown[]): unknown; deliver(prepared: unknown): boolean };
}

export interface GuaranteedUpdateOptions {
  /** Preconditions checked against the current object before calling tryUpdate. */
  readonly preconditions?: { uid?: string; resourceVersion?: string };
  /** Expires the object after this many seconds. */
  readonly ttlSeconds?: number;
  /** Do not write, return what would have been written. */
  readonly dryRun?: boolean;
  /** See WrittenJson: told of the write whose object guaranteedUpdate returns. */
  readonly onWritten?: (w: WrittenJson) => void;
}

/**
 * A write's stored value, handed to the writer when it is plain JSON (as ListResult.plainJson
 * means it: exactly JSON.stringify of `object` without metadata.resourceVersion), so the
 * writer may answer with those bytes instead of encoding `object` again. Not told of dry runs.
 */
export interface WrittenJson {
  /** The object create or guaranteedUpdate returns (the same object). */
  readonly object: KubeObject;
  readonly json: Buffer;
  /** The write's revision (metadata.resourceVersion of `object`). */
  readonly revision: number;
  /**
   * Where in `json` the resourceVersion member goes (the offset of the comma before the member
   * Kubernetes writes after it), when the store knew it from writing the text: the answer is
   * then spliced without scanning the text. Undefined: scan it.
   */
  readonly rvAt?: number | undefined;
}

/** One object's stored entry and how to decode it (ObjectStore.getEntry). */
export interface StoredEntry {
  /** Immutable: callers may remember what they derive from it, keyed by the entry. */
  readonly kv: KeyValue;
  decode(kv: KeyValue): Promise<KubeObject>;
  /** The value is the object's plain JSON (ResourceStore.storesPlainJson): readers may splice it. */
  readonly plainJson: boolean;
}

export interface ObjectStore {
  get(ref: ObjectRef, opts?: { resourceVersion?: string }): Promise<KubeObject>;
  /** What get reads, as the stored entry (undefined when there is no such object). */
  getEntry(ref: ObjectRef, opts?: { resourceVersion?: string }): Promise<StoredEntry | undefined>;
  /**
   * What getEntry(ref, { resourceVersion: '0' }) gives, read at once from the resource's watch
   * cache (undefined: no such object); with `consistent`, what getEntry(ref) gives. Null when
   * no cache can say at once (see WatchCache.peek); then await getEntry.
   */
  peekEntry(ref: ObjectRef, consistent?: boolean): StoredEntry | undefined | null;
  /**
   * How many objects a list with resourceVersion '0' of this resource in `namespace` ('' for
   * all) would hold before any filter, read at once from the resource's watch cache. Null when
   * no cache can say at once; then list.
   */
  peekCount(q: { group: string; resource: string; namespace: string }): number | null;
  list(q: ListQuery): Promise<ListResult>;
  /**
   * Creates; obj.metadata.resourceVersion must be empty. Returns the stored object. `adopt`:
   * the caller hands `obj` over (never reads or changes it again), so the returned object may
   * be `obj` itself, resourceVersion set, instead of a copy.
   */
  create(ref: ObjectRef, obj: KubeObject, opts?: { ttlSeconds?: number; dryRun?: boolean; adopt?: boolean; onWritten?: (w: WrittenJson) => void }): Promise<KubeObject>;
  /**
   * Read, mutate, compare-and-swap, retry on conflict. `tryUpdate` gets the current object (a
   * private copy) and returns the new one, or throws to abort (the error propagates). When the
   * object is missing, tryUpdate gets undefined (so callers can create-on-update).
   * Returning the same object unchanged (deep-equal) skips the write.
   */
  guaranteedUpdate(ref: ObjectRef, tryUpdate: (current: KubeObject | undefined) => Promise<KubeObject> | KubeObject,
    opts?: GuaranteedUpdateOptions): Promise<KubeObject>;
  /** Deletes; returns the last state. Preconditions as in guaranteedUpdate. */
  delete(ref: ObjectRef, opts?: { preconditions?: { uid?: string; resourceVersion?: string }; dryRun?: boolean }): Promise<KubeObject>;
  watch(q: WatchQuery): ObjectWatch;
  /** Object count per resource (for --kvstore-count-metric-poll-period metrics). */
  count(resource: string, group: string): Promise<number>;
  currentRevision(): Promise<number>;
  close(): Promise<void>;
}

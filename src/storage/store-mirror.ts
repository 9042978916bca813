/**
 * An in-process copy of one resource's objects, kept from a list and a watch on an ObjectStore,
 * for readers that must answer without listing per request (admission plugins, the RBAC
 * authorizer; Kubernetes' plugins read informers for the same reason). Meant for rarely changed
 * resources: webhook configurations, priority classes, RBAC roles and bindings.
 *
 * Contract: `objects` (by name; `namespace/name` for namespaced objects) is current as of the last event seen; `generation` counts the
 * changes, so callers may cache what they derive from one generation; `onChange` runs after
 * each change, before anything else reads the mirror. Until the first list has been read
 * `synced` is false and `ready` settles when it is. The watch is resumed after an error (backoff
 * 1 s doubling to 30 s) and ends when the store is closed. One mirror per store and resource
 * (`storeMirror`).
 */
import type { Logger } from 'pino';
import { pino } from 'pino';
import type { KubeObject } from '../api/resources/types.js';
import { isStorageError } from './errors.js';
import type { ObjectStore } from './object-store-types.js';

const MAX_BACKOFF_MS = 30_000;

export class StoreMirror {
  readonly objects = new Map<string, KubeObject>();
  generation = 0;
  synced = false;
  readonly ready: Promise<void>;
  private readonly listeners: (() => void)[] = [];
  private markReady!: () => void;
  private stopped = false;

  /** `namespace`: only that namespace's objects ('' = all, and cluster-scoped resources). */
  constructor(private readonly store: ObjectStore, readonly group: string, readonly resource: string, private readonly log: Logger, readonly namespace = '') {
    this.ready = new Promise((resolve) => { this.markReady = resolve; });
    void this.run();
  }

  /** Runs `cb` after every change from now on (and once at once when already synced). */
  onChange(cb: () => void): void {
    this.listeners.push(cb);
    if (this.synced) cb();
  }

  /** Whether `name` (`namespace/name` when namespaced) is known at `resourceVersion` or later (tests wait on it). */
  has(name: string, resourceVersion?: string): boolean {
    const o = this.objects.get(name);
    if (!o) return false;
    return resourceVersion === undefined || Number(o.metadata?.resourceVersion ?? 0) >= Number(resourceVersion);
  }

  private changed(): void {
    this.generation++;
    for (const cb of this.listeners) cb();
  }

  private async run(): Promise<void> {
    let backoff = 1000;
    let rv: string | undefined;
    while (!this.stopped) {
      try {
        rv ??= await this.relist();
        const ended = await this.watch(rv);
        rv = ended.rv;
        if (ended.events > 0) { backoff = 1000; continue; }
        // Ended at once (falling behind before anything came, or the store closing): not in a tight loop.
        await new Promise((r) => setTimeout(r, backoff).unref());
        backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
      } catch (e) {
        if (this.storeClosed(e)) return;
        this.log.warn({ err: e, group: this.group, resource: this.resource }, 'watching failed; listing again');
        rv = undefined;
        await new Promise((r) => setTimeout(r, backoff).unref());
        backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
      }
    }
  }

  /** The store's own "closed" answer ends the mirror; any other failure is retried. */
  private storeClosed(e: unknown): boolean {
    if (isStorageError(e, 'Unavailable') && /store is closed|cache is closed/.test(e.message)) this.stopped = true;
    return this.stopped;
  }

  /** Lists every object and replaces what is known; the list's resourceVersion. */
  private async relist(): Promise<string> {
    const { items, resourceVersion } = await this.store.list({ resource: this.resource, group: this.group, namespace: this.namespace });
    this.objects.clear();
    for (const o of items) this.objects.set(keyOf(o), o);
    if (!this.synced) { this.synced = true; this.markReady(); }
    this.changed();
    return resourceVersion;
  }

  /**
   * Follows changes after `rv` until the watch ends: where to resume (undefined: list again, after
   * an ERROR event such as 410 Expired) and how many events came.
   */
  private async watch(rv: string): Promise<{ rv: string | undefined; events: number }> {
    const w = this.store.watch({ resource: this.resource, group: this.group, namespace: this.namespace, resourceVersion: rv });
    let events = 0;
    for await (const ev of w) {
      events++;
      if (ev.type === 'ERROR') return { rv: undefined, events };
      rv = ev.object.metadata?.resourceVersion ?? rv;
      if (ev.type === 'BOOKMARK') continue;
      const key = keyOf(ev.object);
      if (ev.type === 'DELETED') this.objects.delete(key); else this.objects.set(key, ev.object);
      this.changed();
    }
    return { rv, events };
  }
}

/** The mirror's key of an object: its name, prefixed by `namespace/` when it has one. */
export function keyOf(o: KubeObject): string {
  const m = o.metadata;
  return m?.namespace ? `${m.namespace}/${m.name ?? ''}` : m?.name ?? '';
}

const mirrors = new WeakMap<ObjectStore, Map<string, StoreMirror>>();

/**
 * The store's mirror of `group`/`resource` (every namespace of a namespaced one, or only
 * `namespace`'s, so a reader of one namespace keeps no copy of the others), started on first use.
 */
export function storeMirror(store: ObjectStore, group: string, resource: string, log?: Logger, namespace = ''): StoreMirror {
  let byResource = mirrors.get(store);
  if (!byResource) mirrors.set(store, byResource = new Map());
  const key = `${group}/${resource}/${namespace}`;
  let m = byResource.get(key);
  if (!m) byResource.set(key, m = new StoreMirror(store, group, resource, log ?? pino({ level: 'silent' }), namespace));
  return m;
}

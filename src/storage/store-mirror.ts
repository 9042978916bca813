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
import type { ObjectStore } from './object-store-types.js';
import { ResourceFollower } from './resource-follower.js';

export class StoreMirror {
  readonly objects = new Map<string, KubeObject>();
  generation = 0;
  synced = false;
  readonly ready: Promise<void>;
  private readonly listeners: (() => void)[] = [];

  /** `namespace`: only that namespace's objects ('' = all, and cluster-scoped resources). */
  constructor(store: ObjectStore, readonly group: string, readonly resource: string, log: Logger, readonly namespace = '') {
    this.ready = new ResourceFollower(store, group, resource, {
      replace: (items) => {
        this.objects.clear();
        for (const o of items) this.objects.set(keyOf(o), o);
        this.synced = true;
        this.changed();
      },
      upsert: (o) => { this.objects.set(keyOf(o), o); this.changed(); },
      remove: (o) => { this.objects.delete(keyOf(o)); this.changed(); },
    }, log, namespace).ready;
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

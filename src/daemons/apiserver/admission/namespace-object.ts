/**
 * A namespace as admission plugins read it (PodNodeSelector, PodTolerationRestriction,
 * PodSecurity, ExtendedResourceToleration's neighbours): from the watch cache as it stands,
 * then consistently when the cache does not have it yet. Decoded once per stored entry, so
 * a pod create in a known namespace does not decode the namespace again.
 */
import { errors } from '../../../api/meta/status.js';
import type { KubeObject } from '../../../api/resources/types.js';
import type { KeyValue } from '../../../storage/interface.js';
import type { ObjectStore, StoredEntry } from '../../../storage/object-store-types.js';

const decoded = new WeakMap<KeyValue, KubeObject>();

function fromEntry(entry: StoredEntry): KubeObject | Promise<KubeObject> {
  return decoded.get(entry.kv) ?? entry.decode(entry.kv).then((ns) => {
    decoded.set(entry.kv, ns);
    return ns;
  });
}

/** The namespace, or undefined when it does not exist; no promise when the cache holds it and it was decoded before. Treat it as read-only. */
export function readNamespace(store: ObjectStore, name: string): KubeObject | undefined | Promise<KubeObject | undefined> {
  const ref = { group: '', resource: 'namespaces', namespace: '', name };
  const cached = store.peekEntry(ref);
  if (cached) return fromEntry(cached);
  return (async () => {
    const entry = (cached === null ? await store.getEntry(ref, { resourceVersion: '0' }) : undefined) ?? await store.getEntry(ref);
    return entry ? fromEntry(entry) : undefined;
  })();
}

/** readNamespace as a promise; 404 NotFound (Kubernetes' wording) when it does not exist. */
export async function requireNamespace(store: ObjectStore, name: string): Promise<KubeObject> {
  const ns = await readNamespace(store, name);
  if (!ns) throw errors.notFound({ resource: 'namespaces', name });
  return ns;
}

/** Calls `f` with the namespace at once when it can, else after it is read. */
export function withNamespace<T>(store: ObjectStore, name: string, f: (ns: KubeObject | undefined) => T): T | Promise<T> {
  const ns = readNamespace(store, name);
  return ns instanceof Promise ? ns.then(f) : f(ns);
}

/**
 * NamespaceLifecycle admission: no new objects in a missing or terminating namespace, and the
 * system namespaces cannot be deleted. NamespaceExists is its first half alone.
 */
import { ApiError, errors } from '../../../api/meta/status.js';
import type { ResourceDefinition } from '../../../api/resources/types.js';
import type { KeyValue } from '../../../storage/interface.js';
import type { ObjectRef, ObjectStore, StoredEntry } from '../../../storage/object-store-types.js';
import type { AdmissionContext, AdmissionPlugin } from './types.js';

export const IMMORTAL_NAMESPACES = new Set(['default', 'kube-system', 'kube-public']);

/** Resources that may still be created in a terminating namespace (Kubernetes' exemptions). */
const EXEMPT_IN_TERMINATING = new Set(['events', 'subjectaccessreviews', 'localsubjectaccessreviews', 'tokenreviews']);

/**
 * What admission needs of a namespace, per stored entry: a stored entry is immutable and the
 * watch cache hands out the same entry while the namespace is unchanged, so each version of a
 * namespace is decoded once, not on every create in it.
 */
const terminatingByEntry = new WeakMap<KeyValue, boolean>();

/**
 * Whether the namespace is terminating; undefined when it does not exist. Asked of the cache
 * as it stands (resourceVersion "0", as Kubernetes' admission asks its informer), then, when
 * the cache does not have the namespace yet (created a moment ago), with a consistent read.
 * Without a promise when the cache holds the namespace and its answer is remembered (nearly
 * every create).
 */
export function namespaceTerminating(store: ObjectStore, namespace: string): boolean | undefined | Promise<boolean | undefined> {
  const ref = { group: '', resource: 'namespaces', namespace: '', name: namespace };
  const cached = store.peekEntry(ref);
  if (cached) return terminatingOf(cached);
  const read = cached === undefined ? store.getEntry(ref) : readThrough(store, ref);
  return read.then((entry) => (entry ? terminatingOf(entry) : undefined));
}

/** getEntry as the cache stands once it is ready, else (or when it lacks the name) consistently. */
async function readThrough(store: ObjectStore, ref: ObjectRef): Promise<StoredEntry | undefined> {
  return (await store.getEntry(ref, { resourceVersion: '0' })) ?? store.getEntry(ref);
}

/** The entry's verdict: remembered (no promise), or decoded once and remembered. */
function terminatingOf(entry: StoredEntry): boolean | Promise<boolean> {
  return terminatingByEntry.get(entry.kv) ?? entry.decode(entry.kv).then((ns) => {
    const terminating = (ns.status as { phase?: string } | undefined)?.phase === 'Terminating' || !!ns.metadata?.deletionTimestamp;
    terminatingByEntry.set(entry.kv, terminating);
    return terminating;
  });
}

/** NamespaceLifecycle for a create; settles at once (no promise) in the common case. */
export function admitNamespacedCreate(store: ObjectStore, def: ResourceDefinition, namespace: string): void | Promise<void> {
  if (!def.namespaced) return;
  const terminating = namespaceTerminating(store, namespace);
  if (terminating instanceof Promise) return terminating.then((t) => admitIn(def, namespace, t));
  admitIn(def, namespace, terminating);
}

function admitIn(def: ResourceDefinition, namespace: string, terminating: boolean | undefined): void {
  if (terminating === undefined) throw errors.notFound({ resource: 'namespaces', name: namespace });
  if (terminating && !EXEMPT_IN_TERMINATING.has(def.plural)) {
    throw new ApiError(403, 'Forbidden',
      `${def.plural}${def.group ? '.' + def.group : ''} is forbidden: unable to create new content in namespace ${namespace} because it is being terminated`,
      { kind: def.plural, group: def.group, causes: [{ reason: 'NamespaceTerminating', message: `namespace ${namespace} is being terminated`, field: 'metadata.namespace' }] });
  }
}

export function admitNamespaceDelete(name: string): void {
  if (IMMORTAL_NAMESPACES.has(name)) {
    throw new ApiError(403, 'Forbidden', `namespaces "${name}" is forbidden: this namespace may not be deleted`, { name, kind: 'namespaces', group: '' });
  }
}

const isNamespaces = (def: ResourceDefinition): boolean => def.group === '' && def.plural === 'namespaces';

export function namespaceLifecycle(ctx: AdmissionContext): AdmissionPlugin {
  return {
    name: 'NamespaceLifecycle',
    handles: (op, def) => (op === 'CREATE' && def.namespaced) || (op === 'DELETE' && isNamespaces(def)),
    admit(a) {
      if (a.operation === 'DELETE') return admitNamespaceDelete(a.name);
      return admitNamespacedCreate(ctx.store, a.def, a.namespace);
    },
  };
}

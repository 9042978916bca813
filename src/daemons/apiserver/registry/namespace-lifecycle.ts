/**
 * NamespaceLifecycle admission: no new objects in a missing or terminating namespace, and the
 * system namespaces cannot be deleted.
 */
import { ApiError, errors } from '../../../api/meta/status.js';
import type { ResourceDefinition } from '../../../api/resources/types.js';
import { isStorageError } from '../../../storage/errors.js';
import type { ObjectStore } from '../../../storage/object-store-types.js';

export const IMMORTAL_NAMESPACES = new Set(['default', 'kube-system', 'kube-public']);

/** Resources that may still be created in a terminating namespace (Kubernetes' exemptions). */
const EXEMPT_IN_TERMINATING = new Set(['events', 'subjectaccessreviews', 'localsubjectaccessreviews', 'tokenreviews']);

export async function admitNamespacedCreate(store: ObjectStore, def: ResourceDefinition, namespace: string): Promise<void> {
  if (!def.namespaced) return;
  let ns;
  try {
    ns = await store.get({ resource: 'namespaces', group: '', namespace: '', name: namespace });
  } catch (e) {
    if (isStorageError(e, 'KeyNotFound')) throw errors.notFound({ resource: 'namespaces', name: namespace });
    throw e;
  }
  const phase = (ns.status as { phase?: string } | undefined)?.phase;
  if ((phase === 'Terminating' || ns.metadata?.deletionTimestamp) && !EXEMPT_IN_TERMINATING.has(def.plural)) {
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

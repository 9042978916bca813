/**
 * The default StorageClass `corectl server` ships: `local-path`, provisioned by the controller
 * manager's corectl.io/local-path provisioner (a directory under <data-dir>/storage on the node
 * the pod is scheduled to), WaitForFirstConsumer binding, Delete reclaim, expansion allowed (a
 * directory has no size to grow: the claim's capacity is bookkeeping). It is created once and
 * then left alone (a class's parameters cannot change; an admin may have edited or deleted it
 * and re-created it differently); it is marked default unless another class already is.
 */
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { KubeObject } from '../../api/resources/types.js';
import type { RestClient } from '../../client/rest-client.js';

const CLASSES = { group: 'storage.k8s.io', version: 'v1', resource: 'storageclasses' } as const;
export const DEFAULT_CLASS_ANNOTATION = 'storageclass.kubernetes.io/is-default-class';
export const LOCAL_PATH_CLASS = 'local-path';

export function localPathClass(dataDir: string, helperImage: string, isDefault: boolean): KubeObject {
  return {
    apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass',
    metadata: { name: LOCAL_PATH_CLASS, ...(isDefault ? { annotations: { [DEFAULT_CLASS_ANNOTATION]: 'true' } } : {}) },
    provisioner: 'corectl.io/local-path', volumeBindingMode: 'WaitForFirstConsumer', reclaimPolicy: 'Delete', allowVolumeExpansion: true,
    parameters: { nodePath: join(dataDir, 'storage'), helperImage },
  };
}

/** Creates the class unless one of that name exists; true when it created it. */
export async function ensureLocalStorageClass(client: RestClient, o: { dataDir: string; helperImage: string; log: Logger }): Promise<boolean> {
  const existing = (await client.list(CLASSES)).items;
  if (existing.some((c) => c.metadata?.name === LOCAL_PATH_CLASS)) return false;
  const otherDefault = existing.some((c) => c.metadata?.annotations?.[DEFAULT_CLASS_ANNOTATION] === 'true');
  try {
    await client.create(CLASSES, localPathClass(o.dataDir, o.helperImage, !otherDefault));
  } catch (e) {
    if ((e as { code?: number }).code === 409) return false;
    throw e;
  }
  o.log.info({ class: LOCAL_PATH_CLASS, default: !otherDefault }, 'local-path StorageClass created');
  return true;
}

/**
 * PersistentVolumeClaimResize: a claim's storage request may only grow when the claim is bound
 * and its StorageClass says `allowVolumeExpansion: true` (403 otherwise). Shrinking is left to
 * the claim's own validation.
 */
import { errors } from '../../../api/meta/status.js';
import type { KubeObject } from '../../../api/resources/types.js';
import type { ObjectStore } from '../../../storage/object-store-types.js';
import { parseQuantity } from '../../../util/quantity.js';
import type { AdmissionAttributes, AdmissionContext, AdmissionPlugin } from './types.js';

type Dict = Record<string, unknown>;
const storageOf = (pvc: KubeObject | undefined): string | undefined => {
  const req = ((pvc?.spec as Dict | undefined)?.resources as Dict | undefined)?.requests as Dict | undefined;
  return typeof req?.storage === 'string' ? req.storage : undefined;
};
const bytes = (q: string | undefined): number => {
  try { return q === undefined ? 0 : parseQuantity(q); } catch { return 0; }
};

async function classAllowsExpansion(store: ObjectStore, name: string): Promise<boolean> {
  if (!name) return false;
  const res = await store.list({ resource: 'storageclasses', group: 'storage.k8s.io', namespace: '', name, resourceVersion: '0' });
  return res.items[0]?.allowVolumeExpansion === true;
}

export function persistentVolumeClaimResize(ctx: AdmissionContext): AdmissionPlugin {
  const forbid = (a: AdmissionAttributes, why: string): Error => errors.admissionForbidden({ group: '', resource: 'persistentvolumeclaims', name: a.name }, why);
  return {
    name: 'PersistentVolumeClaimResize',
    handles: (op, def, sub) => op === 'UPDATE' && sub === '' && def.group === '' && def.plural === 'persistentvolumeclaims',
    async validate(a) {
      if (bytes(storageOf(a.object)) <= bytes(storageOf(a.oldObject))) return;
      if ((a.oldObject?.status as Dict | undefined)?.phase !== 'Bound') throw forbid(a, 'only bound persistent volume claims can be expanded');
      const cls = (a.oldObject?.spec as Dict | undefined)?.storageClassName;
      if (!(await classAllowsExpansion(ctx.store, typeof cls === 'string' ? cls : ''))) {
        throw forbid(a, 'only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize');
      }
    },
  };
}

/**
 * StorageObjectInUseProtection: a new PersistentVolumeClaim gets the finalizer
 * `kubernetes.io/pvc-protection` and a new PersistentVolume `kubernetes.io/pv-protection`, so
 * deleting one that is still in use only marks it; the controller manager's pvc-protection and
 * pv-protection controllers remove the finalizer once no pod uses the claim / the volume is no
 * longer bound.
 */
import { PVC_PROTECTION_FINALIZER } from '../../../api/resources/core/persistentvolumeclaims.js';
import { PV_PROTECTION_FINALIZER } from '../../../api/resources/core/persistentvolumes.js';
import type { KubeObject } from '../../../api/resources/types.js';
import type { AdmissionPlugin } from './types.js';

function addFinalizer(obj: KubeObject, finalizer: string): void {
  const meta = (obj.metadata ??= {});
  const have = meta.finalizers ?? [];
  if (!have.includes(finalizer)) meta.finalizers = [...have, finalizer];
}

export function storageObjectInUseProtection(): AdmissionPlugin {
  return {
    name: 'StorageObjectInUseProtection',
    handles: (op, def, sub) => op === 'CREATE' && sub === '' && def.group === '' && (def.plural === 'persistentvolumeclaims' || def.plural === 'persistentvolumes'),
    admit(a) {
      if (!a.object) return;
      addFinalizer(a.object, a.def.plural === 'persistentvolumes' ? PV_PROTECTION_FINALIZER : PVC_PROTECTION_FINALIZER);
    },
  };
}

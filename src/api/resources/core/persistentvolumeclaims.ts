/** core/v1 PersistentVolumeClaim. */
import { fieldErrors, type FieldError } from '../../meta/status.js';
import { defineResource, statusStrategy } from '../common/define.js';
import { col, arr, rec, str, path } from '../common/table-util.js';
import { deepEqual, isObject } from '../common/validation.js';
import { ACCESS_MODES, accessModes } from './persistentvolumes.js';

/** Kept on a claim while pods use it (StorageObjectInUseProtection adds it, pvc-protection removes it). */
export const PVC_PROTECTION_FINALIZER = 'kubernetes.io/pvc-protection';

export const persistentvolumeclaims = defineResource({
  group: '', versions: ['v1'], kind: 'PersistentVolumeClaim', plural: 'persistentvolumeclaims', namespaced: true,
  shortNames: ['pvc'], subresources: { status: true },
  defaults(obj) {
    if (isObject(obj.spec)) obj.spec.volumeMode ??= 'Filesystem';
  },
  validateSpec(obj, old) {
    const errs: FieldError[] = [];
    const spec = rec(obj.spec);
    if (!arr(spec.accessModes).length) errs.push(fieldErrors.required('spec.accessModes', 'at least 1 access mode is required'));
    arr(spec.accessModes).forEach((m, i) => { if (!ACCESS_MODES.includes(String(m))) errs.push(fieldErrors.notSupported(`spec.accessModes[${i}]`, m, ACCESS_MODES)); });
    if (rec(rec(spec.resources).requests).storage === undefined) errs.push(fieldErrors.required('spec.resources[storage]'));
    if (old) {
      const a = { ...rec(old.spec) }, b = { ...spec };
      // Only resources.requests (expansion) and volumeName (binding from empty) may change.
      delete a.resources; delete b.resources;
      if (!a.volumeName) { delete a.volumeName; delete b.volumeName; }
      delete a.volumeAttributesClassName; delete b.volumeAttributesClassName;
      if (!deepEqual(a, b)) errs.push(fieldErrors.forbidden('spec', 'spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims'));
    }
    return errs;
  },
  prepareForCreate(obj) { obj.status = { phase: 'Pending' }; },
  prepareForUpdate: statusStrategy.prepareForUpdate,
  columns: [
    col('Status', 'string', 'phase represents the current phase of PersistentVolumeClaim.', (o) => str(path(o, 'status.phase'))),
    col('Volume', 'string', 'volumeName is the binding reference to the PersistentVolume backing this claim.', (o) => str(path(o, 'spec.volumeName'))),
    col('Capacity', 'string', 'capacity represents the actual resources of the underlying volume.', (o) => str(path(o, 'status.capacity.storage'))),
    col('Access Modes', 'string', 'accessModes contains the desired access modes the volume should have.', (o) => accessModes(o, 'status.accessModes')),
    col('StorageClass', 'string', 'storageClassName is the name of the StorageClass required by the claim.', (o) => str(path(o, 'spec.storageClassName'))),
    col('VolumeAttributesClass', 'string', 'volumeAttributesClassName may be used to set the VolumeAttributesClass used by this claim.', (o) => str(path(o, 'spec.volumeAttributesClassName')) || '<unset>'),
  ],
  wideColumns: [col('VolumeMode', 'string', 'volumeMode defines what type of volume is required by the claim.', (o) => str(path(o, 'spec.volumeMode')), 1)],
});

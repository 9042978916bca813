/** storage.k8s.io/v1 StorageClass (parameters and provisioner immutable). */
import { fieldErrors, type FieldError } from '../../meta/status.js';
import { defineResource } from '../common/define.js';
import { col, str } from '../common/table-util.js';
import { immutable } from '../common/validation.js';

export const storageclasses = defineResource({
  group: 'storage.k8s.io', versions: ['v1'], kind: 'StorageClass', plural: 'storageclasses', namespaced: false,
  shortNames: ['sc'],
  defaults(obj) {
    obj.reclaimPolicy ??= 'Delete';
    obj.volumeBindingMode ??= 'Immediate';
  },
  validateSpec(obj, old) {
    const errs: FieldError[] = [];
    if (!str(obj.provisioner)) errs.push(fieldErrors.required('provisioner'));
    if (!['Delete', 'Retain', 'Recycle'].includes(String(obj.reclaimPolicy))) errs.push(fieldErrors.notSupported('reclaimPolicy', obj.reclaimPolicy, ['Delete', 'Retain']));
    if (!['Immediate', 'WaitForFirstConsumer'].includes(String(obj.volumeBindingMode))) errs.push(fieldErrors.notSupported('volumeBindingMode', obj.volumeBindingMode, ['Immediate', 'WaitForFirstConsumer']));
    if (old) {
      immutable(errs, 'parameters', obj.parameters, old.parameters);
      immutable(errs, 'provisioner', obj.provisioner, old.provisioner);
      immutable(errs, 'reclaimPolicy', obj.reclaimPolicy, old.reclaimPolicy);
      immutable(errs, 'volumeBindingMode', obj.volumeBindingMode, old.volumeBindingMode);
    }
    return errs;
  },
  columns: [
    col('Provisioner', 'string', 'provisioner indicates the type of the provisioner.', (o) => str(o.provisioner)),
    col('ReclaimPolicy', 'string', 'reclaimPolicy controls the reclaimPolicy for dynamically provisioned PersistentVolumes of this storage class.', (o) => str(o.reclaimPolicy)),
    col('VolumeBindingMode', 'string', 'volumeBindingMode indicates how PersistentVolumeClaims should be provisioned and bound.', (o) => str(o.volumeBindingMode)),
    col('AllowVolumeExpansion', 'string', 'allowVolumeExpansion shows whether the storage class allow volume expand.', (o) => String(o.allowVolumeExpansion === true)),
  ],
});

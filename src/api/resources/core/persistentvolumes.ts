/** core/v1 PersistentVolume. */
import { fieldErrors, type FieldError } from '../../meta/status.js';
import { defineResource, statusStrategy } from '../common/define.js';
import { col, arr, rec, str, path } from '../common/table-util.js';
import { isObject } from '../common/validation.js';
import type { KubeObject } from '../types.js';

/** Kept on a volume while it is bound (StorageObjectInUseProtection adds it, pv-protection removes it). */
export const PV_PROTECTION_FINALIZER = 'kubernetes.io/pv-protection';

export const ACCESS_MODES = ['ReadWriteOnce', 'ReadOnlyMany', 'ReadWriteMany', 'ReadWriteOncePod'];
const SHORT: Record<string, string> = { ReadWriteOnce: 'RWO', ReadOnlyMany: 'ROX', ReadWriteMany: 'RWX', ReadWriteOncePod: 'RWOP' };
export function accessModes(o: KubeObject, at = 'spec.accessModes'): string {
  return arr(path(o, at)).map((m) => SHORT[String(m)] ?? String(m)).join(',');
}

export const persistentvolumes = defineResource({
  group: '', versions: ['v1'], kind: 'PersistentVolume', plural: 'persistentvolumes', namespaced: false,
  shortNames: ['pv'], subresources: { status: true },
  defaults(obj) {
    if (!isObject(obj.spec)) return;
    obj.spec.persistentVolumeReclaimPolicy ??= 'Retain';
    obj.spec.volumeMode ??= 'Filesystem';
  },
  validateSpec(obj) {
    const errs: FieldError[] = [];
    const spec = rec(obj.spec);
    if (!arr(spec.accessModes).length) errs.push(fieldErrors.required('spec.accessModes'));
    arr(spec.accessModes).forEach((m, i) => { if (!ACCESS_MODES.includes(String(m))) errs.push(fieldErrors.notSupported(`spec.accessModes[${i}]`, m, ACCESS_MODES)); });
    if (rec(spec.capacity).storage === undefined) errs.push(fieldErrors.required('spec.capacity'));
    const sources = Object.keys(spec).filter((k) => ['hostPath', 'nfs', 'local', 'csi', 'iscsi', 'fc', 'cephfs', 'rbd', 'glusterfs', 'awsElasticBlockStore', 'gcePersistentDisk', 'azureDisk', 'azureFile'].includes(k));
    if (sources.length === 0) errs.push(fieldErrors.required('spec', 'must specify a volume type'));
    if (sources.length > 1) errs.push(fieldErrors.forbidden(`spec.${sources[1]}`, 'may not specify more than 1 volume type'));
    const rp = spec.persistentVolumeReclaimPolicy;
    if (rp !== undefined && !['Delete', 'Recycle', 'Retain'].includes(String(rp))) errs.push(fieldErrors.notSupported('spec.persistentVolumeReclaimPolicy', rp, ['Delete', 'Recycle', 'Retain']));
    return errs;
  },
  prepareForCreate(obj) { obj.status = { phase: 'Pending' }; },
  prepareForUpdate: statusStrategy.prepareForUpdate,
  columns: [
    col('Capacity', 'string', 'capacity is the description of the persistent volume\'s resources and capacity.', (o) => str(path(o, 'spec.capacity.storage'))),
    col('Access Modes', 'string', 'accessModes contains all ways the volume can be mounted.', (o) => accessModes(o)),
    col('Reclaim Policy', 'string', 'persistentVolumeReclaimPolicy defines what happens to a persistent volume when released from its claim.', (o) => str(path(o, 'spec.persistentVolumeReclaimPolicy'))),
    col('Status', 'string', 'phase indicates if a volume is available, bound to a claim, or released by a claim.', (o) => str(path(o, 'status.phase'))),
    col('Claim', 'string', 'claimRef is part of a bi-directional binding between PersistentVolume and PersistentVolumeClaim.', (o) => {
      const c = rec(path(o, 'spec.claimRef'));
      return c.name ? `${str(c.namespace)}/${str(c.name)}` : '';
    }),
    col('StorageClass', 'string', 'storageClassName is the name of StorageClass to which this persistent volume belongs.', (o) => str(path(o, 'spec.storageClassName'))),
    col('VolumeAttributesClass', 'string', 'Name of VolumeAttributesClass to which this persistent volume belongs.', (o) => str(path(o, 'spec.volumeAttributesClassName')) || '<unset>'),
    col('Reason', 'string', 'reason is a brief CamelCase string that describes any failure.', (o) => str(path(o, 'status.reason'))),
  ],
  wideColumns: [col('VolumeMode', 'string', 'volumeMode defines if a volume is intended to be used with a formatted filesystem or to remain in raw block state.', (o) => str(path(o, 'spec.volumeMode')), 1)],
});

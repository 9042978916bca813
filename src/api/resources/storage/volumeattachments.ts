/** storage.k8s.io/v1 VolumeAttachment (spec immutable). */
import { fieldErrors, type FieldError } from '../../meta/status.js';
import { defineResource, statusStrategy } from '../common/define.js';
import { col, str, path } from '../common/table-util.js';
import { immutable } from '../common/validation.js';

export const volumeattachments = defineResource({
  group: 'storage.k8s.io', versions: ['v1'], kind: 'VolumeAttachment', plural: 'volumeattachments', namespaced: false,
  subresources: { status: true },
  validateSpec(obj, old) {
    const errs: FieldError[] = [];
    if (!str(path(obj, 'spec.attacher'))) errs.push(fieldErrors.required('spec.attacher'));
    if (!str(path(obj, 'spec.nodeName'))) errs.push(fieldErrors.required('spec.nodeName'));
    const src = path(obj, 'spec.source') as Record<string, unknown> | undefined;
    if (!src || (!src.persistentVolumeName && !src.inlineVolumeSpec)) errs.push(fieldErrors.required('spec.source', 'must specify exactly one of persistentVolumeName and inlineVolumeSpec'));
    if (old) immutable(errs, 'spec', obj.spec, old.spec);
    return errs;
  },
  prepareForCreate(obj) { delete obj.status; },
  prepareForUpdate: statusStrategy.prepareForUpdate,
  columns: [
    col('Attacher', 'string', 'Attacher indicates the name of the volume driver that MUST handle this request.', (o) => str(path(o, 'spec.attacher'))),
    col('PV', 'string', 'Name of the persistent volume to attach.', (o) => str(path(o, 'spec.source.persistentVolumeName'))),
    col('Node', 'string', 'The node that the volume should be attached to.', (o) => str(path(o, 'spec.nodeName'))),
    col('Attached', 'boolean', 'Indicates the volume is successfully attached.', (o) => path(o, 'status.attached') === true),
  ],
});

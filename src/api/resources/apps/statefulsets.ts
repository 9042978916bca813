/** apps/v1 StatefulSet. */
import { fieldErrors } from '../../meta/status.js';
import { defineResource, statusStrategy } from '../common/define.js';
import { col, containersColumn, imagesColumn, num, rec, path, str } from '../common/table-util.js';
import { deepEqual, isObject } from '../common/validation.js';
import { defaultPodTemplate } from '../core/pod-spec.js';
import { validateWorkload } from './workload.js';

export const statefulsets = defineResource({
  group: 'apps', versions: ['v1'], kind: 'StatefulSet', plural: 'statefulsets', namespaced: true,
  shortNames: ['sts'], categories: ['all'], hasGeneration: true,
  subresources: { status: true, scale: { specReplicasPath: 'spec.replicas', statusReplicasPath: 'status.replicas', labelSelectorPath: 'status.selector' } },
  defaults(obj) {
    const spec = obj.spec;
    if (!isObject(spec)) return;
    spec.replicas ??= 1;
    spec.podManagementPolicy ??= 'OrderedReady';
    spec.updateStrategy ??= {};
    const us = rec(spec.updateStrategy);
    us.type ??= 'RollingUpdate';
    if (us.type === 'RollingUpdate') { us.rollingUpdate ??= {}; rec(us.rollingUpdate).partition ??= 0; }
    spec.revisionHistoryLimit ??= 10;
    spec.persistentVolumeClaimRetentionPolicy ??= { whenDeleted: 'Retain', whenScaled: 'Retain' };
    defaultPodTemplate(spec.template);
  },
  validateSpec(obj, old) {
    const spec = rec(obj.spec);
    // The pods get a volume per claim template, so the template's mounts may name them.
    const claimVolumes = (Array.isArray(spec.volumeClaimTemplates) ? spec.volumeClaimTemplates : []).map((c) => str(path(c, 'metadata.name'))).filter(Boolean);
    const errs = validateWorkload(obj, old, { claimVolumes });
    if (spec.podManagementPolicy !== undefined && !['OrderedReady', 'Parallel'].includes(String(spec.podManagementPolicy))) errs.push(fieldErrors.notSupported('spec.podManagementPolicy', spec.podManagementPolicy, ['OrderedReady', 'Parallel']));
    if (old) {
      const a = { ...rec(old.spec) }, b = { ...spec };
      for (const k of ['replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy', 'minReadySeconds', 'revisionHistoryLimit']) { delete a[k]; delete b[k]; }
      if (!deepEqual(a, b)) errs.push(fieldErrors.forbidden('spec', "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"));
    }
    return errs;
  },
  prepareForCreate(obj) { obj.status = { replicas: 0, availableReplicas: 0 }; },
  prepareForUpdate: statusStrategy.prepareForUpdate,
  columns: [col('Ready', 'string', 'Number of the pod with ready state', (o) => `${num(path(o, 'status.readyReplicas'))}/${num(path(o, 'spec.replicas'))}`)],
  wideColumns: [containersColumn(), imagesColumn()],
});

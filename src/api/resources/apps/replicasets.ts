/** apps/v1 ReplicaSet. */
import { defineResource, statusStrategy } from '../common/define.js';
import { col, containersColumn, imagesColumn, num, path } from '../common/table-util.js';
import { isObject, selectorString } from '../common/validation.js';
import { defaultPodTemplate } from '../core/pod-spec.js';
import { validateWorkload } from './workload.js';
import { defaultSelectorAndLabelsFromTemplate, defineView } from '../common/conversion.js';

export const replicasets = defineResource({
  group: 'apps', versions: ['v1'], kind: 'ReplicaSet', plural: 'replicasets', namespaced: true,
  shortNames: ['rs'], categories: ['all'], hasGeneration: true,
  subresources: { status: true, scale: { specReplicasPath: 'spec.replicas', statusReplicasPath: 'status.replicas', labelSelectorPath: 'status.selector' } },
  defaults(obj) {
    if (!isObject(obj.spec)) return;
    obj.spec.replicas ??= 1;
    defaultPodTemplate(obj.spec.template);
  },
  validateSpec: (obj, old) => validateWorkload(obj, old),
  prepareForCreate(obj) { obj.status = { replicas: 0 }; },
  prepareForUpdate: statusStrategy.prepareForUpdate,
  fieldSelectors: { 'status.replicas': (o) => String(num(path(o, 'status.replicas'))) },
  columns: [
    col('Desired', 'integer', 'Replicas is the number of desired replicas.', (o) => num(path(o, 'spec.replicas'))),
    col('Current', 'integer', 'Replicas is the most recently observed number of replicas.', (o) => num(path(o, 'status.replicas'))),
    col('Ready', 'integer', 'The number of ready replicas for this replica set.', (o) => num(path(o, 'status.readyReplicas'))),
  ],
  wideColumns: [containersColumn(), imagesColumn(), col('Selector', 'string', 'Selector is a label query over pods that should match the replica count.', (o) => selectorString(path(o, 'spec.selector')), 1)],
});

/** extensions/v1beta1 ReplicaSet, served from apps/v1 storage; selector/labels default from the template. */
export const replicasetsExtensionsV1beta1 = defineView({
  group: 'extensions', version: 'v1beta1', base: replicasets,
  // Kubernetes kept the pre-collector default for this version: dependents are orphaned.
  orphanDependentsByDefault: true,
  toStorage: (o) => o, fromStorage: (o) => o,
  defaults: defaultSelectorAndLabelsFromTemplate,
});

/** core/v1 ReplicationController (map selector; defaults from the template labels). */
import { fieldErrors, type FieldError } from '../../meta/status.js';
import { defineResource, statusStrategy } from '../common/define.js';
import { col, containersColumn, imagesColumn, num, rec, path } from '../common/table-util.js';
import { isObject, validateLabels } from '../common/validation.js';
import { defaultPodTemplate, validatePodTemplate } from './pod-spec.js';

export const replicationcontrollers = defineResource({
  group: '', versions: ['v1'], kind: 'ReplicationController', plural: 'replicationcontrollers', namespaced: true,
  // As Kubernetes, for old clients: a v1 delete without a policy orphans the pods.
  orphanDependentsByDefaultIn: ['v1'],
  shortNames: ['rc'], categories: ['all'], hasGeneration: true,
  subresources: { status: true, scale: { specReplicasPath: 'spec.replicas', statusReplicasPath: 'status.replicas', labelSelectorPath: 'status.selector' } },
  defaults(obj) {
    const spec = obj.spec;
    if (!isObject(spec)) return;
    spec.replicas ??= 1;
    spec.minReadySeconds ??= 0;
    const tplLabels = rec(path(spec, 'template.metadata.labels'));
    if (!isObject(spec.selector) || !Object.keys(spec.selector).length) spec.selector = { ...tplLabels };
    if (isObject(spec.template)) {
      spec.template.metadata ??= {};
      const meta = rec(spec.template.metadata);
      if (!meta.labels) meta.labels = { ...rec(spec.selector) };
    }
    defaultPodTemplate(spec.template);
    if (obj.metadata && !obj.metadata.labels) obj.metadata.labels = { ...tplLabels } as Record<string, string>;
  },
  validateSpec(obj) {
    const errs: FieldError[] = [];
    const spec = rec(obj.spec);
    if (typeof spec.replicas === 'number' && spec.replicas < 0) errs.push(fieldErrors.invalid('spec.replicas', spec.replicas, 'must be greater than or equal to 0'));
    const sel = rec(spec.selector);
    if (!Object.keys(sel).length) errs.push(fieldErrors.required('spec.selector'));
    validateLabels(spec.selector, 'spec.selector', errs);
    validatePodTemplate(spec.template, 'spec.template', errs, ['Always']);
    const labels = rec(path(spec, 'template.metadata.labels'));
    if (Object.keys(sel).length && !Object.entries(sel).every(([k, v]) => labels[k] === v)) {
      errs.push(fieldErrors.invalid('spec.template.metadata.labels', labels, '`selector` does not match template `labels`'));
    }
    return errs;
  },
  prepareForCreate(obj) { obj.status = { replicas: 0 }; },
  prepareForUpdate: statusStrategy.prepareForUpdate,
  fieldSelectors: { 'status.replicas': (o) => String(num(path(o, 'status.replicas'))) },
  columns: [
    col('Desired', 'integer', 'Replicas is the number of desired replicas.', (o) => num(path(o, 'spec.replicas'))),
    col('Current', 'integer', 'Replicas is the most recently observed number of replicas.', (o) => num(path(o, 'status.replicas'))),
    col('Ready', 'integer', 'The number of ready replicas for this replication controller.', (o) => num(path(o, 'status.readyReplicas'))),
  ],
  wideColumns: [containersColumn(), imagesColumn(), col('Selector', 'string', 'Label selector', (o) => Object.entries(rec(path(o, 'spec.selector'))).map(([k, v]) => `${k}=${String(v)}`).join(','), 1)],
});

/** apps/v1 DaemonSet. */
import { fieldErrors } from '../../meta/status.js';
import { defineResource, statusStrategy } from '../common/define.js';
import { col, containersColumn, imagesColumn, num, rec, path } from '../common/table-util.js';
import { isObject, selectorString } from '../common/validation.js';
import { defaultPodTemplate } from '../core/pod-spec.js';
import { validateIntOrPercent, validateWorkload } from './workload.js';
import { defaultSelectorAndLabelsFromTemplate, defineView, stashAnnotation, takeAnnotation } from '../common/conversion.js';

export const daemonsets = defineResource({
  group: 'apps', versions: ['v1'], kind: 'DaemonSet', plural: 'daemonsets', namespaced: true,
  shortNames: ['ds'], categories: ['all'], hasGeneration: true,
  subresources: { status: true },
  defaults(obj) {
    const spec = obj.spec;
    if (!isObject(spec)) return;
    spec.updateStrategy ??= {};
    const us = rec(spec.updateStrategy);
    us.type ??= 'RollingUpdate';
    if (us.type === 'RollingUpdate') { us.rollingUpdate ??= {}; const ru = rec(us.rollingUpdate); ru.maxUnavailable ??= 1; ru.maxSurge ??= 0; }
    spec.revisionHistoryLimit ??= 10;
    defaultPodTemplate(spec.template);
  },
  validateSpec(obj, old) {
    const errs = validateWorkload(obj, old, { replicas: false });
    const us = rec(rec(obj.spec).updateStrategy);
    if (us.type !== undefined && !['OnDelete', 'RollingUpdate'].includes(String(us.type))) errs.push(fieldErrors.notSupported('spec.updateStrategy.type', us.type, ['OnDelete', 'RollingUpdate']));
    validateIntOrPercent(rec(us.rollingUpdate).maxUnavailable, 'spec.updateStrategy.rollingUpdate.maxUnavailable', errs);
    return errs;
  },
  prepareForCreate(obj) { obj.status = { currentNumberScheduled: 0, numberMisscheduled: 0, desiredNumberScheduled: 0, numberReady: 0 }; },
  prepareForUpdate: statusStrategy.prepareForUpdate,
  columns: [
    col('Desired', 'integer', 'The total number of nodes that should be running the daemon pod.', (o) => num(path(o, 'status.desiredNumberScheduled'))),
    col('Current', 'integer', 'The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod.', (o) => num(path(o, 'status.currentNumberScheduled'))),
    col('Ready', 'integer', 'numberReady is the number of nodes that should be running the daemon pod and have one or more of the daemon pod running with a Ready Condition.', (o) => num(path(o, 'status.numberReady'))),
    col('Up-to-date', 'integer', 'The total number of nodes that are running updated daemon pod', (o) => num(path(o, 'status.updatedNumberScheduled'))),
    col('Available', 'integer', 'The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available (ready for at least spec.minReadySeconds)', (o) => num(path(o, 'status.numberAvailable'))),
    col('Node Selector', 'string', 'NodeSelector is a selector which must be true for the pod to fit on a node.', (o) => Object.entries(rec(path(o, 'spec.template.spec.nodeSelector'))).map(([k, v]) => `${k}=${String(v)}`).join(',') || '<none>'),
  ],
  wideColumns: [containersColumn(), imagesColumn(), col('Selector', 'string', 'A label query over pods that are managed by the daemon set.', (o) => selectorString(path(o, 'spec.selector')), 1)],
});

/**
 * extensions/v1beta1 DaemonSet, served from apps/v1 storage. Old defaults: updateStrategy OnDelete,
 * selector/labels from the template. spec.templateGeneration is kept in the annotation apps/v1
 * uses for it (deprecated.daemonset.template.generation).
 */
const TEMPLATE_GENERATION = 'deprecated.daemonset.template.generation';
export const daemonsetsExtensionsV1beta1 = defineView({
  group: 'extensions', version: 'v1beta1', base: daemonsets,
  // Kubernetes kept the pre-collector default for this version: dependents are orphaned.
  orphanDependentsByDefault: true,
  toStorage(o) {
    if (isObject(o.spec) && o.spec.templateGeneration !== undefined) {
      const g = o.spec.templateGeneration;
      delete o.spec.templateGeneration;
      stashAnnotation(o, TEMPLATE_GENERATION, String(g));
    }
    return o;
  },
  fromStorage(o) {
    const g = o.metadata?.annotations?.[TEMPLATE_GENERATION];
    if (g !== undefined && isObject(o.spec)) { takeAnnotation(o, TEMPLATE_GENERATION); o.spec.templateGeneration = Number(g) || 0; }
    return o;
  },
  defaults(o) {
    defaultSelectorAndLabelsFromTemplate(o);
    if (!isObject(o.spec)) return;
    o.spec.updateStrategy ??= {};
    rec(o.spec.updateStrategy).type ??= 'OnDelete';
  },
});

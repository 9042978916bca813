/** apps/v1 DaemonSet. */
import { fieldErrors } from '../../meta/status.js';
import { defineResource, statusStrategy } from '../common/define.js';
import { col, containersColumn, imagesColumn, num, rec, path } from '../common/table-util.js';
import { isObject, selectorString } from '../common/validation.js';
import { defaultPodTemplate } from '../core/pod-spec.js';
import { validateIntOrPercent, validateWorkload } from './workload.js';

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

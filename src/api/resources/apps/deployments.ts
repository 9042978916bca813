/** apps/v1 Deployment. */
import { fieldErrors, type FieldError } from '../../meta/status.js';
import { defineResource, statusStrategy } from '../common/define.js';
import { col, containersColumn, imagesColumn, num, rec, path } from '../common/table-util.js';
import { isObject, selectorString } from '../common/validation.js';
import { defaultPodTemplate } from '../core/pod-spec.js';
import { validateIntOrPercent, validateWorkload } from './workload.js';
import { defaultSelectorAndLabelsFromTemplate, defineView, stashAnnotation, takeAnnotation } from '../common/conversion.js';

export const deployments = defineResource({
  group: 'apps', versions: ['v1'], kind: 'Deployment', plural: 'deployments', namespaced: true,
  shortNames: ['deploy'], categories: ['all'], hasGeneration: true,
  subresources: { status: true, scale: { specReplicasPath: 'spec.replicas', statusReplicasPath: 'status.replicas', labelSelectorPath: 'status.selector' } },
  defaults(obj) {
    const spec = obj.spec;
    if (!isObject(spec)) return;
    spec.replicas ??= 1;
    spec.strategy ??= {};
    const st = rec(spec.strategy);
    st.type ??= 'RollingUpdate';
    if (st.type === 'RollingUpdate') {
      st.rollingUpdate ??= {};
      const ru = rec(st.rollingUpdate);
      ru.maxUnavailable ??= '25%';
      ru.maxSurge ??= '25%';
    }
    spec.revisionHistoryLimit ??= 10;
    spec.progressDeadlineSeconds ??= 600;
    defaultPodTemplate(spec.template);
  },
  validateSpec(obj, old) {
    const errs: FieldError[] = validateWorkload(obj, old);
    const spec = rec(obj.spec), st = rec(spec.strategy);
    if (st.type !== undefined && !['Recreate', 'RollingUpdate'].includes(String(st.type))) errs.push(fieldErrors.notSupported('spec.strategy.type', st.type, ['Recreate', 'RollingUpdate']));
    if (st.type === 'Recreate' && st.rollingUpdate) errs.push(fieldErrors.forbidden('spec.strategy.rollingUpdate', 'may not be specified when strategy `type` is \'Recreate\''));
    const ru = rec(st.rollingUpdate);
    validateIntOrPercent(ru.maxUnavailable, 'spec.strategy.rollingUpdate.maxUnavailable', errs);
    validateIntOrPercent(ru.maxSurge, 'spec.strategy.rollingUpdate.maxSurge', errs);
    if ((ru.maxUnavailable === 0 || ru.maxUnavailable === '0%') && (ru.maxSurge === 0 || ru.maxSurge === '0%')) {
      errs.push(fieldErrors.invalid('spec.strategy.rollingUpdate.maxUnavailable', ru.maxUnavailable, 'may not be 0 when `maxSurge` is 0'));
    }
    if (typeof spec.progressDeadlineSeconds === 'number' && typeof spec.minReadySeconds === 'number' && spec.progressDeadlineSeconds <= spec.minReadySeconds) {
      errs.push(fieldErrors.invalid('spec.progressDeadlineSeconds', spec.progressDeadlineSeconds, 'must be greater than minReadySeconds'));
    }
    if (typeof spec.revisionHistoryLimit === 'number' && spec.revisionHistoryLimit < 0) errs.push(fieldErrors.invalid('spec.revisionHistoryLimit', spec.revisionHistoryLimit, 'must be greater than or equal to 0'));
    return errs;
  },
  prepareForCreate(obj) { delete obj.status; },
  prepareForUpdate: statusStrategy.prepareForUpdate,
  columns: [
    col('Ready', 'string', 'Number of the pod with ready state', (o) => `${num(path(o, 'status.readyReplicas'))}/${num(path(o, 'spec.replicas'))}`),
    col('Up-to-date', 'string', 'Total number of non-terminated pods targeted by this deployment that have the desired template spec.', (o) => num(path(o, 'status.updatedReplicas'))),
    col('Available', 'string', 'Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.', (o) => num(path(o, 'status.availableReplicas'))),
  ],
  wideColumns: [containersColumn(), imagesColumn(), col('Selector', 'string', 'Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment.', (o) => selectorString(path(o, 'spec.selector')), 1)],
});

/**
 * extensions/v1beta1 Deployment, served from apps/v1 storage. Old defaults: selector and labels
 * from the template, maxUnavailable/maxSurge 1, revisionHistoryLimit and progressDeadlineSeconds
 * "unlimited" (MaxInt32). spec.rollbackTo has no apps/v1 field: kept in the annotation
 * Kubernetes used for it, so it round-trips (no rollback is performed).
 */
const ROLLBACK_TO = 'deprecated.deployment.rollback.to';
const MAX_INT32 = 2147483647;
export const deploymentsExtensionsV1beta1 = defineView({
  group: 'extensions', version: 'v1beta1', base: deployments,
  // Kubernetes kept the pre-collector default for this version: dependents are orphaned.
  orphanDependentsByDefault: true,
  toStorage(o) {
    if (isObject(o.spec) && o.spec.rollbackTo !== undefined) {
      const rb = o.spec.rollbackTo;
      delete o.spec.rollbackTo;
      stashAnnotation(o, ROLLBACK_TO, String(rec(rb).revision ?? 0));
    }
    return o;
  },
  fromStorage(o) {
    const rb = takeAnnotation(o, ROLLBACK_TO);
    if (rb !== undefined && isObject(o.spec)) o.spec.rollbackTo = { revision: Number(rb) || 0 };
    return o;
  },
  defaults(o) {
    defaultSelectorAndLabelsFromTemplate(o);
    const spec = o.spec;
    if (!isObject(spec)) return;
    spec.strategy ??= {};
    const st = rec(spec.strategy);
    st.type ??= 'RollingUpdate';
    if (st.type === 'RollingUpdate') {
      st.rollingUpdate ??= {};
      const ru = rec(st.rollingUpdate);
      ru.maxUnavailable ??= 1;
      ru.maxSurge ??= 1;
    }
    spec.revisionHistoryLimit ??= MAX_INT32;
    spec.progressDeadlineSeconds ??= MAX_INT32;
  },
});

/** batch/v1 Job. */
import { fieldErrors, type FieldError } from '../../meta/status.js';
import { defineResource, statusStrategy } from '../common/define.js';
import { col, containersColumn, imagesColumn, num, arr, rec, str, path, humanDuration } from '../common/table-util.js';
import { immutable, isObject, selectorString, validateLabelSelector } from '../common/validation.js';
import { defaultPodTemplate, validatePodTemplate } from '../core/pod-spec.js';
import type { KubeObject } from '../types.js';
import { randomUUID } from 'node:crypto';

function jobStatus(o: KubeObject): string {
  const conds = arr(path(o, 'status.conditions')).map(rec).filter((c) => c.status === 'True');
  for (const t of ['Failed', 'Complete', 'Suspended', 'FailureTarget', 'SuccessCriteriaMet']) if (conds.some((c) => c.type === t)) return t === 'FailureTarget' ? 'FailureTarget' : t;
  if (o.metadata?.deletionTimestamp) return 'Terminating';
  return 'Running';
}

export const jobs = defineResource({
  group: 'batch', versions: ['v1'], kind: 'Job', plural: 'jobs', namespaced: true,
  // As Kubernetes, for old clients: a batch/v1 delete without a policy orphans the pods.
  orphanDependentsByDefaultIn: ['v1'],
  categories: ['all'], hasGeneration: true,
  subresources: { status: true },
  defaults(obj) {
    const spec = obj.spec;
    if (!isObject(spec)) return;
    if (spec.completions === undefined && spec.parallelism === undefined) { spec.completions = 1; spec.parallelism = 1; }
    spec.parallelism ??= 1;
    spec.backoffLimit ??= 6;
    spec.completionMode ??= 'NonIndexed';
    spec.suspend ??= false;
    spec.podReplacementPolicy ??= 'TerminatingOrFailed';
    spec.manualSelector ??= undefined;
    // Kubernetes generates a unique selector from the controller-uid label unless manualSelector is set.
    if (spec.manualSelector !== true) {
      const uid = obj.metadata?.uid ?? randomUUID();
      if (obj.metadata && !obj.metadata.uid) obj.metadata.uid = uid;
      if (!isObject(spec.selector)) spec.selector = { matchLabels: { 'batch.kubernetes.io/controller-uid': uid } };
      if (isObject(spec.template)) {
        spec.template.metadata ??= {};
        const meta = rec(spec.template.metadata);
        meta.labels = { ...rec(meta.labels), 'batch.kubernetes.io/controller-uid': uid, 'batch.kubernetes.io/job-name': obj.metadata?.name ?? '', 'controller-uid': uid, 'job-name': obj.metadata?.name ?? '' };
      }
    }
    defaultPodTemplate(spec.template);
  },
  validateSpec(obj, old) {
    const errs: FieldError[] = [];
    const spec = rec(obj.spec);
    validateLabelSelector(spec.selector, 'spec.selector', errs);
    validatePodTemplate(spec.template, 'spec.template', errs, ['OnFailure', 'Never']);
    if (path(spec, 'template.spec.restartPolicy') === undefined) errs.push(fieldErrors.required('spec.template.spec.restartPolicy'));
    for (const k of ['parallelism', 'completions', 'backoffLimit', 'activeDeadlineSeconds', 'ttlSecondsAfterFinished']) {
      const v = spec[k];
      if (v !== undefined && v !== null && (!Number.isInteger(v) || (v as number) < 0)) errs.push(fieldErrors.invalid(`spec.${k}`, v, 'must be greater than or equal to 0'));
    }
    if (old) {
      immutable(errs, 'spec.selector', spec.selector, rec(old.spec).selector);
      immutable(errs, 'spec.completionMode', spec.completionMode, rec(old.spec).completionMode);
      if (rec(old.spec).suspend !== true) immutable(errs, 'spec.template', spec.template, rec(old.spec).template);
    }
    return errs;
  },
  prepareForCreate(obj) { delete obj.status; },
  prepareForUpdate: statusStrategy.prepareForUpdate,
  fieldSelectors: { 'status.successful': (o) => String(num(path(o, 'status.succeeded'))) },
  columns: [
    col('Status', 'string', 'Status of the job.', jobStatus),
    col('Completions', 'string', 'The desired number of successfully finished pods the job should be run with.', (o) => {
      const c = path(o, 'spec.completions');
      return c === undefined || c === null ? `${num(path(o, 'status.succeeded'))}/1 of ${num(path(o, 'spec.parallelism'))}` : `${num(path(o, 'status.succeeded'))}/${String(c)}`;
    }),
    col('Duration', 'string', 'Time required to complete the job.', (o, now) => {
      const s = str(path(o, 'status.startTime'));
      if (!s) return '';
      const e = str(path(o, 'status.completionTime'));
      return humanDuration((e ? Date.parse(e) : now.getTime()) - Date.parse(s));
    }),
  ],
  wideColumns: [containersColumn(), imagesColumn(), col('Selector', 'string', 'A label query over pods that should match the pod count.', (o) => selectorString(path(o, 'spec.selector')), 1)],
});

/** batch/v1 CronJob (+ batch/v1beta1 served by conversion: same schema, other apiVersion). */
import { isValidTimeZone, parseSchedule } from './cron-schedule.js';
import { fieldErrors, type FieldError } from '../../meta/status.js';
import { defineResource, statusStrategy } from '../common/define.js';
import { col, containersColumn, imagesColumn, arr, rec, str, path, since } from '../common/table-util.js';
import { isObject, selectorString } from '../common/validation.js';
import { defaultPodTemplate, validatePodTemplate } from '../core/pod-spec.js';

export const cronjobs = defineResource({
  group: 'batch', versions: ['v1', 'v1beta1'], storageVersion: 'v1', kind: 'CronJob', plural: 'cronjobs', namespaced: true,
  // As Kubernetes, for old clients: a batch/v1beta1 delete without a policy orphans the jobs.
  orphanDependentsByDefaultIn: ['v1beta1'],
  shortNames: ['cj'], categories: ['all'], hasGeneration: true,
  subresources: { status: true },
  convert(obj, toVersion) {
    return { ...obj, apiVersion: `batch/${toVersion}` };
  },
  defaults(obj) {
    const spec = obj.spec;
    if (!isObject(spec)) return;
    spec.concurrencyPolicy ??= 'Allow';
    spec.suspend ??= false;
    spec.successfulJobsHistoryLimit ??= 3;
    spec.failedJobsHistoryLimit ??= 1;
    const jt = rec(spec.jobTemplate), js = rec(jt.spec);
    if (isObject(jt.spec)) {
      js.backoffLimit ??= 6;
      js.completionMode ??= 'NonIndexed';
      js.suspend ??= false;
      js.podReplacementPolicy ??= 'TerminatingOrFailed';
      defaultPodTemplate(js.template);
    }
  },
  validateSpec(obj) {
    const errs: FieldError[] = [];
    const spec = rec(obj.spec);
    const schedule = spec.schedule;
    if (typeof schedule !== 'string' || !schedule.trim()) errs.push(fieldErrors.required('spec.schedule'));
    else {
      if (/TZ=|CRON_TZ=/.test(schedule)) errs.push(fieldErrors.invalid('spec.schedule', schedule, 'cannot use TZ or CRON_TZ in schedule, use timeZone field instead'));
      else {
        // The same parser the cronjob controller fires by, so what is stored can run.
        try { parseSchedule(schedule, 'UTC'); } catch (e) { errs.push(fieldErrors.invalid('spec.schedule', schedule, `unparseable schedule: ${(e as Error).message}`)); }
      }
    }
    if (spec.timeZone !== undefined && spec.timeZone !== null && (typeof spec.timeZone !== 'string' || !isValidTimeZone(spec.timeZone))) {
      errs.push(fieldErrors.invalid('spec.timeZone', spec.timeZone, `unknown time zone ${String(spec.timeZone)}`));
    }
    if (spec.concurrencyPolicy !== undefined && !['Allow', 'Forbid', 'Replace'].includes(String(spec.concurrencyPolicy))) errs.push(fieldErrors.notSupported('spec.concurrencyPolicy', spec.concurrencyPolicy, ['Allow', 'Forbid', 'Replace']));
    const name = obj.metadata?.name ?? '';
    if (name.length > 52) errs.push(fieldErrors.invalid('metadata.name', name, 'must be no more than 52 characters'));
    validatePodTemplate(path(spec, 'jobTemplate.spec.template'), 'spec.jobTemplate.spec.template', errs, ['OnFailure', 'Never']);
    return errs;
  },
  prepareForCreate(obj) { obj.status = {}; },
  prepareForUpdate: statusStrategy.prepareForUpdate,
  columns: [
    col('Schedule', 'string', 'The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron.', (o) => str(path(o, 'spec.schedule'))),
    col('Timezone', 'string', 'The time zone name for the given schedule, see https://en.wikipedia.org/wiki/List_of_tz_database_time_zones.', (o) => str(path(o, 'spec.timeZone')) || '<none>'),
    col('Suspend', 'boolean', 'This flag tells the controller to suspend subsequent executions.', (o) => path(o, 'spec.suspend') === true ? 'True' : 'False'),
    col('Active', 'integer', 'A list of pointers to currently running jobs.', (o) => arr(path(o, 'status.active')).length),
    col('Last Schedule', 'string', 'Information when was the last time the job was successfully scheduled.', (o, now) => { const t = str(path(o, 'status.lastScheduleTime')); return t ? since(t, now) : '<none>'; }),
  ],
  wideColumns: [
    containersColumn('spec.jobTemplate.spec.template.spec.containers'),
    imagesColumn('spec.jobTemplate.spec.template.spec.containers'),
    col('Selector', 'string', 'A label query over pods that should match the pod count.', (o) => { const s = path(o, 'spec.jobTemplate.spec.selector'); return s ? selectorString(s) : '<none>'; }, 1),
  ],
});

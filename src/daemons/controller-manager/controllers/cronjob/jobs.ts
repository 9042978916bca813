/**
 * The Jobs of a CronJob, as data: the Job started for a fire time, what finished means, how
 * the status' active list follows the Jobs, and which finished Jobs the history limits drop.
 * Pure; the cronjob controller does the reads and writes.
 *
 * Contract:
 *  - the Job for fire time T is named `<cronjob>-<T in minutes since the epoch>`, so that a
 *    retry after a lost status write finds it (AlreadyExists) instead of starting it twice;
 *  - a Job is finished when its Complete or Failed condition is True;
 *  - the history keeps the newest finished Jobs per outcome by status.startTime (Jobs without
 *    one count as newest; the name breaks ties) and lists the rest for deletion; Jobs already
 *    being deleted are neither kept nor listed.
 */
import type { KubeObject, OwnerReference } from '../../../../api/resources/types.js';
import { formatInZone } from '../../../../api/resources/batch/cron-schedule.js';
import { metaTime } from '../../../../api/meta/time.js';

export const SCHEDULED_TIMESTAMP_ANNOTATION = 'batch.kubernetes.io/cronjob-scheduled-timestamp';

type Dict = Record<string, unknown>;
const dict = (v: unknown): Dict => (typeof v === 'object' && v !== null && !Array.isArray(v) ? v as Dict : {});

/** What status.active holds per running Job. */
export interface JobRef {
  apiVersion: string;
  kind: string;
  name: string;
  namespace: string;
  uid: string;
  resourceVersion?: string;
}

export interface CronJobStatus {
  active: JobRef[];
  lastScheduleTime?: string;
  lastSuccessfulTime?: string;
}


export function parseTime(v: unknown): number | undefined {
  if (typeof v !== 'string' || !v) return undefined;
  const t = Date.parse(v);
  return Number.isNaN(t) ? undefined : t;
}

export function jobName(cronJobName: string, scheduled: number): string {
  return `${cronJobName}-${Math.floor(scheduled / 60_000)}`;
}

/**
 * The Job to start for fire time `scheduled`: labels, annotations and spec from
 * spec.jobTemplate, the scheduled-timestamp annotation (RFC 3339 in spec.timeZone, UTC when
 * unset, as Kubernetes writes it) and a controller reference to the CronJob.
 */
export function jobFromTemplate(cronJob: KubeObject, scheduled: number): KubeObject {
  const spec = dict(cronJob.spec);
  const template = dict(spec.jobTemplate);
  const meta = dict(template.metadata);
  const zone = typeof spec.timeZone === 'string' && spec.timeZone ? spec.timeZone : 'UTC';
  const owner: OwnerReference = {
    apiVersion: 'batch/v1', kind: 'CronJob', name: cronJob.metadata?.name ?? '', uid: cronJob.metadata?.uid ?? '',
    controller: true, blockOwnerDeletion: true,
  };
  const metadata: Dict = {
    name: jobName(cronJob.metadata?.name ?? '', scheduled),
    namespace: cronJob.metadata?.namespace,
    annotations: { ...(meta.annotations as Record<string, string> | undefined), [SCHEDULED_TIMESTAMP_ANNOTATION]: formatInZone(scheduled, zone) },
    ownerReferences: [owner],
  };
  if (meta.labels) metadata.labels = { ...(meta.labels as Record<string, string>) };
  return { apiVersion: 'batch/v1', kind: 'Job', metadata, spec: structuredClone(template.spec ?? {}) as Dict };
}

/** 'Complete' or 'Failed' when the Job has finished. */
export function finishedAs(job: KubeObject): 'Complete' | 'Failed' | undefined {
  for (const c of (dict(job.status).conditions ?? []) as Dict[]) {
    if ((c.type === 'Complete' || c.type === 'Failed') && c.status === 'True') return c.type;
  }
  return undefined;
}

export function jobRef(job: KubeObject): JobRef {
  const ref: JobRef = {
    apiVersion: 'batch/v1', kind: 'Job', name: job.metadata?.name ?? '', namespace: job.metadata?.namespace ?? '', uid: job.metadata?.uid ?? '',
  };
  if (job.metadata?.resourceVersion) ref.resourceVersion = job.metadata.resourceVersion;
  return ref;
}

/** True when the CronJob with this uid is the Job's controller. */
export function ownedBy(job: KubeObject, cronJobUid: string | undefined): boolean {
  const ref = job.metadata?.ownerReferences?.find((r) => r.controller === true);
  return ref !== undefined && ref.kind === 'CronJob' && ref.uid === cronJobUid;
}

export function statusOf(cronJob: KubeObject): CronJobStatus {
  const st = dict(cronJob.status);
  const out: CronJobStatus = { active: ((st.active ?? []) as JobRef[]).map((r) => ({ ...r })) };
  if (typeof st.lastScheduleTime === 'string') out.lastScheduleTime = st.lastScheduleTime;
  if (typeof st.lastSuccessfulTime === 'string') out.lastSuccessfulTime = st.lastSuccessfulTime;
  return out;
}

export function sameStatus(a: CronJobStatus, b: CronJobStatus): boolean {
  const refs = (s: CronJobStatus): string => JSON.stringify(s.active.map((r) => [r.apiVersion, r.kind, r.namespace, r.name, r.uid, r.resourceVersion]));
  return a.lastScheduleTime === b.lastScheduleTime && a.lastSuccessfulTime === b.lastSuccessfulTime && refs(a) === refs(b);
}

/** What the owned Jobs say about the status' active list. */
export interface Observed {
  status: CronJobStatus;
  /** Jobs that finished while listed as active (dropped from the list now). */
  finished: Array<{ job: KubeObject; as: 'Complete' | 'Failed' }>;
  /** Running Jobs we own that the active list does not name. */
  unexpected: KubeObject[];
  /** Active entries with no Job in the cache (to check against the API server). */
  unseen: JobRef[];
}

/**
 * Folds the owned Jobs into the status: finished Jobs leave the active list, the latest
 * completion time of a successful Job becomes lastSuccessfulTime (never moving back).
 */
export function observeJobs(current: CronJobStatus, jobs: readonly KubeObject[]): Observed {
  const status: CronJobStatus = { ...current, active: [...current.active] };
  const byUid = new Map(jobs.map((j) => [j.metadata?.uid, j]));
  const listed = new Set(current.active.map((r) => r.uid));
  const out: Observed = { status, finished: [], unexpected: [], unseen: [] };
  let lastSuccess = parseTime(status.lastSuccessfulTime);
  for (const job of jobs) {
    const as = finishedAs(job);
    if (!as) {
      if (!listed.has(job.metadata?.uid ?? '')) out.unexpected.push(job);
      continue;
    }
    if (listed.has(job.metadata?.uid ?? '')) out.finished.push({ job, as });
    const done = parseTime(dict(job.status).completionTime);
    if (as === 'Complete' && done !== undefined && (lastSuccess === undefined || done > lastSuccess)) {
      lastSuccess = done;
      status.lastSuccessfulTime = metaTime(done);
    }
  }
  const gone = new Set(out.finished.map((f) => f.job.metadata?.uid));
  status.active = status.active.filter((r) => !gone.has(r.uid));
  out.unseen = status.active.filter((r) => !byUid.has(r.uid));
  return out;
}

function startedBefore(a: KubeObject, b: KubeObject): number {
  const sa = parseTime(dict(a.status).startTime);
  const sb = parseTime(dict(b.status).startTime);
  if (sa !== sb) {
    if (sa === undefined) return 1;
    if (sb === undefined) return -1;
    return sa - sb;
  }
  const na = a.metadata?.name ?? ''; const nb = b.metadata?.name ?? '';
  return na < nb ? -1 : na > nb ? 1 : 0;
}

/** Finished Jobs beyond the history limits, oldest first (a limit left undefined keeps all). */
export function jobsBeyondHistory(jobs: readonly KubeObject[], successfulLimit: number | undefined, failedLimit: number | undefined): KubeObject[] {
  const out: KubeObject[] = [];
  for (const [as, limit] of [['Complete', successfulLimit], ['Failed', failedLimit]] as const) {
    if (limit === undefined) continue;
    const done = jobs.filter((j) => !j.metadata?.deletionTimestamp && finishedAs(j) === as).sort(startedBefore);
    out.push(...done.slice(0, Math.max(0, done.length - limit)));
  }
  return out;
}

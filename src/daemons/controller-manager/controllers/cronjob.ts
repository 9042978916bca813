/**
 * The cron job controller: starts a Job from each CronJob's spec.jobTemplate at the times its
 * spec.schedule names (in spec.timeZone, else `defaultTimeZone`: the controller's local zone,
 * as in Kubernetes), keeps status.active / lastScheduleTime / lastSuccessfulTime, and deletes
 * finished Jobs beyond the history limits. Schedules: src/api/resources/batch/cron-schedule.ts; which time is due:
 * cronjob/timing.ts; Job shapes and history: cronjob/jobs.ts.
 *
 * A sync of `namespace/name` (5 workers, Kubernetes' --concurrent-cron-job-syncs default):
 * fold the owned Jobs into the status (finished ones leave status.active: SawCompletedJob;
 * listed ones that are gone: MissingJob), delete finished Jobs beyond the limits, then, unless
 * the CronJob is being deleted, suspended, or has a bad time zone or schedule (warning event),
 * start the most recent unmet fire time: skipped past startingDeadlineSeconds (MissSchedule),
 * after a prior run still active under Forbid (JobAlreadyActive), after deleting the active
 * Jobs under Replace. The status goes out in one update of the status subresource carrying the
 * cached resourceVersion; a 409 fails the sync, which is retried with backoff.
 *
 * Contract: the Job of a fire time has a fixed name, so a sync repeated after a lost status
 * write meets AlreadyExists and records that Job instead of starting another. Each CronJob is
 * queued again just after its next fire time on the injected clock (one timer per key), and
 * whenever it or a Job it controls is added, changed or deleted; a change of schedule or time
 * zone only moves the timer (a new schedule does not start a time already past).
 */
import type { Logger } from 'pino';
import { isApiError } from '../../../api/meta/status.js';
import type { KubeObject } from '../../../api/resources/types.js';
import type { Controller, ControllerContext } from '../controller-registry.js';
import { noopRecorder, type EventRecorder } from '../events.js';
import {
  deletedObject, keyOf, realClock, WorkQueue, type Clock, type ResourceRef, type RestClient, type SharedIndexInformer,
} from '../deps.js';
import {
  jobFromTemplate, jobName, jobRef, jobsBeyondHistory, observeJobs, ownedBy, parseTime, sameStatus, statusOf, type CronJobStatus, type JobRef,
} from './cronjob/jobs.js';
import { hasZonePrefix, isValidTimeZone, localTimeZone, parseSchedule, ScheduleError, type Schedule } from '../../../api/resources/batch/cron-schedule.js';
import { dueTime, nextSyncAt, TOO_MANY_MISSED } from './cronjob/timing.js';
import { metaTime } from '../../../api/meta/time.js';

export const CRONJOBS: ResourceRef = { group: 'batch', version: 'v1', resource: 'cronjobs' };
export const JOBS: ResourceRef = { group: 'batch', version: 'v1', resource: 'jobs' };
const WORKERS = 5;

type Dict = Record<string, unknown>;
const spec = (o: KubeObject): Dict => (o.spec ?? {}) as Dict;
const optionalInt = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

export interface CronJobControllerOptions {
  /** Time for schedules and the per-CronJob timers (default: real time). Tests drive a ManualClock. */
  clock?: Clock;
  /** Zone of schedules without spec.timeZone (default: this process's local zone). */
  defaultTimeZone?: string;
}

export class CronJobController implements Controller {
  readonly name = 'cronjob';
  private readonly clock: Clock;
  private readonly defaultZone: string;
  private readonly timers = new Map<string, AbortController>();
  private queue!: WorkQueue;
  private cronJobs!: SharedIndexInformer;
  private jobs!: SharedIndexInformer;
  private client!: RestClient;
  private log!: Logger;
  private events: EventRecorder = noopRecorder;

  constructor(opts: CronJobControllerOptions = {}) {
    this.clock = opts.clock ?? realClock;
    this.defaultZone = opts.defaultTimeZone ?? localTimeZone();
  }

  async run(ctx: ControllerContext): Promise<void> {
    this.client = ctx.client;
    this.log = ctx.log;
    this.events = ctx.events?.('cronjob-controller') ?? noopRecorder;
    this.queue = new WorkQueue({ name: this.name, log: ctx.log });
    this.cronJobs = ctx.informers.informerFor(CRONJOBS);
    this.jobs = ctx.informers.informerFor(JOBS);
    this.cronJobs.addEventHandler({
      onAdd: (cj) => this.queue.add(keyOf(cj)),
      onUpdate: (old, cur) => this.cronJobChanged(old, cur),
      onDelete: (x) => { const key = keyOf(deletedObject(x)); this.setTimer(key, undefined); this.queue.add(key); },
    });
    this.jobs.addEventHandler({
      onAdd: (j) => this.enqueueOwner(j),
      onUpdate: (old, cur) => {
        if (old.metadata?.resourceVersion === cur.metadata?.resourceVersion) return;
        const was = old.metadata?.ownerReferences?.find((r) => r.controller)?.uid;
        if (was !== cur.metadata?.ownerReferences?.find((r) => r.controller)?.uid) this.enqueueOwner(old);
        this.enqueueOwner(cur);
      },
      onDelete: (x) => this.enqueueOwner(deletedObject(x)),
    });
    ctx.informers.start(ctx.signal);
    const synced = await Promise.all([this.cronJobs.waitForSync(ctx.signal), this.jobs.waitForSync(ctx.signal)]);
    if (!synced.every(Boolean)) return;
    try {
      await this.queue.runWorkers(WORKERS, (key) => this.sync(key), ctx.signal);
    } finally {
      for (const t of this.timers.values()) t.abort();
      this.timers.clear();
      await this.events.flush();
    }
  }

  private zoneOf(cj: KubeObject): string {
    const z = spec(cj).timeZone;
    return typeof z === 'string' ? z : this.defaultZone;
  }

  private cronJobChanged(old: KubeObject, cur: KubeObject): void {
    if (old.metadata?.resourceVersion === cur.metadata?.resourceVersion) return;
    const key = keyOf(cur);
    if (spec(old).schedule === spec(cur).schedule && spec(old).timeZone === spec(cur).timeZone) { this.queue.add(key); return; }
    // A new schedule takes effect from its next fire time; a bad one is reported by a sync.
    try {
      const sched = parseSchedule(String(spec(cur).schedule ?? ''), this.zoneOf(cur));
      const now = this.clock.now();
      this.setTimer(key, nextSyncAt(sched, this.earliest(cur, statusOf(cur), now), now));
    } catch {
      this.queue.add(key);
    }
  }

  /** Queues the CronJob controlling the Job, when it is one we have. */
  private enqueueOwner(job: KubeObject): void {
    const ref = job.metadata?.ownerReferences?.find((r) => r.controller === true);
    if (!ref || ref.kind !== 'CronJob') return;
    const cj = this.cronJobs.indexer.get(job.metadata?.namespace, ref.name);
    if (cj && cj.metadata?.uid === ref.uid) this.queue.add(keyOf(cj));
  }

  /**
   * Replaces the key's timer: queue it at clock time `at` (none when undefined). An absolute
   * time, so that a sync which read the clock before it moved on still wakes up in time.
   */
  private setTimer(key: string, at: number | undefined): void {
    this.timers.get(key)?.abort();
    this.timers.delete(key);
    if (at === undefined || this.queue.isShuttingDown) return;
    const ms = at - this.clock.now();
    if (ms <= 0) { this.queue.add(key); return; }
    const ac = new AbortController();
    this.timers.set(key, ac);
    this.clock.sleep(ms, ac.signal).then(() => {
      if (this.timers.get(key) === ac) this.timers.delete(key);
      this.queue.add(key);
    }, () => undefined);
  }

  private earliest(cj: KubeObject, status: CronJobStatus, now: number): number {
    return parseTime(status.lastScheduleTime) ?? parseTime(cj.metadata?.creationTimestamp) ?? now;
  }

  /** One reconcile of `namespace/name`. Throws to be retried with backoff. */
  async sync(key: string): Promise<void> {
    let cj = this.cronJobs.indexer.getByKey(key);
    if (!cj) { this.setTimer(key, undefined); return; }
    const uid = cj.metadata?.uid;
    const owned = this.jobs.indexer.listNamespace(cj.metadata?.namespace ?? '').filter((j) => ownedBy(j, uid));
    let observed = observeJobs(statusOf(cj), owned);
    if (observed.unexpected.length) {
      // Our own status write may not have reached the cache yet: ask the API server.
      const fresh = await this.fresh(cj);
      if (!fresh) return;
      cj = fresh;
      observed = observeJobs(statusOf(cj), owned);
      for (const j of observed.unexpected) this.events.event(cj, 'Warning', 'UnexpectedJob', `Job ${j.metadata?.name ?? ''} is ours but was not listed as active`);
    }
    const { status } = observed;
    for (const { job, as } of observed.finished) this.events.event(cj, 'Normal', 'SawCompletedJob', `Saw completed job: ${job.metadata?.name ?? ''}, condition: ${as}`);
    await this.dropMissing(cj, status, observed.unseen);
    await this.trimHistory(cj, status, owned);
    let failure: unknown;
    let wakeAt: number | undefined;
    try {
      wakeAt = await this.startDue(cj, status);
    } catch (e) {
      failure = e;
    }
    await this.writeStatus(cj, status);
    if (failure) throw failure;
    this.setTimer(key, wakeAt);
  }

  private async fresh(cj: KubeObject): Promise<KubeObject | undefined> {
    try {
      const got = await this.client.get({ ...CRONJOBS, namespace: cj.metadata?.namespace ?? '' }, cj.metadata?.name ?? '');
      return got.metadata?.uid === cj.metadata?.uid ? got : undefined;
    } catch (e) {
      if (isApiError(e) && e.code === 404) return undefined;
      throw e;
    }
  }

  /** Active entries whose Job the cache lacks: dropped when the API server says it is gone. */
  private async dropMissing(cj: KubeObject, status: CronJobStatus, unseen: JobRef[]): Promise<void> {
    for (const ref of unseen) {
      try {
        await this.client.get({ ...JOBS, namespace: ref.namespace || (cj.metadata?.namespace ?? '') }, ref.name);
      } catch (e) {
        if (!(isApiError(e) && e.code === 404)) throw e;
        status.active = status.active.filter((r) => r.uid !== ref.uid);
        this.events.event(cj, 'Normal', 'MissingJob', `Active job went missing: ${ref.name}`);
      }
    }
  }

  private async trimHistory(cj: KubeObject, status: CronJobStatus, owned: KubeObject[]): Promise<void> {
    const s = spec(cj);
    for (const job of jobsBeyondHistory(owned, optionalInt(s.successfulJobsHistoryLimit), optionalInt(s.failedJobsHistoryLimit))) {
      await this.deleteJob(cj, status, job.metadata?.name ?? '', job.metadata?.uid ?? '').catch((e: unknown) => {
        this.log.info({ cronjob: keyOf(cj), job: job.metadata?.name, err: (e as Error).message }, 'could not delete a job beyond the history limit');
      });
    }
  }

  /** Deletes a Job (its pods in the background) and drops it from the active list; a Job already gone counts as deleted. */
  private async deleteJob(cj: KubeObject, status: CronJobStatus, name: string, uid: string): Promise<void> {
    try {
      await this.client.delete({ ...JOBS, namespace: cj.metadata?.namespace ?? '' }, name, { propagationPolicy: 'Background', preconditions: { uid } });
      this.events.event(cj, 'Normal', 'SuccessfulDelete', `Deleted job ${name}`);
    } catch (e) {
      if (!(isApiError(e) && e.code === 404)) {
        this.events.event(cj, 'Warning', 'FailedDelete', `Error deleting job ${name}: ${(e as Error).message}`);
        throw e;
      }
    }
    status.active = status.active.filter((r) => r.uid !== uid);
  }

  /**
   * Starts the due Job, if any, recording it in `status`. Returns the clock time of the next
   * sync (undefined: only when something changes).
   */
  private async startDue(cj: KubeObject, status: CronJobStatus): Promise<number | undefined> {
    const s = spec(cj);
    if (cj.metadata?.deletionTimestamp) return undefined;
    if (typeof s.timeZone === 'string' && !isValidTimeZone(s.timeZone)) {
      this.events.event(cj, 'Warning', 'UnknownTimeZone', `invalid timeZone: ${JSON.stringify(s.timeZone)}`);
      return undefined;
    }
    if (s.suspend === true) return undefined;
    const text = String(s.schedule ?? '');
    if (hasZonePrefix(text)) this.events.event(cj, 'Warning', 'UnsupportedSchedule', `TZ or CRON_TZ in schedule ${JSON.stringify(text)} is not supported; use spec.timeZone`);
    let sched: Schedule;
    try {
      sched = parseSchedule(text, this.zoneOf(cj));
    } catch (e) {
      if (!(e instanceof ScheduleError)) throw e;
      this.events.event(cj, 'Warning', 'UnparseableSchedule', `unparseable schedule: ${JSON.stringify(text)}: ${e.message}`);
      return undefined;
    }
    const now = this.clock.now();
    const earliest = this.earliest(cj, status, now);
    const due = dueTime(sched, { earliest, now, startingDeadlineSeconds: optionalInt(s.startingDeadlineSeconds) });
    const later = nextSyncAt(sched, earliest, now);
    if (due.skipped !== undefined) {
      this.events.event(cj, 'Warning', 'MissSchedule', `Missed scheduled time to start a job: ${new Date(due.skipped).toUTCString()}`);
      return later;
    }
    if (due.scheduled === undefined) return later;
    if (due.missed > TOO_MANY_MISSED) {
      this.events.event(cj, 'Warning', 'TooManyMissedTimes', `more than ${TOO_MANY_MISSED} start times missed; starting the latest. Set or lower spec.startingDeadlineSeconds, or check clock skew`);
    }
    const name = jobName(cj.metadata?.name ?? '', due.scheduled);
    if (status.active.some((r) => r.name === name)) return later;
    if (s.concurrencyPolicy === 'Forbid' && status.active.length > 0) {
      this.events.event(cj, 'Normal', 'JobAlreadyActive', 'Not starting a job: the previous one is still running and concurrencyPolicy is Forbid');
      return later;
    }
    if (s.concurrencyPolicy === 'Replace') {
      for (const ref of [...status.active]) await this.deleteJob(cj, status, ref.name, ref.uid);
    }
    const job = await this.createJob(cj, due.scheduled);
    if (!job) return later;
    if (!status.active.some((r) => r.uid === job.metadata?.uid)) status.active.push(jobRef(job));
    status.lastScheduleTime = metaTime(due.scheduled);
    return nextSyncAt(sched, due.scheduled, now);
  }

  /** The Job of the fire time: created now, or found (ours) from an earlier attempt; undefined when someone else's holds the name. */
  private async createJob(cj: KubeObject, scheduled: number): Promise<KubeObject | undefined> {
    const ref = { ...JOBS, namespace: cj.metadata?.namespace ?? '' };
    const want = jobFromTemplate(cj, scheduled);
    try {
      const created = await this.client.create(ref, want);
      this.events.event(cj, 'Normal', 'SuccessfulCreate', `Created job ${created.metadata?.name ?? ''}`);
      return created;
    } catch (e) {
      if (!isApiError(e, 'AlreadyExists')) {
        this.events.event(cj, 'Warning', 'FailedCreate', `Error creating job: ${(e as Error).message}`);
        throw e;
      }
    }
    const existing = await this.client.get(ref, want.metadata?.name ?? '');
    if (!ownedBy(existing, cj.metadata?.uid)) return undefined;
    this.log.info({ cronjob: keyOf(cj), job: existing.metadata?.name }, 'job already exists');
    return existing;
  }

  private async writeStatus(cj: KubeObject, status: CronJobStatus): Promise<void> {
    if (sameStatus(statusOf(cj), status)) return;
    const next: Dict = { ...(cj.status as Dict | undefined) };
    delete next.active; delete next.lastScheduleTime; delete next.lastSuccessfulTime;
    if (status.active.length) next.active = status.active;
    if (status.lastScheduleTime) next.lastScheduleTime = status.lastScheduleTime;
    if (status.lastSuccessfulTime) next.lastSuccessfulTime = status.lastSuccessfulTime;
    try {
      await this.client.update({ ...CRONJOBS, namespace: cj.metadata?.namespace ?? '' }, { ...cj, status: next }, { subresource: 'status' });
    } catch (e) {
      // Deleted meanwhile: nothing to record. A 409 is thrown: the retry reads a fresher cache.
      if (isApiError(e) && e.code === 404) return;
      throw e;
    }
  }
}

export function newCronJobController(opts: CronJobControllerOptions = {}): Controller {
  return new CronJobController(opts);
}

/**
 * One reconcile of one Job, given the pods it controls (after adoption and release): decide
 * whether the Job is finishing (backoff limit, deadline, completions), create or delete pods
 * toward the wanted number of active ones, then record finished pods (tracking.ts) and write
 * the status.
 *
 * Wanted active pods: parallelism, bounded by the completions still missing; a work-queue Job
 * (no completions) stops adding pods once one succeeded. Replacements after failures wait for
 * the backoff (backoff.ts). A suspended Job has none. Each sync either deletes or creates.
 *
 * Contract: called only with the Job from the cache (or our newer write of it) and never twice
 * at once for a key. Diffs are computed only when the pod expectations are satisfied. Status is
 * written to the status subresource with the resourceVersion we last saw, so a stale view
 * fails with 409 and the sync is retried; writes happen only when the status changed.
 */
import type { KubeObject } from '../../../../api/resources/types.js';
import { ControllerExpectations, compareForDeletion, isPodActive, isPodReady, podPhase } from '../controller-utils.js';
import { keyOf } from '../../deps.js';
import type { EventRecorder } from '../../events.js';
import { BackoffStore, remainingBackoffMs, type BackoffRecord } from './backoff.js';
import { countIndexes, formatIndexes, parseIndexes, pendingIndexes, surplusIndexedPods, withIndexes, type Interval } from './indexes.js';
import {
  activeDeadlineSecondsOf, backoffLimitOf, completionIndexOf, completionsOf, hasTrackingFinalizer, hasValidIndex, isIndexed,
  isSuspended, isTerminatingPod, onlyReplaceFailedPods, parallelismOf, pastBackoffLimitOnFailure,
} from './job-spec.js';
import type { JobPodControl } from './pod-control.js';
import {
  BACKOFF_LIMIT_EXCEEDED, COMPLETIONS_REACHED, DEADLINE_EXCEEDED, ensureCondition, markFinished, markFinishing, recordedFinish,
  sameStatus, statusCopy, type Finish, type JobStatus,
} from './status.js';
import { FinalizerExpectations, countUncounted, newlyFinished, recordFinished, uidsWithFinalizer } from './tracking.js';
import { metaTime } from '../../../../api/meta/time.js';

/** At most this many pods are created or deleted per sync. */
export const MAX_POD_WRITES_PER_SYNC = 500;

export interface JobSyncDeps {
  pods: JobPodControl;
  events: EventRecorder;
  expectations: ControllerExpectations;
  finalizers: FinalizerExpectations;
  backoff: BackoffStore;
  backoffBaseMs: number;
  backoffMaxMs: number;
  now(): number;
  requeueAfter(key: string, ms: number): void;
  /** Writes the status subresource; returns the server's Job. */
  writeStatus(job: KubeObject, status: JobStatus): Promise<KubeObject>;
}

/** Active pods to remove: Indexed duplicates and strays first, then by deletion preference. */
export function podsForRemoval(job: KubeObject, active: readonly KubeObject[], atLeast: number): KubeObject[] {
  let remove: KubeObject[] = [];
  let rest: KubeObject[] = [...active];
  if (isIndexed(job)) ({ remove, keep: rest } = surplusIndexedPods(active, completionsOf(job) ?? 0));
  if (remove.length < atLeast) remove = [...remove, ...rest.sort((a, b) => compareForDeletion(a, b)).slice(0, atLeast - remove.length)];
  return remove;
}

export class JobSync {
  private readonly st: JobStatus;
  private readonly key: string;
  private readonly now: number;
  private readonly expectedRm: ReadonlySet<string>;
  private activePods: KubeObject[];
  private active: number;
  private ready: number;
  private terminating: number;
  private succeeded = 0;
  private prevIndexes: Interval[] = [];
  private succeededIndexes: Interval[] = [];
  private backoffRecord!: BackoffRecord;

  constructor(private readonly d: JobSyncDeps, private job: KubeObject, private readonly pods: readonly KubeObject[], private readonly satisfied: boolean) {
    this.key = keyOf(job);
    this.now = d.now();
    this.st = statusCopy(job);
    this.expectedRm = d.finalizers.expected(this.key);
    this.activePods = pods.filter(isPodActive);
    this.active = this.activePods.length;
    this.ready = this.activePods.filter(isPodReady).length;
    this.terminating = pods.filter(isTerminatingPod).length;
  }

  async run(): Promise<void> {
    const { job, st, now } = this;
    const fresh = newlyFinished(job, st, this.pods, this.expectedRm);
    const uncounted = st.uncountedTerminatedPods ?? {};
    this.succeeded = (st.succeeded ?? 0) + fresh.succeeded.length + (uncounted.succeeded?.length ?? 0);
    const failed = (st.failed ?? 0) + fresh.failed.length + (uncounted.failed?.length ?? 0);
    if (!st.startTime && !isSuspended(job)) st.startTime = metaTime(now);
    this.backoffRecord = this.d.backoff.next(this.key, fresh.succeeded, fresh.failed);

    let finish = recordedFinish(st);
    if (!finish) {
      const deadline = activeDeadlineSecondsOf(job);
      const started = st.startTime ? Date.parse(st.startTime) : NaN;
      if (failed > backoffLimitOf(job) || pastBackoffLimitOnFailure(job, this.pods)) finish = BACKOFF_LIMIT_EXCEEDED;
      else if (deadline !== undefined && !isSuspended(job) && !Number.isNaN(started)) {
        const left = started + deadline * 1000 - now;
        if (left <= 0) finish = DEADLINE_EXCEEDED; else this.d.requeueAfter(this.key, left);
      }
    }
    if (isIndexed(job)) {
      const completions = completionsOf(job) ?? 0;
      this.prevIndexes = parseIndexes(st.completedIndexes, completions);
      const done = this.pods.filter((p) => podPhase(p) === 'Succeeded' && hasTrackingFinalizer(p) && hasValidIndex(p, job)).map((p) => completionIndexOf(p) ?? 0);
      this.succeededIndexes = withIndexes(this.prevIndexes, done);
      this.succeeded = countIndexes(this.succeededIndexes);
    }

    let manageError: unknown;
    if (finish) {
      // Finishing: every active pod goes, keeping its finalizer so it is counted (as failed).
      const r = await this.d.pods.delete(job, this.activePods, { dropFinalizer: false });
      // Not all gone, or pods we created may not be in the cache yet: finish in a later sync.
      if (r.done !== this.active || !this.satisfied) finish = undefined;
      this.active -= r.done; this.terminating += r.done; this.ready -= r.ready;
      manageError = r.error;
    } else {
      let managed = false;
      if (this.satisfied && !job.metadata?.deletionTimestamp) { manageError = await this.manage(); managed = true; }
      const completions = completionsOf(job);
      const complete = this.active === 0 && (completions === undefined ? this.succeeded > 0 : this.succeeded >= completions);
      if (complete) finish = COMPLETIONS_REACHED;
      else if (managed) this.updateSuspended();
    }
    st.active = this.active;
    st.ready = this.ready;
    st.terminating = this.terminating;
    await this.trackAndWrite(finish);
    if (manageError) throw manageError;
  }

  /** Suspended condition (True while suspended; False after a resume, which restarts the clock). */
  private updateSuspended(): void {
    const { st, now } = this;
    if (isSuspended(this.job)) {
      if (ensureCondition(st, 'Suspended', 'True', 'JobSuspended', 'Job suspended', now)) this.d.events.event(this.job, 'Normal', 'Suspended', 'Job suspended');
    } else if (ensureCondition(st, 'Suspended', 'False', 'JobResumed', 'Job resumed', now)) {
      this.d.events.event(this.job, 'Normal', 'Resumed', 'Job resumed');
      st.startTime = metaTime(now);
    }
  }

  /** Creates or deletes pods toward the wanted number of active ones; returns the first error. */
  private async manage(): Promise<unknown> {
    const { job, key } = this;
    const completions = completionsOf(job);
    const parallelism = parallelismOf(job);
    let want: number;
    if (isSuspended(job)) want = 0;
    else if (completions === undefined) want = this.succeeded > 0 ? this.active : parallelism;
    else want = Math.max(0, Math.min(parallelism, completions - this.succeeded));

    const victims = podsForRemoval(job, this.activePods, Math.max(0, this.active - want)).slice(0, MAX_POD_WRITES_PER_SYNC);
    if (victims.length) {
      this.d.expectations.expectDeletions(key, victims.map(keyOf));
      const r = await this.d.pods.delete(job, victims, { dropFinalizer: true, onNotDeleted: (p) => this.d.expectations.deletionObserved(key, keyOf(p)) });
      this.active -= r.done; this.terminating += r.done; this.ready -= r.ready;
      return r.error;
    }

    const replacing = onlyReplaceFailedPods(job) ? this.terminating : 0;
    let diff = Math.min(want - replacing - this.active, MAX_POD_WRITES_PER_SYNC);
    if (diff <= 0) return undefined;
    const wait = remainingBackoffMs(this.backoffRecord, this.d.backoffBaseMs, this.d.backoffMaxMs, this.now);
    if (wait > 0) { this.d.requeueAfter(key, wait); return undefined; }
    let indexes: number[] | undefined;
    if (isIndexed(job)) {
      indexes = pendingIndexes(this.activePods, this.succeededIndexes, diff, completions ?? 0);
      diff = indexes.length;
      if (!diff) return undefined;
    }
    this.d.expectations.expectCreations(key, diff);
    const r = await this.d.pods.create(job, diff, indexes);
    for (let i = r.done; i < diff; i++) this.d.expectations.creationObserved(key);
    this.active += r.done;
    return r.error;
  }

  private async write(): Promise<void> {
    if (sameStatus(this.st, this.job.status)) return;
    this.job = await this.d.writeStatus(this.job, this.st);
  }

  /** Records finished pods, removes their finalizers, counts them, and finishes the Job when it may. */
  private async trackAndWrite(finish: Finish | undefined): Promise<void> {
    const { job, st, now } = this;
    const withFinalizer = uidsWithFinalizer(this.pods, this.expectedRm);
    countUncounted(st, withFinalizer);
    const plan = recordFinished(job, st, this.pods, this.expectedRm, this.prevIndexes, finish);
    if (isIndexed(job)) {
      this.succeededIndexes = withIndexes(this.succeededIndexes, plan.newSucceededIndexes);
      st.completedIndexes = formatIndexes(this.succeededIndexes);
      st.succeeded = countIndexes(this.succeededIndexes);
    }
    if (finish) markFinishing(st, finish, now);
    await this.write();
    this.d.backoff.commit(this.backoffRecord);

    let removeError: unknown;
    if (plan.removeFinalizer.length) {
      const uids = plan.removeFinalizer.map((p) => p.metadata?.uid ?? '');
      this.d.finalizers.expect(this.key, uids);
      const r = await this.d.pods.removeFinalizers(plan.removeFinalizer);
      r.removed.forEach((ok, i) => {
        if (ok) withFinalizer.delete(uids[i]);
        else this.d.finalizers.observed(this.key, uids[i]);
      });
      removeError = r.error;
    }
    countUncounted(st, withFinalizer);
    if (removeError) { await this.write(); throw removeError; }

    const u = st.uncountedTerminatedPods ?? {};
    const settled = !plan.capped && !u.succeeded?.length && !u.failed?.length && this.terminating === 0;
    if (finish && settled) markFinished(st, finish, now);
    await this.write();
    if (!finish || !settled) return;
    if (finish.success) {
      const completions = completionsOf(job);
      if (completions !== undefined && (st.succeeded ?? 0) > completions) {
        this.d.events.event(job, 'Warning', 'TooManySucceededPods', 'Too many succeeded pods running after completion count reached');
      }
      this.d.events.event(job, 'Normal', 'Completed', 'Job completed');
    } else {
      this.d.events.event(job, 'Warning', finish.reason, finish.message);
    }
    this.d.backoff.remove(this.key);
  }
}

/**
 * The job controller (batch/v1 Job): runs each Job's pods to completion. Pods are made from
 * spec.template, owned by the Job and held by the `batch.kubernetes.io/job-tracking`
 * finalizer until their outcome is counted in the Job's status (job/tracking.ts), so deleting
 * a finished pod never loses a count. job/sync.ts holds one reconcile and job/claim.ts the
 * adoption of pods; this file wires the informers and the queues, and cleans the finalizer
 * off pods no Job will count.
 *
 * Keys are `namespace/name` of Jobs; `concurrentJobSyncs` workers (5 when the option is
 * absent). A second queue, of pod keys, removes the finalizer from pods whose Job is gone or
 * finished, and from pods that lost their owner.
 *
 * Contract: one key is synced by one worker at a time; a Job with Complete or Failed True is
 * left alone; Jobs whose spec.managedBy names another controller are skipped. Our own status
 * writes count as the freshest view of a Job until the cache catches up with them, so a
 * lagging Job watch cannot make a sync act on counts we already moved.
 */
import type { Logger } from 'pino';
import { isApiError } from '../../../api/meta/status.js';
import type { KubeObject } from '../../../api/resources/types.js';
import type { Controller, ControllerContext } from '../controller-registry.js';
import { noopRecorder, type EventRecorder } from '../events.js';
import { deletedObject, keyOf, splitKey, WorkQueue, type ResourceRef, type RestClient, type SharedIndexInformer } from '../deps.js';
import { ControllerExpectations, controllerRefOf } from './controller-utils.js';
import { BackoffStore } from './job/backoff.js';
import { claimJobPods, jobSelector } from './job/claim.js';
import { activeDeadlineSecondsOf, completionModeKnown, hasTrackingFinalizer, managedElsewhere } from './job/job-spec.js';
import { JobPodControl, PODS } from './job/pod-control.js';
import { isJobFinished, type JobStatus } from './job/status.js';
import { JobSync } from './job/sync.js';
import { FinalizerExpectations } from './job/tracking.js';

export const JOBS: ResourceRef = { group: 'batch', version: 'v1', resource: 'jobs' };
export const DEFAULT_JOB_SYNCS = 5;

export interface JobControllerOptions {
  /** Delay before the first replacement of a failed pod; doubles per further failure. @default 10 s */
  podFailureBackoffMs?: number;
  /** Cap of that delay. @default 6 min */
  maxPodFailureBackoffMs?: number;
  now?: () => number;
}

function rv(o: KubeObject | undefined): bigint {
  try { return BigInt(o?.metadata?.resourceVersion ?? '0'); } catch { return 0n; }
}

export class JobController implements Controller {
  readonly name = 'job';
  readonly expectations = new ControllerExpectations();
  private readonly finalizers = new FinalizerExpectations();
  private readonly backoff = new BackoffStore();
  /** Our latest status write per key, while the cache has not caught up with it. */
  private readonly written = new Map<string, KubeObject>();
  /** When each key's delayed resync is due (one timer per key and due time). */
  private readonly due = new Map<string, number>();
  private readonly now: () => number;
  private queue!: WorkQueue;
  private orphans!: WorkQueue;
  private jobs!: SharedIndexInformer;
  private pods!: SharedIndexInformer;
  private client!: RestClient;
  private log!: Logger;
  private events: EventRecorder = noopRecorder;
  private control!: JobPodControl;

  constructor(private readonly o: JobControllerOptions = {}) { this.now = o.now ?? Date.now; }

  async run(ctx: ControllerContext): Promise<void> {
    this.client = ctx.client;
    this.log = ctx.log;
    this.events = ctx.events?.('job-controller') ?? noopRecorder;
    this.control = new JobPodControl(ctx.client, this.events, ctx.log);
    this.queue = new WorkQueue({ name: 'job', log: ctx.log });
    this.orphans = new WorkQueue({ name: 'job_orphan_pod', log: ctx.log });
    this.jobs = ctx.informers.informerFor(JOBS);
    this.pods = ctx.informers.informerFor(PODS);
    this.jobs.addEventHandler({
      onAdd: (j) => this.queue.add(keyOf(j)),
      onUpdate: (old, cur) => this.updateJob(old, cur),
      onDelete: (x) => { const j = deletedObject(x); this.queue.add(keyOf(j)); this.releaseFinalizersOf(j); },
    });
    this.pods.addEventHandler({
      onAdd: (p) => this.addPod(p),
      onUpdate: (old, cur) => this.updatePod(old, cur),
      onDelete: (x) => this.deletePod(deletedObject(x), true),
    });
    ctx.informers.start(ctx.signal);
    const synced = await Promise.all([this.jobs.waitForSync(ctx.signal), this.pods.waitForSync(ctx.signal)]);
    if (!synced.every(Boolean)) return;
    const configured = (ctx.config as unknown as Record<string, unknown>).concurrentJobSyncs;
    const workers = typeof configured === 'number' && configured > 0 ? configured : DEFAULT_JOB_SYNCS;
    try {
      await Promise.all([
        this.queue.runWorkers(workers, (key) => this.sync(key), ctx.signal),
        this.orphans.runWorkers(1, (key) => this.syncOrphanPod(key), ctx.signal),
      ]);
    } finally {
      await this.events.flush();
    }
  }

  private requeueAfter(key: string, ms: number): void {
    const at = this.now() + Math.max(ms, 1);
    const pending = this.due.get(key);
    if (pending !== undefined && pending > this.now() && pending <= at) return;
    this.due.set(key, at);
    this.queue.addAfter(key, Math.max(ms, 1));
  }

  private ownerOf(pod: KubeObject): KubeObject | undefined {
    const ref = controllerRefOf(pod);
    if (!ref || ref.kind !== 'Job') return undefined;
    const job = this.jobs.indexer.get(pod.metadata?.namespace, ref.name);
    return job && job.metadata?.uid === ref.uid ? job : undefined;
  }

  private updateJob(old: KubeObject, cur: KubeObject): void {
    const key = keyOf(cur);
    this.queue.add(key);
    if (isJobFinished(cur)) this.releaseFinalizersOf(cur);
    const start = ((cur.status ?? {}) as JobStatus).startTime;
    const ads = activeDeadlineSecondsOf(cur);
    if (start && ads !== undefined && ads !== activeDeadlineSecondsOf(old)) this.requeueAfter(key, Date.parse(start) + ads * 1000 - this.now());
  }

  /** Queues the Job's pods that still hold the finalizer (the Job will not count them any more). */
  private releaseFinalizersOf(job: KubeObject): void {
    for (const p of this.pods.indexer.listNamespace(job.metadata?.namespace ?? '')) {
      if (controllerRefOf(p)?.uid === job.metadata?.uid && hasTrackingFinalizer(p)) this.orphans.add(keyOf(p));
    }
  }

  private matchingJobs(pod: KubeObject): KubeObject[] {
    return this.jobs.indexer.listNamespace(pod.metadata?.namespace ?? '').filter((j) => jobSelector(j)?.(pod.metadata?.labels) ?? false);
  }

  private addPod(pod: KubeObject): void {
    if (pod.metadata?.deletionTimestamp) { this.deletePod(pod, false); return; }
    if (controllerRefOf(pod)) {
      const job = this.ownerOf(pod);
      if (!job) { if (hasTrackingFinalizer(pod)) this.orphans.add(keyOf(pod)); return; }
      this.expectations.creationObserved(keyOf(job));
      this.queue.add(keyOf(job));
      return;
    }
    if (hasTrackingFinalizer(pod)) this.orphans.add(keyOf(pod));
    for (const j of this.matchingJobs(pod)) this.queue.add(keyOf(j));
  }

  private updatePod(old: KubeObject, cur: KubeObject): void {
    if (old.metadata?.resourceVersion === cur.metadata?.resourceVersion) return;
    if (cur.metadata?.deletionTimestamp) { this.deletePod(cur, false); return; }
    const uid = cur.metadata?.uid ?? '';
    const finalizerGone = !hasTrackingFinalizer(cur);
    const oldRef = controllerRefOf(old); const curRef = controllerRefOf(cur);
    const refChanged = JSON.stringify(oldRef ?? null) !== JSON.stringify(curRef ?? null);
    if (refChanged && oldRef) {
      const j = this.ownerOf(old);
      if (j) { if (finalizerGone) this.finalizers.observed(keyOf(j), uid); this.queue.add(keyOf(j)); }
    }
    if (curRef) {
      const j = this.ownerOf(cur);
      if (!j) { if (!finalizerGone) this.orphans.add(keyOf(cur)); return; }
      if (finalizerGone) this.finalizers.observed(keyOf(j), uid);
      this.queue.add(keyOf(j));
      return;
    }
    if (!finalizerGone) this.orphans.add(keyOf(cur));
    const labelsChanged = JSON.stringify(old.metadata?.labels ?? {}) !== JSON.stringify(cur.metadata?.labels ?? {});
    if (labelsChanged || refChanged) for (const j of this.matchingJobs(cur)) this.queue.add(keyOf(j));
  }

  /** `final`: the pod left the store (else it is being deleted). */
  private deletePod(pod: KubeObject, final: boolean): void {
    const job = controllerRefOf(pod) ? this.ownerOf(pod) : undefined;
    if (!job || isJobFinished(job)) {
      if (!final && hasTrackingFinalizer(pod)) this.orphans.add(keyOf(pod));
      return;
    }
    const key = keyOf(job);
    this.expectations.deletionObserved(key, keyOf(pod));
    if (final || !hasTrackingFinalizer(pod)) this.finalizers.observed(key, pod.metadata?.uid ?? '');
    this.queue.add(key);
  }

  /** The Job to sync: the cached one, or our own newer write of it while the cache lags. */
  private current(key: string): KubeObject | undefined {
    const cached = this.jobs.indexer.getByKey(key);
    const mine = this.written.get(key);
    if (cached && mine && mine.metadata?.uid === cached.metadata?.uid && rv(mine) > rv(cached)) return mine;
    this.written.delete(key);
    return cached;
  }

  /** One reconcile of `namespace/name`. Throws to be retried with backoff. */
  async sync(key: string): Promise<void> {
    const job = this.current(key);
    if (!job) {
      this.expectations.delete(key); this.finalizers.delete(key); this.backoff.remove(key); this.due.delete(key);
      return;
    }
    if (managedElsewhere(job)) return;
    if (isJobFinished(job)) { this.backoff.remove(key); this.due.delete(key); return; }
    if (!completionModeKnown(job)) {
      this.events.event(job, 'Warning', 'UnknownCompletionMode', 'Skipped Job sync because completion mode is unknown');
      return;
    }
    // Expectations first: a pod arriving after this check only defers the diff to the next sync.
    const satisfied = this.expectations.satisfied(key);
    const candidates = this.pods.indexer.listNamespace(splitKey(key).namespace ?? '');
    const pods = await claimJobPods(job, candidates, this.control, () => this.stillExists(job));
    await new JobSync({
      pods: this.control, events: this.events, expectations: this.expectations, finalizers: this.finalizers, backoff: this.backoff,
      backoffBaseMs: this.o.podFailureBackoffMs ?? 10_000, backoffMaxMs: this.o.maxPodFailureBackoffMs ?? 360_000,
      now: this.now, requeueAfter: (k, ms) => this.requeueAfter(k, ms),
      writeStatus: (j, status) => this.writeStatus(key, j, status),
    }, job, pods, satisfied).run();
  }

  private async writeStatus(key: string, job: KubeObject, status: JobStatus): Promise<KubeObject> {
    const updated = await this.client.update({ ...JOBS, namespace: job.metadata?.namespace ?? '' }, { ...job, status }, { subresource: 'status' });
    this.written.set(key, updated);
    return updated;
  }

  /** A fresh read before adopting: the Job must still exist, with the same uid, not being deleted. */
  private async stillExists(job: KubeObject): Promise<boolean> {
    try {
      const fresh = await this.client.get({ ...JOBS, namespace: job.metadata?.namespace ?? '' }, job.metadata?.name ?? '');
      return fresh.metadata?.uid === job.metadata?.uid && !fresh.metadata?.deletionTimestamp;
    } catch (e) {
      if (isApiError(e) && e.code === 404) return false;
      throw e;
    }
  }

  /** Removes the tracking finalizer from a pod no unfinished Job of ours controls. */
  async syncOrphanPod(key: string): Promise<void> {
    const pod = this.pods.indexer.getByKey(key);
    if (!pod || !hasTrackingFinalizer(pod)) return;
    const ref = controllerRefOf(pod);
    if (ref) {
      if (ref.kind !== 'Job' || ref.apiVersion !== 'batch/v1') return;
      const job = this.ownerOf(pod);
      if (job && (managedElsewhere(job) || !isJobFinished(job))) return;
    }
    const r = await this.control.removeFinalizer(pod);
    if (r.error) throw r.error;
  }
}

export function newJobController(): Controller {
  return new JobController();
}

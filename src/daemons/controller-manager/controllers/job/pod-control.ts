/**
 * The job controller's pod writes: creating pods from the Job's template (owned by the Job,
 * carrying the tracking finalizer, stamped with their completion index for Indexed Jobs),
 * deleting pods, removing the tracking finalizer, and adopting or releasing pods.
 *
 * Contract: every call reports how many writes took effect and the first error; it never
 * throws. "Gone already" (404, or 409 on a uid precondition) counts as done for deletions and
 * finalizer removals. Events name the pods as Kubernetes' pod control does.
 */
import type { Logger } from 'pino';
import { isApiError } from '../../../../api/meta/status.js';
import type { KubeObject } from '../../../../api/resources/types.js';
import { keyOf, type ResourceRef, type RestClient } from '../../deps.js';
import type { EventRecorder } from '../../events.js';
import { isPodReady, newControllerRef, podFromTemplate, slowStartBatch } from '../controller-utils.js';
import { stampIndex } from './indexes.js';
import { JOB_TRACKING_FINALIZER, hasTrackingFinalizer, jobSpec, type Dict } from './job-spec.js';

export const PODS: ResourceRef = { group: '', version: 'v1', resource: 'pods' };

export interface WriteResult { done: number; error?: unknown }

function gone(e: unknown): boolean { return isApiError(e) && (e.code === 404 || e.code === 409); }

export class JobPodControl {
  constructor(private readonly client: RestClient, private readonly events: EventRecorder, private readonly log: Logger) {}

  private podsIn(ns: string): ResourceRef { return { ...PODS, namespace: ns }; }

  /** The pod to create for the Job (and index, for Indexed Jobs). */
  podFor(job: KubeObject, index: number | undefined): KubeObject {
    const name = job.metadata?.name ?? '';
    const ref = newControllerRef(job, 'batch/v1', 'Job');
    const pod = podFromTemplate((jobSpec(job).template ?? {}) as Dict, job.metadata?.namespace ?? '', `${name}-`, ref);
    const meta = pod.metadata ?? {};
    if (!(meta.finalizers ?? []).includes(JOB_TRACKING_FINALIZER)) meta.finalizers = [...(meta.finalizers ?? []), JOB_TRACKING_FINALIZER];
    if (index !== undefined) stampIndex(pod, name, index);
    return pod;
  }

  /**
   * Creates `count` pods in slow-start batches (1, 2, 4 …), stopping after the first batch
   * with a failure; `indexes[i]` is the index of the i-th pod for Indexed Jobs.
   */
  async create(job: KubeObject, count: number, indexes?: readonly number[]): Promise<WriteResult> {
    const ns = job.metadata?.namespace ?? '';
    let next = 0;
    const res = await slowStartBatch(count, 1, async () => {
      const pod = this.podFor(job, indexes?.[next++]);
      try {
        const created = await this.client.create(this.podsIn(ns), pod);
        this.events.event(job, 'Normal', 'SuccessfulCreate', `Created pod: ${created.metadata?.name ?? ''}`);
      } catch (e) {
        this.events.event(job, 'Warning', 'FailedCreate', `Error creating: ${(e as Error).message}`);
        throw e;
      }
    });
    return { done: res.succeeded, ...(res.error ? { error: res.error } : {}) };
  }

  /**
   * Deletes pods concurrently. With `dropFinalizer` the tracking finalizer goes first, so the
   * pod leaves uncounted (scale-down, suspension); without it the pod waits to be counted.
   * `onNotDeleted` hears of every pod whose deletion did not happen.
   */
  async delete(job: KubeObject, pods: readonly KubeObject[], o: { dropFinalizer: boolean; onNotDeleted?: (pod: KubeObject) => void }): Promise<WriteResult & { ready: number }> {
    let done = 0; let ready = 0; let error: unknown;
    await Promise.all(pods.map(async (p) => {
      try {
        if (o.dropFinalizer) {
          const r = await this.removeFinalizer(p);
          if (r.error) throw r.error;
        }
        await this.client.delete(this.podsIn(p.metadata?.namespace ?? ''), p.metadata?.name ?? '', { preconditions: { uid: p.metadata?.uid ?? '' } });
        this.events.event(job, 'Normal', 'SuccessfulDelete', `Deleted pod: ${p.metadata?.name ?? ''}`);
      } catch (e) {
        if (!gone(e)) {
          o.onNotDeleted?.(p);
          this.events.event(job, 'Warning', 'FailedDelete', `Error deleting: ${(e as Error).message}`);
          error ??= e;
          return;
        }
      }
      done++;
      if (isPodReady(p)) ready++;
    }));
    return { done, ready, ...(error ? { error } : {}) };
  }

  /** Removes the tracking finalizer; `removed` says which pods no longer have it. */
  async removeFinalizers(pods: readonly KubeObject[]): Promise<{ removed: boolean[]; error?: unknown }> {
    const removed = pods.map(() => false);
    let error: unknown;
    await Promise.all(pods.map(async (p, i) => {
      const r = await this.removeFinalizer(p);
      if (r.error) error ??= r.error; else removed[i] = true;
    }));
    return { removed, ...(error ? { error } : {}) };
  }

  async removeFinalizer(pod: KubeObject): Promise<WriteResult> {
    if (!hasTrackingFinalizer(pod)) return { done: 1 };
    try {
      await this.client.patch(this.podsIn(pod.metadata?.namespace ?? ''), pod.metadata?.name ?? '', 'strategic', {
        metadata: { '$deleteFromPrimitiveList/finalizers': [JOB_TRACKING_FINALIZER] },
      });
      return { done: 1 };
    } catch (e) {
      if (isApiError(e) && e.code === 404) return { done: 1 };
      this.log.debug({ pod: keyOf(pod), err: (e as Error).message }, 'could not remove the job tracking finalizer');
      return { done: 0, error: e };
    }
  }

  /** Makes the Job the pod's controller and adds the tracking finalizer; undefined when the pod changed meanwhile. */
  async adopt(job: KubeObject, pod: KubeObject): Promise<KubeObject | undefined> {
    const finalizers = pod.metadata?.finalizers ?? [];
    const patch = { metadata: {
      ownerReferences: [...(pod.metadata?.ownerReferences ?? []), newControllerRef(job, 'batch/v1', 'Job')],
      finalizers: finalizers.includes(JOB_TRACKING_FINALIZER) ? finalizers : [...finalizers, JOB_TRACKING_FINALIZER],
      uid: pod.metadata?.uid, resourceVersion: pod.metadata?.resourceVersion,
    } };
    try {
      const res = await this.client.patch(this.podsIn(pod.metadata?.namespace ?? ''), pod.metadata?.name ?? '', 'merge', patch);
      this.log.info({ job: keyOf(job), pod: keyOf(pod) }, 'adopted pod');
      return res;
    } catch (e) {
      if (isApiError(e) && (e.code === 404 || e.code === 409 || e.code === 422)) return undefined;
      throw e;
    }
  }

  /** Drops the Job's owner reference and the tracking finalizer from a pod that stopped matching. */
  async release(job: KubeObject, pod: KubeObject): Promise<void> {
    const refs = (pod.metadata?.ownerReferences ?? []).filter((r) => r.uid !== job.metadata?.uid);
    const finalizers = (pod.metadata?.finalizers ?? []).filter((f) => f !== JOB_TRACKING_FINALIZER);
    const patch = { metadata: {
      ownerReferences: refs.length ? refs : null, finalizers: finalizers.length ? finalizers : null,
      uid: pod.metadata?.uid, resourceVersion: pod.metadata?.resourceVersion,
    } };
    try {
      await this.client.patch(this.podsIn(pod.metadata?.namespace ?? ''), pod.metadata?.name ?? '', 'merge', patch);
      this.log.info({ job: keyOf(job), pod: keyOf(pod) }, 'released pod');
    } catch (e) {
      if (isApiError(e) && (e.code === 404 || e.code === 409 || e.code === 422)) return;
      throw e;
    }
  }
}

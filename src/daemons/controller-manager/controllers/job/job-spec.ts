/**
 * Reading a Job's spec and its pods' state the way the job controller needs them: defaults the
 * API server may not have applied, the tracking finalizer, completion indexes, and which pods
 * count as active, terminating, succeeded or failed.
 *
 * Contract: pure functions over objects from the informer caches; nothing here mutates its input.
 */
import type { KubeObject } from '../../../../api/resources/types.js';
import { podPhase } from '../controller-utils.js';

/** Every pod the controller creates carries it until its outcome is counted in the Job's status. */
export const JOB_TRACKING_FINALIZER = 'batch.kubernetes.io/job-tracking';
/** Annotation and label holding an Indexed Job pod's completion index. */
export const COMPLETION_INDEX_KEY = 'batch.kubernetes.io/job-completion-index';
/** The only spec.managedBy value this controller acts on (absent means the same). */
export const JOB_CONTROLLER_MANAGER = 'kubernetes.io/job-controller';

export type Dict = Record<string, unknown>;

export function jobSpec(job: KubeObject): Dict { return (job.spec ?? {}) as Dict; }

function int(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? Math.trunc(v) : undefined;
}

export function parallelismOf(job: KubeObject): number { return Math.max(0, int(jobSpec(job).parallelism) ?? 1); }
/** undefined: a work-queue Job (done once any pod succeeded and the rest finished). */
export function completionsOf(job: KubeObject): number | undefined {
  const c = int(jobSpec(job).completions);
  return c === undefined ? undefined : Math.max(0, c);
}
export function backoffLimitOf(job: KubeObject): number { return int(jobSpec(job).backoffLimit) ?? 6; }
export function activeDeadlineSecondsOf(job: KubeObject): number | undefined { return int(jobSpec(job).activeDeadlineSeconds); }
export function isSuspended(job: KubeObject): boolean { return jobSpec(job).suspend === true; }
export function isIndexed(job: KubeObject): boolean { return jobSpec(job).completionMode === 'Indexed'; }
export function completionModeKnown(job: KubeObject): boolean {
  const m = jobSpec(job).completionMode;
  return m === undefined || m === null || m === 'NonIndexed' || m === 'Indexed';
}
export function managedElsewhere(job: KubeObject): boolean {
  const m = jobSpec(job).managedBy;
  return typeof m === 'string' && m !== '' && m !== JOB_CONTROLLER_MANAGER;
}
/** podReplacementPolicy Failed: a terminating pod is neither failed nor replaced until it has failed. */
export function onlyReplaceFailedPods(job: KubeObject): boolean { return jobSpec(job).podReplacementPolicy === 'Failed'; }
export function restartPolicyOf(job: KubeObject): string {
  const tpl = (jobSpec(job).template ?? {}) as Dict;
  return String(((tpl.spec ?? {}) as Dict).restartPolicy ?? '');
}

export function hasTrackingFinalizer(pod: KubeObject): boolean {
  return (pod.metadata?.finalizers ?? []).includes(JOB_TRACKING_FINALIZER);
}

export function isFinishedPod(pod: KubeObject): boolean {
  const p = podPhase(pod);
  return p === 'Succeeded' || p === 'Failed';
}

/** Being deleted but not finished yet (what status.terminating counts). */
export function isTerminatingPod(pod: KubeObject): boolean {
  return Boolean(pod.metadata?.deletionTimestamp) && !isFinishedPod(pod);
}

/**
 * Failed for the Job's accounting: phase Failed, or (unless only failed pods are replaced) being
 * deleted without having succeeded, so that pods removed before they could fail still count.
 */
export function countsAsFailed(pod: KubeObject, job: KubeObject): boolean {
  const p = podPhase(pod);
  if (p === 'Failed') return true;
  if (onlyReplaceFailedPods(job)) return false;
  return Boolean(pod.metadata?.deletionTimestamp) && p !== 'Succeeded';
}

/** The pod's completion index (from the annotation), or undefined when absent or malformed. */
export function completionIndexOf(pod: KubeObject): number | undefined {
  const v = pod.metadata?.annotations?.[COMPLETION_INDEX_KEY];
  if (v === undefined || !/^\d+$/.test(v)) return undefined;
  const n = Number(v);
  return Number.isSafeInteger(n) ? n : undefined;
}

/** For Indexed Jobs: the pod has an index below completions; every pod of other Jobs is valid. */
export function hasValidIndex(pod: KubeObject, job: KubeObject): boolean {
  if (!isIndexed(job)) return true;
  const ix = completionIndexOf(pod);
  return ix !== undefined && ix < (completionsOf(job) ?? 0);
}

/** restartPolicy OnFailure: container restarts of unfinished pods count against backoffLimit. */
export function pastBackoffLimitOnFailure(job: KubeObject, pods: readonly KubeObject[]): boolean {
  if (restartPolicyOf(job) !== 'OnFailure') return false;
  let restarts = 0;
  for (const p of pods) {
    const phase = podPhase(p);
    if (phase !== 'Running' && phase !== 'Pending') continue;
    const st = (p.status ?? {}) as Dict;
    for (const list of [st.initContainerStatuses, st.containerStatuses]) {
      for (const c of (Array.isArray(list) ? list : []) as Array<{ restartCount?: number }>) restarts += c.restartCount ?? 0;
    }
  }
  const limit = backoffLimitOf(job);
  return limit === 0 ? restarts > 0 : restarts >= limit;
}

/**
 * Counting finished pods exactly once, with the pods' tracking finalizer as the ledger:
 *  1. a finished pod that still has the finalizer gets its uid recorded in
 *     status.uncountedTerminatedPods (Indexed Jobs record succeeded indexes in
 *     status.completedIndexes instead), and that status is written;
 *  2. then the finalizer is removed from the pod;
 *  3. then a uid whose pod no longer has the finalizer (or is gone) moves from the uncounted
 *     lists into status.succeeded / status.failed.
 * A crash between any two steps repeats at most the step it interrupted, never a count. Pods
 * whose finalizer removal was requested but not yet seen in the cache are skipped throughout
 * (FinalizerExpectations), so a lagging pod watch cannot count them twice.
 */
import type { KubeObject } from '../../../../api/resources/types.js';
import { podPhase } from '../controller-utils.js';
import { countsAsFailed, completionIndexOf, hasTrackingFinalizer, hasValidIndex, isIndexed } from './job-spec.js';
import { hasIndex, type Interval } from './indexes.js';
import type { Finish, JobStatus } from './status.js';

/** At most this many uids are recorded per sync (keeps the status small; the rest wait a sync). */
export const MAX_UNCOUNTED_PODS = 500;

/** Uids of pods whose finalizer removal was sent but is not yet visible in the pod cache, per Job key. */
export class FinalizerExpectations {
  private readonly byKey = new Map<string, Set<string>>();
  expect(key: string, uids: readonly string[]): void {
    if (!uids.length) return;
    const s = this.byKey.get(key) ?? new Set<string>();
    for (const u of uids) s.add(u);
    this.byKey.set(key, s);
  }
  observed(key: string, uid: string): void {
    const s = this.byKey.get(key);
    if (!s) return;
    s.delete(uid);
    if (!s.size) this.byKey.delete(key);
  }
  expected(key: string): ReadonlySet<string> { return new Set(this.byKey.get(key) ?? []); }
  delete(key: string): void { this.byKey.delete(key); }
}

function uncounted(st: JobStatus): { succeeded: string[]; failed: string[] } {
  const u = (st.uncountedTerminatedPods ??= {});
  return { succeeded: (u.succeeded ??= []), failed: (u.failed ??= []) };
}

/** Pods that finished and are counted nowhere yet (not even as uncounted uids). */
export function newlyFinished(job: KubeObject, st: JobStatus, pods: readonly KubeObject[], expectedRm: ReadonlySet<string>): { succeeded: KubeObject[]; failed: KubeObject[] } {
  const u = uncounted(st);
  const fresh = (p: KubeObject, list: string[]): boolean => {
    const uid = p.metadata?.uid ?? '';
    return hasTrackingFinalizer(p) && !list.includes(uid) && !expectedRm.has(uid) && hasValidIndex(p, job);
  };
  return {
    succeeded: pods.filter((p) => podPhase(p) === 'Succeeded' && fresh(p, u.succeeded)),
    failed: pods.filter((p) => countsAsFailed(p, job) && fresh(p, u.failed)),
  };
}

/** Step 3: uids whose pods lost the finalizer move into the counters. Returns whether anything moved. */
export function countUncounted(st: JobStatus, withFinalizer: ReadonlySet<string>): boolean {
  const u = uncounted(st);
  const keepS = u.succeeded.filter((uid) => withFinalizer.has(uid));
  const keepF = u.failed.filter((uid) => withFinalizer.has(uid));
  const moved = u.succeeded.length - keepS.length + u.failed.length - keepF.length;
  st.succeeded = (st.succeeded ?? 0) + u.succeeded.length - keepS.length;
  st.failed = (st.failed ?? 0) + u.failed.length - keepF.length;
  st.uncountedTerminatedPods = { succeeded: keepS, failed: keepF };
  return moved > 0;
}

export interface FinishedPods {
  /** Pods whose finalizer may go once the status below is written. */
  removeFinalizer: KubeObject[];
  /** Indexed Jobs: indexes that succeeded since the last sync. */
  newSucceededIndexes: number[];
  /** The per-sync cap stopped the scan (the Job must not be declared finished yet). */
  capped: boolean;
}

/**
 * Step 1: records finished pods as uncounted uids in `st` and picks the pods whose finalizer
 * can be removed: finished ones, and every pod once the Job is finishing or being deleted
 * (unfinished pods of a failing Job count as failed).
 */
export function recordFinished(job: KubeObject, st: JobStatus, pods: readonly KubeObject[], expectedRm: ReadonlySet<string>, prevSucceeded: readonly Interval[], finish: Finish | undefined): FinishedPods {
  const u = uncounted(st);
  const indexed = isIndexed(job);
  const out: FinishedPods = { removeFinalizer: [], newSucceededIndexes: [], capped: false };
  const sorted = indexed ? [...pods].sort((a, b) => (completionIndexOf(a) ?? -1) - (completionIndexOf(b) ?? -1)) : pods;
  const jobGoing = Boolean(job.metadata?.deletionTimestamp) || finish !== undefined;
  for (const pod of sorted) {
    const uid = pod.metadata?.uid ?? '';
    if (!hasTrackingFinalizer(pod) || expectedRm.has(uid)) continue;
    const failed = countsAsFailed(pod, job);
    const succeeded = podPhase(pod) === 'Succeeded';
    if (!jobGoing && !succeeded && !failed) continue;
    out.removeFinalizer.push(pod);
    if (succeeded && !u.failed.includes(uid)) {
      if (indexed) {
        const ix = completionIndexOf(pod);
        if (ix !== undefined && hasValidIndex(pod, job) && !hasIndex(prevSucceeded, ix) && !out.newSucceededIndexes.includes(ix)) out.newSucceededIndexes.push(ix);
      } else if (!u.succeeded.includes(uid)) {
        u.succeeded.push(uid);
      }
    } else if ((failed || (finish !== undefined && !finish.success)) && !u.failed.includes(uid) && hasValidIndex(pod, job)) {
      u.failed.push(uid);
    }
    if (out.newSucceededIndexes.length + u.succeeded.length + u.failed.length >= MAX_UNCOUNTED_PODS) {
      out.capped = true;
      break;
    }
  }
  return out;
}

/** Uids of the pods that still carry the finalizer and are not expected to lose it. */
export function uidsWithFinalizer(pods: readonly KubeObject[], expectedRm: ReadonlySet<string>): Set<string> {
  const s = new Set<string>();
  for (const p of pods) {
    const uid = p.metadata?.uid ?? '';
    if (hasTrackingFinalizer(p) && !expectedRm.has(uid)) s.add(uid);
  }
  return s;
}

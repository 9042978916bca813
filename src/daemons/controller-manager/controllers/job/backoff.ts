/**
 * The delay before a Job replaces failed pods: base × 2^(n−1) after n failures in a row (no
 * success since), capped, counted from the last failure. Kubernetes documents 10 s doubling up
 * to six minutes; both are options of the controller so tests can shrink them.
 *
 * Contract: `next` is pure (it proposes a record from the pods newly counted in this sync);
 * `commit` stores it only after the Job's status recorded those pods, so a failed status write
 * never counts a failure twice. Records live in memory: a restarted controller starts each
 * Job's backoff afresh (as Kubernetes' does).
 */
import type { KubeObject } from '../../../../api/resources/types.js';
import { podPhase, podStatus, readyCondition } from '../controller-utils.js';

export interface BackoffRecord { key: string; failuresAfterLastSuccess: number; lastFailureMs?: number }

function ms(s: unknown): number | undefined {
  const t = typeof s === 'string' ? Date.parse(s) : NaN;
  return Number.isNaN(t) ? undefined : t;
}

/**
 * When the pod finished: the last container termination (when all containers terminated), else
 * when Ready turned False, else its deletion time less its grace period, else its creation.
 */
export function podFinishedAt(pod: KubeObject): number {
  const statuses = podStatus(pod).containerStatuses;
  if (Array.isArray(statuses) && statuses.length) {
    let latest: number | undefined;
    for (const c of statuses as Array<{ state?: { terminated?: { finishedAt?: string } } }>) {
      const t = ms(c.state?.terminated?.finishedAt);
      if (t === undefined) { latest = undefined; break; }
      latest = Math.max(latest ?? t, t);
    }
    if (latest !== undefined) return latest;
  }
  const ready = readyCondition(pod);
  const readyFalse = ready?.status === 'False' ? ms(ready.lastTransitionTime) : undefined;
  if (readyFalse !== undefined) return readyFalse;
  const deleted = ms(pod.metadata?.deletionTimestamp);
  if (deleted !== undefined) return deleted - (pod.metadata?.deletionGracePeriodSeconds ?? 0) * 1000;
  return ms(pod.metadata?.creationTimestamp) ?? 0;
}

export class BackoffStore {
  private readonly records = new Map<string, BackoffRecord>();

  /** The record after this sync's newly counted pods: a success resets, later failures add up. */
  next(key: string, newSucceeded: readonly KubeObject[], newFailed: readonly KubeObject[]): BackoffRecord {
    const old = this.records.get(key);
    const rec: BackoffRecord = { key, failuresAfterLastSuccess: old?.failuresAfterLastSuccess ?? 0, ...(old?.lastFailureMs !== undefined ? { lastFailureMs: old.lastFailureMs } : {}) };
    const failedAt = newFailed.map(podFinishedAt).sort((a, b) => a - b);
    if (newSucceeded.length === 0) {
      if (failedAt.length === 0) return rec;
      return { key, failuresAfterLastSuccess: rec.failuresAfterLastSuccess + failedAt.length, lastFailureMs: failedAt[failedAt.length - 1] };
    }
    const lastSuccess = Math.max(...newSucceeded.map(podFinishedAt));
    const after = failedAt.filter((t) => t > lastSuccess);
    return after.length ? { key, failuresAfterLastSuccess: after.length, lastFailureMs: after[after.length - 1] } : { key, failuresAfterLastSuccess: 0 };
  }

  commit(rec: BackoffRecord): void { this.records.set(rec.key, rec); }
  remove(key: string): void { this.records.delete(key); }
}

/** How long to wait before creating replacements; 0 when creation may go ahead. */
export function remainingBackoffMs(rec: BackoffRecord, baseMs: number, maxMs: number, now: number): number {
  if (rec.failuresAfterLastSuccess <= 0 || rec.lastFailureMs === undefined) return 0;
  const delay = Math.min(maxMs, baseMs * 2 ** Math.min(rec.failuresAfterLastSuccess - 1, 30));
  return Math.max(0, delay - (now - rec.lastFailureMs));
}

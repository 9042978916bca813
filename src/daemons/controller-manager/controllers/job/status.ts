/**
 * The Job status the controller writes: its shape, conditions, and the comparison that decides
 * whether a write is needed.
 *
 * Finishing is two-step, as Kubernetes 1.31+ shows it: an interim condition first
 * (SuccessCriteriaMet or FailureTarget, written while pods are still being terminated and
 * counted), then the terminal one (Complete with completionTime, or Failed) once no pod is
 * uncounted or terminating. A Job with Complete or Failed True is never synced again.
 */
import type { KubeObject } from '../../../../api/resources/types.js';
import { canonicalJson } from '../controller-utils.js';
import { metaTime } from '../../../../api/meta/time.js';

export interface JobCondition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastProbeTime?: string;
  lastTransitionTime?: string;
}

export interface UncountedTerminatedPods { succeeded?: string[]; failed?: string[] }

export interface JobStatus {
  conditions?: JobCondition[];
  startTime?: string;
  completionTime?: string;
  active?: number;
  succeeded?: number;
  failed?: number;
  terminating?: number;
  ready?: number;
  completedIndexes?: string;
  failedIndexes?: string;
  uncountedTerminatedPods?: UncountedTerminatedPods;
}

/** Why and how a Job finishes (decided during a sync, enacted once its pods are accounted for). */
export interface Finish { success: boolean; reason: string; message: string }

export const BACKOFF_LIMIT_EXCEEDED: Finish = { success: false, reason: 'BackoffLimitExceeded', message: 'Job has reached the specified backoff limit' };
export const DEADLINE_EXCEEDED: Finish = { success: false, reason: 'DeadlineExceeded', message: 'Job was active longer than specified deadline' };
export const COMPLETIONS_REACHED: Finish = { success: true, reason: 'CompletionsReached', message: 'Reached expected number of succeeded pods' };


/** A private, mutable copy of the Job's status. */
export function statusCopy(job: KubeObject): JobStatus {
  return structuredClone((job.status ?? {}) as JobStatus);
}

export function findCondition(st: JobStatus, type: string): JobCondition | undefined {
  return st.conditions?.find((c) => c.type === type);
}

function isTrue(st: JobStatus, type: string): boolean { return findCondition(st, type)?.status === 'True'; }

export function isJobFinished(job: KubeObject): boolean {
  const st = (job.status ?? {}) as JobStatus;
  return isTrue(st, 'Complete') || isTrue(st, 'Failed');
}

/**
 * Sets condition `type` (adding it, or replacing it when status, reason or message differ);
 * a missing condition is not added as False. Returns whether the list changed.
 */
export function ensureCondition(st: JobStatus, type: string, status: string, reason: string, message: string, now: number): boolean {
  const cond: JobCondition = { type, status, reason, message, lastProbeTime: metaTime(now), lastTransitionTime: metaTime(now) };
  const list = st.conditions ?? [];
  const i = list.findIndex((c) => c.type === type);
  if (i >= 0) {
    const c = list[i];
    if (c.status === status && (c.reason ?? '') === reason && (c.message ?? '') === message) return false;
    list[i] = cond;
    st.conditions = list;
    return true;
  }
  if (status === 'False') return false;
  st.conditions = [...list, cond];
  return true;
}

/** The finish an earlier sync already recorded with an interim condition, if any. */
export function recordedFinish(st: JobStatus): Finish | undefined {
  const met = findCondition(st, 'SuccessCriteriaMet');
  if (met?.status === 'True') return { success: true, reason: met.reason ?? '', message: met.message ?? '' };
  const target = findCondition(st, 'FailureTarget');
  if (target?.status === 'True') return { success: false, reason: target.reason ?? '', message: target.message ?? '' };
  return undefined;
}

/** Adds the interim condition of a finish (idempotent). */
export function markFinishing(st: JobStatus, f: Finish, now: number): boolean {
  return ensureCondition(st, f.success ? 'SuccessCriteriaMet' : 'FailureTarget', 'True', f.reason, f.message, now);
}

/** Adds the terminal condition (and completionTime for success). */
export function markFinished(st: JobStatus, f: Finish, now: number): void {
  ensureCondition(st, f.success ? 'Complete' : 'Failed', 'True', f.reason, f.message, now);
  if (f.success) st.completionTime = metaTime(now);
}

/** Drops what the wire drops (zero counts, empty strings and lists) so round-tripped statuses compare equal. */
function normalized(v: unknown): unknown {
  if (Array.isArray(v)) return v.length ? v.map(normalized) : undefined;
  if (v && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      const n = normalized(x);
      if (n !== undefined) out[k] = n;
    }
    return Object.keys(out).length ? out : undefined;
  }
  if (v === 0 || v === '' || v === null) return undefined;
  return v;
}

export function sameStatus(a: unknown, b: unknown): boolean {
  return canonicalJson(normalized(a)) === canonicalJson(normalized(b));
}

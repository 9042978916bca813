/**
 * PodDisruptionBudget arithmetic, as pure functions on plain objects (the disruption controller
 * feeds them from its caches; tests call them directly).
 *
 * - Pods: those of the budget's namespace its spec.selector matches (policy/v1: `{}` matches
 *   all, a missing selector none).
 * - Disrupted pods: status.disruptedPods (pod name → time an eviction charged the budget) minus
 *   entries whose pod is gone, already being deleted, or older than DELETION_TIMEOUT_MS (the
 *   eviction was accepted but the pod never went).
 * - currentHealthy: matched pods not being deleted, not disrupted, with condition Ready True.
 * - expectedPods / desiredHealthy: integer minAvailable → the matched pod count / minAvailable;
 *   percentage minAvailable → the controllers' scale / ceil(pct × scale); maxUnavailable →
 *   the scale / scale − maxUnavailable (a percentage rounded up), not below 0. Neither field
 *   set → 0 / 0, as Kubernetes (policy/v1 has no default), which allows no disruption.
 * - disruptionsAllowed: currentHealthy − desiredHealthy, but 0 when negative or when
 *   expectedPods is 0 (a budget whose first pods just appeared is safe before it is recounted).
 */
import { labelSelectorFromObject, type LabelSelectorObject } from '../../../../api/meta/label-selector.js';
import type { KubeObject } from '../../../../api/resources/types.js';
import { isPodReady } from '../controller-utils.js';
import { scaledValue, type IntOrString } from '../deployment/util.js';

/** How long an eviction's entry in status.disruptedPods keeps its pod out of the count. */
export const DELETION_TIMEOUT_MS = 2 * 60 * 1000;

export const DISRUPTION_ALLOWED = 'DisruptionAllowed';
export const REASON_SUFFICIENT = 'SufficientPods';
export const REASON_INSUFFICIENT = 'InsufficientPods';
export const REASON_SYNC_FAILED = 'SyncFailed';

type Dict = Record<string, unknown>;

export interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
  observedGeneration?: number;
}

/** policy/v1 PodDisruptionBudgetStatus, as far as this controller reads and writes it. */
export interface BudgetStatus {
  observedGeneration?: number;
  disruptionsAllowed?: number;
  currentHealthy?: number;
  desiredHealthy?: number;
  expectedPods?: number;
  disruptedPods?: Record<string, string>;
  conditions?: Condition[];
  [more: string]: unknown;
}

export interface Counts {
  currentHealthy: number;
  desiredHealthy: number;
  expectedPods: number;
  /** The entries still in force (written only when not empty). */
  disruptedPods: Record<string, string>;
}

const specOf = (pdb: KubeObject): Dict => (pdb.spec ?? {}) as Dict;
export const statusOf = (pdb: KubeObject): BudgetStatus => (pdb.status ?? {}) as BudgetStatus;
const set = (v: unknown): boolean => v !== undefined && v !== null;

/** The pods (of the budget's namespace) its selector matches; throws a 400 ApiError for a bad selector. */
export function selectedPods(pdb: KubeObject, namespacePods: readonly KubeObject[]): KubeObject[] {
  const sel = labelSelectorFromObject(specOf(pdb).selector as LabelSelectorObject | null | undefined);
  return namespacePods.filter((p) => sel.matches(p.metadata?.labels));
}

/** True when expectedPods is the scale of the pods' controllers (maxUnavailable, or minAvailable as a percentage). */
export function usesScale(pdb: KubeObject): boolean {
  const s = specOf(pdb);
  return set(s.maxUnavailable) || typeof s.minAvailable === 'string';
}

/**
 * expectedPods and desiredHealthy. `scale` is the summed scale of the matched pods' controllers,
 * needed only when usesScale(pdb). Throws on a value that is neither an integer nor a percentage.
 */
export function desiredHealth(pdb: KubeObject, matched: number, scale: number): { expectedPods: number; desiredHealthy: number } {
  const s = specOf(pdb);
  if (set(s.maxUnavailable)) {
    const unavailable = scaledValue(s.maxUnavailable as IntOrString, scale, true);
    return { expectedPods: scale, desiredHealthy: Math.max(0, scale - unavailable) };
  }
  if (typeof s.minAvailable === 'number') return { expectedPods: matched, desiredHealthy: s.minAvailable };
  if (typeof s.minAvailable === 'string') return { expectedPods: scale, desiredHealthy: scaledValue(s.minAvailable, scale, true) };
  return { expectedPods: 0, desiredHealthy: 0 };
}

/**
 * The disruptedPods entries still in force at `now`, the pods whose entry expired (the eviction
 * did not delete them), and when the earliest kept entry expires (the budget's next recount).
 */
export function liveDisruptions(pdb: KubeObject, pods: readonly KubeObject[], now: number):
  { kept: Record<string, string>; expired: KubeObject[]; recheckAt?: number } {
  const recorded = statusOf(pdb).disruptedPods ?? {};
  const kept: Record<string, string> = {};
  const expired: KubeObject[] = [];
  let recheckAt: number | undefined;
  for (const pod of pods) {
    const name = pod.metadata?.name ?? '';
    const at = recorded[name];
    if (at === undefined || pod.metadata?.deletionTimestamp) continue;
    const until = Date.parse(at) + DELETION_TIMEOUT_MS;
    if (!(until > now)) { expired.push(pod); continue; }
    kept[name] = at;
    if (recheckAt === undefined || until < recheckAt) recheckAt = until;
  }
  return recheckAt === undefined ? { kept, expired } : { kept, expired, recheckAt };
}

/** Pods counting towards the budget: not being deleted, not disrupted, Ready. */
export function countHealthy(pods: readonly KubeObject[], disrupted: Readonly<Record<string, string>>): number {
  return pods.filter((p) => !p.metadata?.deletionTimestamp && disrupted[p.metadata?.name ?? ''] === undefined && isPodReady(p)).length;
}

export function disruptionsAllowed(c: Counts): number {
  return c.expectedPods <= 0 ? 0 : Math.max(0, c.currentHealthy - c.desiredHealthy);
}

/** Sets the condition of `next.type`, keeping lastTransitionTime while the status stays the same. */
export function setCondition(conditions: readonly Condition[] | undefined, next: Omit<Condition, 'lastTransitionTime'>, now: string): Condition[] {
  const out = [...(conditions ?? [])];
  const i = out.findIndex((c) => c.type === next.type);
  const prev = i >= 0 ? out[i] : undefined;
  const merged: Condition = {
    ...next,
    lastTransitionTime: prev && prev.status === next.status && prev.lastTransitionTime ? prev.lastTransitionTime : now,
  };
  if (i >= 0) out[i] = merged; else out.push(merged);
  return out;
}

function generationOf(pdb: KubeObject): number { return pdb.metadata?.generation ?? 0; }

function withGeneration(c: Omit<Condition, 'lastTransitionTime'>, gen: number | undefined): Omit<Condition, 'lastTransitionTime'> {
  return gen ? { ...c, observedGeneration: gen } : c;
}

/** The status to write for these counts (other status fields and conditions are kept). */
export function budgetStatus(pdb: KubeObject, c: Counts, now: string): BudgetStatus {
  const old = statusOf(pdb);
  const gen = generationOf(pdb);
  const allowed = disruptionsAllowed(c);
  const cond = allowed > 0
    ? { type: DISRUPTION_ALLOWED, status: 'True', reason: REASON_SUFFICIENT, message: '' }
    : { type: DISRUPTION_ALLOWED, status: 'False', reason: REASON_INSUFFICIENT, message: '' };
  const next: BudgetStatus = {
    ...old,
    observedGeneration: gen,
    disruptionsAllowed: allowed,
    currentHealthy: c.currentHealthy,
    desiredHealthy: c.desiredHealthy,
    expectedPods: c.expectedPods,
    conditions: setCondition(old.conditions, withGeneration(cond, gen), now),
  };
  if (Object.keys(c.disruptedPods).length > 0) next.disruptedPods = { ...c.disruptedPods };
  else delete next.disruptedPods;
  return next;
}

/** When the budget cannot be computed: nothing may be disrupted, and the condition says why. */
export function failSafeStatus(pdb: KubeObject, message: string, now: string): BudgetStatus {
  const old = statusOf(pdb);
  const cond = { type: DISRUPTION_ALLOWED, status: 'False', reason: REASON_SYNC_FAILED, message };
  return { ...old, disruptionsAllowed: 0, conditions: setCondition(old.conditions, withGeneration(cond, old.observedGeneration), now) };
}

function sameMap(a: Readonly<Record<string, string>> | undefined, b: Readonly<Record<string, string>> | undefined): boolean {
  const ka = Object.keys(a ?? {}), kb = Object.keys(b ?? {});
  return ka.length === kb.length && ka.every((k) => (b ?? {})[k] === (a ?? {})[k]);
}

/**
 * Whether writing `next` over `current` would change what the budget says. Compared field by
 * field (absent = 0 / empty) rather than as JSON, so that a codec's rendering of empty values
 * never makes a write look necessary forever.
 */
export function sameStatus(current: BudgetStatus, next: BudgetStatus): boolean {
  const n = (v: number | undefined): number => v ?? 0;
  if (n(current.observedGeneration) !== n(next.observedGeneration) || n(current.disruptionsAllowed) !== n(next.disruptionsAllowed)
    || n(current.currentHealthy) !== n(next.currentHealthy) || n(current.desiredHealthy) !== n(next.desiredHealthy)
    || n(current.expectedPods) !== n(next.expectedPods) || !sameMap(current.disruptedPods, next.disruptedPods)) return false;
  const want = next.conditions?.find((c) => c.type === DISRUPTION_ALLOWED);
  const have = current.conditions?.find((c) => c.type === DISRUPTION_ALLOWED);
  if (!want) return true;
  return !!have && have.status === want.status && (have.reason ?? '') === (want.reason ?? '')
    && (have.message ?? '') === (want.message ?? '') && n(have.observedGeneration) === n(want.observedGeneration);
}

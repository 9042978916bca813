/**
 * Shared pieces of the workload controllers: expectations, pod state, deletion ranking and
 * owner references (adoption and release).
 */
import type { KubeObject, OwnerReference } from '../../../api/resources/types.js';

/** How long an unmet expectation blocks syncs before we assume the watch lost events. */
export const EXPECTATIONS_TIMEOUT_MS = 5 * 60 * 1000;

interface Expectation { add: number; del: Set<string>; delCount: number; at: number }

/**
 * Creations and deletions a controller has asked for but not yet seen in its informer.
 * While a key has unmet expectations its controller must not compute a new diff (a slow watch
 * would otherwise make it create or delete twice).
 *
 * Contract: `expect*` is called before the writes; every failed write lowers the expectation
 * (`creationObserved` / `deletionObserved`) itself. Deletions are tracked by pod key, so a
 * delete event observed twice (update with deletionTimestamp, then delete) counts once.
 */
export class ControllerExpectations {
  private readonly items = new Map<string, Expectation>();
  constructor(private readonly now: () => number = Date.now) {}

  expectCreations(key: string, n: number): void {
    this.items.set(key, { add: n, del: new Set(), delCount: 0, at: this.now() });
  }

  expectDeletions(key: string, podKeys: readonly string[]): void {
    this.items.set(key, { add: 0, del: new Set(podKeys), delCount: podKeys.length, at: this.now() });
  }

  /** Creations and deletions asked for together (replacing any earlier record). */
  expect(key: string, adds: number, podKeys: readonly string[]): void {
    this.items.set(key, { add: adds, del: new Set(podKeys), delCount: podKeys.length, at: this.now() });
  }

  creationObserved(key: string): void {
    const e = this.items.get(key);
    if (e && e.add > 0) e.add--;
  }

  deletionObserved(key: string, podKey: string): void {
    const e = this.items.get(key);
    if (e && e.del.delete(podKey)) e.delCount--;
  }

  /** True when the controller may sync: nothing pending, or the record has expired. */
  satisfied(key: string): boolean {
    const e = this.items.get(key);
    if (!e) return true;
    if (e.add <= 0 && e.delCount <= 0) return true;
    return this.now() - e.at > EXPECTATIONS_TIMEOUT_MS;
  }

  pending(key: string): { add: number; del: number } | undefined {
    const e = this.items.get(key);
    return e ? { add: e.add, del: e.delCount } : undefined;
  }

  delete(key: string): void { this.items.delete(key); }
}

type Dict = Record<string, unknown>;

export interface PodCondition { type: string; status: string; lastTransitionTime?: string }

export function podStatus(pod: KubeObject): Dict { return (pod.status ?? {}) as Dict; }
export function podSpec(pod: KubeObject): Dict { return (pod.spec ?? {}) as Dict; }

export function podPhase(pod: KubeObject): string { return String(podStatus(pod).phase ?? ''); }

/** Not finished and not being deleted. */
export function isPodActive(pod: KubeObject): boolean {
  const phase = podPhase(pod);
  return phase !== 'Succeeded' && phase !== 'Failed' && !pod.metadata?.deletionTimestamp;
}

export function readyCondition(pod: KubeObject): PodCondition | undefined {
  const conds = (podStatus(pod).conditions ?? []) as PodCondition[];
  return conds.find((c) => c.type === 'Ready');
}

export function isPodReady(pod: KubeObject): boolean {
  return readyCondition(pod)?.status === 'True';
}

/** Ready for at least minReadySeconds (judged from the Ready condition's transition time). */
export function isPodAvailable(pod: KubeObject, minReadySeconds: number, now: number): boolean {
  const c = readyCondition(pod);
  if (c?.status !== 'True') return false;
  if (minReadySeconds <= 0) return true;
  const since = c.lastTransitionTime ? Date.parse(c.lastTransitionTime) : NaN;
  return !Number.isNaN(since) && since + minReadySeconds * 1000 <= now;
}

function maxRestarts(pod: KubeObject): number {
  const cs = (podStatus(pod).containerStatuses ?? []) as Array<{ restartCount?: number }>;
  return cs.reduce((m, c) => Math.max(m, c.restartCount ?? 0), 0);
}

function phaseRank(pod: KubeObject): number {
  switch (podPhase(pod)) {
    case 'Pending': case '': return 0;
    case 'Unknown': return 1;
    case 'Running': return 2;
    default: return 3;
  }
}

function deletionCost(pod: KubeObject): number {
  const v = Number(pod.metadata?.annotations?.['controller.kubernetes.io/pod-deletion-cost'] ?? 0);
  return Number.isFinite(v) ? v : 0;
}

function time(s: string | null | undefined): number {
  const t = s ? Date.parse(s) : NaN;
  return Number.isNaN(t) ? 0 : t;
}

/**
 * Orders pods so that the ones best deleted first come first (Kubernetes' ActivePods order
 * with ranks): unscheduled before scheduled; Pending before Unknown before Running; not ready
 * before ready; more co-located siblings (`rank`) first; lower deletion cost first; ready for
 * less time first; more restarts first; newer first.
 */
export function compareForDeletion(a: KubeObject, b: KubeObject, rank: (p: KubeObject) => number = () => 0): number {
  const na = String(podSpec(a).nodeName ?? ''); const nb = String(podSpec(b).nodeName ?? '');
  if ((na === '') !== (nb === '')) return na === '' ? -1 : 1;
  const pa = phaseRank(a); const pb = phaseRank(b);
  if (pa !== pb) return pa - pb;
  const ra = isPodReady(a); const rb = isPodReady(b);
  if (ra !== rb) return ra ? 1 : -1;
  const ka = rank(a); const kb = rank(b);
  if (ka !== kb) return kb - ka;
  const ca = deletionCost(a); const cb = deletionCost(b);
  if (ca !== cb) return ca - cb;
  if (ra && rb) {
    const ta = time(readyCondition(a)?.lastTransitionTime); const tb = time(readyCondition(b)?.lastTransitionTime);
    if (ta !== tb) return tb - ta;
  }
  const xa = maxRestarts(a); const xb = maxRestarts(b);
  if (xa !== xb) return xb - xa;
  const ga = time(a.metadata?.creationTimestamp); const gb = time(b.metadata?.creationTimestamp);
  if (ga !== gb) return gb - ga;
  return (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? '');
}

/**
 * The `diff` pods to delete: ranked by how many active pods of `related` share their node
 * (spreading the survivors), then by compareForDeletion.
 */
export function podsToDelete(candidates: readonly KubeObject[], related: readonly KubeObject[], diff: number): KubeObject[] {
  if (diff >= candidates.length) return [...candidates];
  const perNode = new Map<string, number>();
  for (const p of related) {
    const node = String(podSpec(p).nodeName ?? '');
    if (node && isPodActive(p)) perNode.set(node, (perNode.get(node) ?? 0) + 1);
  }
  const rank = (p: KubeObject): number => {
    const node = String(podSpec(p).nodeName ?? '');
    return node ? perNode.get(node) ?? 0 : 0;
  };
  return [...candidates].sort((a, b) => compareForDeletion(a, b, rank)).slice(0, diff);
}

export function controllerRefOf(obj: KubeObject): OwnerReference | undefined {
  return obj.metadata?.ownerReferences?.find((r) => r.controller === true);
}

export function newControllerRef(owner: KubeObject, apiVersion: string, kind: string): OwnerReference {
  return { apiVersion, kind, name: owner.metadata?.name ?? '', uid: owner.metadata?.uid ?? '', controller: true, blockOwnerDeletion: true };
}

/** Slow start: creates in batches 1, 2, 4 ... stopping at the first batch with a failure. */
export async function slowStartBatch(count: number, initialBatch: number, fn: () => Promise<void>): Promise<{ succeeded: number; error?: unknown }> {
  let remaining = count;
  let succeeded = 0;
  for (let batch = Math.min(remaining, initialBatch); batch > 0; batch = Math.min(2 * batch, remaining)) {
    const results = await Promise.allSettled(Array.from({ length: batch }, () => fn()));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    succeeded += results.filter((r) => r.status === 'fulfilled').length;
    if (failed) return { succeeded, error: failed.reason };
    remaining -= batch;
  }
  return { succeeded };
}

/** The pod template's labels/annotations/spec turned into a pod owned by `ref`. */
export function podFromTemplate(template: Dict, namespace: string, generateName: string, ref: OwnerReference): KubeObject {
  const meta = (template.metadata ?? {}) as Dict;
  const metadata: Record<string, unknown> = { generateName, namespace, ownerReferences: [ref] };
  if (meta.labels) metadata.labels = { ...(meta.labels as Dict) };
  if (meta.annotations) metadata.annotations = { ...(meta.annotations as Dict) };
  if (meta.finalizers) metadata.finalizers = [...(meta.finalizers as string[])];
  return { apiVersion: 'v1', kind: 'Pod', metadata, spec: structuredClone(template.spec ?? {}) };
}

/** Stable JSON: sorted keys, nulls dropped (so defaulted and round-tripped objects compare equal). */
export function canonicalJson(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (typeof v === 'object') {
    const entries = Object.entries(v as Dict).filter(([, x]) => x !== null && x !== undefined).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${canonicalJson(x)}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

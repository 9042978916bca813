/**
 * A DaemonSet's status counts, computed from the nodes and the pods per node:
 * desired = nodes that should run the pod; current / misscheduled = nodes with a pod that
 * should / should not have one; ready, available and updated judge the oldest pod of each
 * desired node; unavailable = desired − available.
 *
 * Contract: pure; `sameStatus` ignores fields the wire drops (zeros), so a status that did not
 * change is never rewritten.
 */
import type { KubeObject } from '../../../../api/resources/types.js';
import { canonicalJson, isPodAvailable, isPodReady } from '../controller-utils.js';
import { hashOf, oldestFirst, type NodeState } from './placement.js';

export interface DaemonSetStatus {
  currentNumberScheduled: number;
  numberMisscheduled: number;
  desiredNumberScheduled: number;
  numberReady: number;
  observedGeneration?: number;
  updatedNumberScheduled?: number;
  numberAvailable?: number;
  numberUnavailable?: number;
  collisionCount?: number;
  conditions?: unknown[];
}

export interface StatusInput {
  ds: KubeObject;
  nodes: readonly NodeState[];
  byNode: ReadonlyMap<string, KubeObject[]>;
  hash: string;
  minReadySeconds: number;
  now: number;
}

export function computeStatus(i: StatusInput): DaemonSetStatus {
  const old = (i.ds.status ?? {}) as DaemonSetStatus;
  let desired = 0; let current = 0; let mis = 0; let ready = 0; let available = 0; let updated = 0;
  for (const { node, verdict } of i.nodes) {
    const pods = i.byNode.get(node.metadata?.name ?? '') ?? [];
    if (!verdict.shouldRun) { if (pods.length) mis++; continue; }
    desired++;
    if (!pods.length) continue;
    current++;
    const pod = [...pods].sort(oldestFirst)[0] as KubeObject;
    if (isPodReady(pod)) {
      ready++;
      if (isPodAvailable(pod, i.minReadySeconds, i.now)) available++;
    }
    if (hashOf(pod) === i.hash) updated++;
  }
  const st: DaemonSetStatus = {
    currentNumberScheduled: current, numberMisscheduled: mis, desiredNumberScheduled: desired, numberReady: ready,
    observedGeneration: i.ds.metadata?.generation ?? 0, updatedNumberScheduled: updated,
    numberAvailable: available, numberUnavailable: desired - available,
  };
  if (old.collisionCount !== undefined) st.collisionCount = old.collisionCount;
  if (old.conditions !== undefined) st.conditions = old.conditions;
  return st;
}

function normalized(s: DaemonSetStatus): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(s)) if (v !== 0 && v !== undefined && v !== null) out[k] = v;
  return out;
}

export function sameStatus(a: DaemonSetStatus, b: DaemonSetStatus): boolean {
  return canonicalJson(normalized(a)) === canonicalJson(normalized(b));
}

/** Some desired node has a ready pod that is not yet available: when to look again. */
export function nextAvailableCheckMs(i: StatusInput): number | undefined {
  if (i.minReadySeconds <= 0) return undefined;
  let soonest: number | undefined;
  for (const { node, verdict } of i.nodes) {
    if (!verdict.shouldRun) continue;
    for (const p of i.byNode.get(node.metadata?.name ?? '') ?? []) {
      if (!isPodReady(p) || isPodAvailable(p, i.minReadySeconds, i.now)) continue;
      const since = Date.parse(((p.status as { conditions?: Array<{ type: string; lastTransitionTime?: string }> } | undefined)?.conditions ?? []).find((c) => c.type === 'Ready')?.lastTransitionTime ?? '');
      const due = Number.isNaN(since) ? i.minReadySeconds * 1000 : since + i.minReadySeconds * 1000 - i.now;
      soonest = Math.min(soonest ?? due, Math.max(due, 1));
    }
  }
  return soonest;
}

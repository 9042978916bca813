/**
 * The RollingUpdate step of a DaemonSet sync, as pure logic over the pods per node.
 *
 * Without surge: old pods are deleted (the manage step then recreates them from the current
 * template) while at most maxUnavailable nodes lack an available pod; old pods that are not
 * available anyway are replaced at once. With maxSurge > 0: a new pod is created next to the
 * old one on at most maxSurge nodes at a time, and the old pod goes once the new one is
 * available (the manage step's surge rule).
 *
 * Both fenceposts are scaled from desiredNumberScheduled rounding up; both zero means
 * maxUnavailable 1 so a rollout can always move.
 *
 * Contract: pure; only nodes in `nodes` are considered (the manage step owns the others).
 */
import type { KubeObject } from '../../../../api/resources/types.js';
import { isPodAvailable } from '../controller-utils.js';
import { hashOf, type NodeState } from './placement.js';

type Dict = Record<string, unknown>;
type IntOrPercent = number | string | undefined | null;

function scaled(v: IntOrPercent, total: number): number {
  if (v === undefined || v === null) return 0;
  if (typeof v === 'number') return v;
  const m = /^(\d+)%$/.exec(v);
  if (m) return Math.ceil((Number(m[1]) * total) / 100);
  return /^\d+$/.test(v) ? Number(v) : 0;
}

export function strategyType(ds: KubeObject): string {
  return String((((ds.spec ?? {}) as Dict).updateStrategy as Dict | undefined)?.type ?? 'RollingUpdate');
}

/** maxSurge and maxUnavailable as node counts for `desired` nodes (0/0 becomes 0/1). */
export function fenceposts(ds: KubeObject, desired: number): { maxSurge: number; maxUnavailable: number } {
  if (strategyType(ds) !== 'RollingUpdate') return { maxSurge: 0, maxUnavailable: 0 };
  const ru = ((((ds.spec ?? {}) as Dict).updateStrategy as Dict | undefined)?.rollingUpdate ?? {}) as Dict;
  const maxSurge = scaled(ru.maxSurge as IntOrPercent, desired);
  let maxUnavailable = scaled((ru.maxUnavailable ?? 1) as IntOrPercent, desired);
  if (maxSurge === 0 && maxUnavailable === 0) maxUnavailable = 1;
  return { maxSurge, maxUnavailable };
}

/** Whether the DaemonSet rolls with surge (pods of both revisions on a node for a while). */
export function allowsSurge(ds: KubeObject): boolean {
  return fenceposts(ds, 1).maxSurge > 0;
}

interface OnNode { fresh?: KubeObject; old?: KubeObject; ok: boolean }

/** The live new and old pod of a node; not ok when there are two of either (manage cleans up). */
function split(pods: readonly KubeObject[], hash: string): OnNode {
  const r: OnNode = { ok: true };
  for (const p of pods) {
    if (p.metadata?.deletionTimestamp) continue;
    if (hashOf(p) === hash) { if (r.fresh) return { ok: false }; r.fresh = p; } else { if (r.old) return { ok: false }; r.old = p; }
  }
  return r;
}

export interface RollingInput {
  nodes: readonly NodeState[];
  byNode: ReadonlyMap<string, KubeObject[]>;
  hash: string;
  maxSurge: number;
  maxUnavailable: number;
  minReadySeconds: number;
  now: number;
}

export interface RollingPlan { remove: KubeObject[]; createOn: string[] }

export function planRollingUpdate(i: RollingInput): RollingPlan {
  return i.maxSurge > 0 ? surgeUpdate(i) : unavailableUpdate(i);
}

function unavailableUpdate(i: RollingInput): RollingPlan {
  let unavailable = 0;
  const replaceNow: KubeObject[] = [];
  const candidates: KubeObject[] = [];
  for (const { node } of i.nodes) {
    const pods = i.byNode.get(node.metadata?.name ?? '');
    if (!pods) continue;
    const { fresh, old, ok } = split(pods, i.hash);
    if (!ok || (!fresh && !old) || (fresh && old)) { unavailable++; continue; }
    if (fresh) { if (!isPodAvailable(fresh, i.minReadySeconds, i.now)) unavailable++; continue; }
    if (!old) continue;
    if (!isPodAvailable(old, i.minReadySeconds, i.now)) replaceNow.push(old);
    else if (unavailable < i.maxUnavailable) candidates.push(old);
  }
  const room = Math.min(Math.max(i.maxUnavailable - unavailable, 0), candidates.length);
  return { remove: [...replaceNow, ...candidates.slice(0, room)], createOn: [] };
}

function surgeUpdate(i: RollingInput): RollingPlan {
  let surging = 0;
  const remove: KubeObject[] = [];
  const allowed: string[] = [];
  const candidates: string[] = [];
  for (const { node, verdict } of i.nodes) {
    const name = node.metadata?.name ?? '';
    const pods = i.byNode.get(name);
    if (!pods) continue;
    const { fresh, old, ok } = split(pods, i.hash);
    if (!ok || !old) continue;
    if (fresh) {
      if (isPodAvailable(fresh, i.minReadySeconds, i.now)) remove.push(old); else surging++;
      continue;
    }
    if (!isPodAvailable(old, i.minReadySeconds, i.now)) { if (verdict.shouldRun) allowed.push(name); }
    else if (surging < i.maxSurge) candidates.push(name);
  }
  const room = Math.min(Math.max(i.maxSurge - surging, 0), candidates.length);
  return { remove, createOn: [...allowed, ...candidates.slice(0, room)] };
}

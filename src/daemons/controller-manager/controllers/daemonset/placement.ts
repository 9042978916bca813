/**
 * The manage step of a DaemonSet sync, as pure logic: which nodes need a daemon pod, and which
 * pods must go (extra pods on a node, pods on nodes where the DaemonSet no longer runs,
 * finished pods, pods pinned to nodes that no longer exist).
 *
 * Failed pods are replaced only through deletion: the node keeps its failed pod until the
 * per-node backoff allows deleting it (`failedMayGo`), and the next sync creates the
 * replacement, so a node agent that keeps rejecting the pod is not hammered.
 *
 * Contract: pure apart from `failedMayGo`, which the caller uses to record the backoff step;
 * pods being deleted never count as present and are never deleted again.
 */
import type { KubeObject } from '../../../../api/resources/types.js';
import { isPodAvailable, isPodReady, podPhase } from '../controller-utils.js';
import { targetNode, type NodeVerdict } from './node-fit.js';

export const REVISION_HASH_LABEL = 'controller-revision-hash';

export interface NodeState { node: KubeObject; verdict: NodeVerdict }

export interface ManageInput {
  nodes: readonly NodeState[];
  /** The DaemonSet's pods by the node they are meant for (see podsByNode). */
  byNode: ReadonlyMap<string, KubeObject[]>;
  hash: string;
  surge: boolean;
  minReadySeconds: number;
  now: number;
  /** 0 when the failed pod on `node` may be deleted now (and records that), else how long to wait. */
  failedMayGo(node: string): number;
}

export interface ManagePlan {
  createOn: string[];
  remove: KubeObject[];
  failed: Array<{ pod: KubeObject; node: string }>;
  /** Sync again after this long (a failed pod waits for its backoff). */
  retryAfterMs?: number;
}

/**
 * Pods grouped by target node; pods without one are left out, and so are finished pods being
 * deleted (they hold nothing any more).
 */
export function podsByNode(pods: readonly KubeObject[]): Map<string, KubeObject[]> {
  const out = new Map<string, KubeObject[]>();
  for (const p of pods) {
    const phase = podPhase(p);
    if (p.metadata?.deletionTimestamp && (phase === 'Failed' || phase === 'Succeeded')) continue;
    const node = targetNode(p);
    if (node === undefined) continue;
    const list = out.get(node);
    if (list) list.push(p); else out.set(node, [p]);
  }
  return out;
}

function created(p: KubeObject): number {
  const t = Date.parse(p.metadata?.creationTimestamp ?? '');
  return Number.isNaN(t) ? 0 : t;
}

/** Bound pods first, then oldest first, then by name. */
export function oldestFirst(a: KubeObject, b: KubeObject): number {
  const ba = Boolean((a.spec as { nodeName?: string } | undefined)?.nodeName);
  const bb = Boolean((b.spec as { nodeName?: string } | undefined)?.nodeName);
  if (ba !== bb) return ba ? -1 : 1;
  const d = created(a) - created(b);
  if (d !== 0) return d;
  return (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? '');
}

export function hashOf(p: KubeObject): string | undefined { return p.metadata?.labels?.[REVISION_HASH_LABEL]; }

/** With surge: keep the oldest new and oldest old pod, the old one only until the new one is available. */
function surgeExtras(running: KubeObject[], i: ManageInput): KubeObject[] {
  const extra: KubeObject[] = [];
  let newest: KubeObject | undefined; let oldest: KubeObject | undefined;
  for (const p of [...running].sort(oldestFirst)) {
    if (hashOf(p) === i.hash) { if (!newest) { newest = p; continue; } } else if (!oldest) { oldest = p; continue; }
    extra.push(p);
  }
  if (newest && oldest && (!isPodReady(oldest) || isPodAvailable(newest, i.minReadySeconds, i.now))) extra.push(oldest);
  return extra;
}

export function planManage(i: ManageInput): ManagePlan {
  const plan: ManagePlan = { createOn: [], remove: [], failed: [] };
  const wait = (ms: number): void => { plan.retryAfterMs = Math.min(plan.retryAfterMs ?? ms, ms); };
  const known = new Set<string>();
  for (const { node, verdict } of i.nodes) {
    const name = node.metadata?.name ?? '';
    known.add(name);
    const present = i.byNode.get(name) ?? [];
    const pods = present.filter((p) => !p.metadata?.deletionTimestamp);
    // A pod still terminating holds its node (its replacement could clash on host ports).
    if (verdict.shouldRun && present.length === 0) { plan.createOn.push(name); continue; }
    if (!verdict.shouldContinueRunning) { plan.remove.push(...pods); continue; }
    const running: KubeObject[] = [];
    for (const p of pods) {
      const phase = podPhase(p);
      if (phase === 'Failed') {
        const ms = i.failedMayGo(name);
        if (ms > 0) { wait(ms); continue; }
        plan.failed.push({ pod: p, node: name });
        plan.remove.push(p);
      } else if (phase === 'Succeeded') {
        plan.remove.push(p);
      } else {
        running.push(p);
      }
    }
    if (i.surge) plan.remove.push(...surgeExtras(running, i));
    else plan.remove.push(...[...running].sort(oldestFirst).slice(1));
  }
  // Pods never bound to a node that has gone away (bound ones are the pod GC's).
  for (const [name, pods] of i.byNode) {
    if (known.has(name)) continue;
    plan.remove.push(...pods.filter((p) => !p.metadata?.deletionTimestamp && !(p.spec as { nodeName?: string } | undefined)?.nodeName));
  }
  return plan;
}

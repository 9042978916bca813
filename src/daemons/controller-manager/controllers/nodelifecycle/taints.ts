/**
 * The taints the node lifecycle controller owns and how it writes them.
 *
 * - NoExecute `node.kubernetes.io/not-ready` (Ready False) and `node.kubernetes.io/unreachable`
 *   (Ready Unknown), mutually exclusive, added through the zone queues (TaintBasedEvictions);
 * - NoSchedule taints mirroring conditions and spec.unschedulable (TaintNodesByCondition).
 *
 * Contract: `swapNodeTaints` adds and removes in one optimistic write (a taint already present
 * with the same key and effect is kept as it is, so its timeAdded survives); on a conflict it
 * re-reads the node, at most NODE_WRITE_RETRIES times. It never touches other taints.
 */
import type { Logger } from 'pino';
import { isApiError } from '../../../../api/meta/status.js';
import type { KubeObject } from '../../../../api/resources/types.js';
import type { ResourceRef, RestClient } from '../../deps.js';
import { conditionOf } from './node-conditions.js';
import { metaTime } from '../../../../api/meta/time.js';

export const NODES: ResourceRef = { group: '', version: 'v1', resource: 'nodes' };
export const NODE_WRITE_RETRIES = 5;

export const TAINT_NOT_READY = 'node.kubernetes.io/not-ready';
export const TAINT_UNREACHABLE = 'node.kubernetes.io/unreachable';
export const TAINT_MEMORY_PRESSURE = 'node.kubernetes.io/memory-pressure';
export const TAINT_DISK_PRESSURE = 'node.kubernetes.io/disk-pressure';
export const TAINT_PID_PRESSURE = 'node.kubernetes.io/pid-pressure';
export const TAINT_NETWORK_UNAVAILABLE = 'node.kubernetes.io/network-unavailable';
export const TAINT_UNSCHEDULABLE = 'node.kubernetes.io/unschedulable';

export interface Taint { key: string; value?: string; effect: string; timeAdded?: string }

export const UNREACHABLE_NO_EXECUTE: Taint = { key: TAINT_UNREACHABLE, effect: 'NoExecute' };
export const NOT_READY_NO_EXECUTE: Taint = { key: TAINT_NOT_READY, effect: 'NoExecute' };

/** Condition type → condition status → the taint key it stands for. */
const CONDITION_TAINTS: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  Ready: { False: TAINT_NOT_READY, Unknown: TAINT_UNREACHABLE },
  MemoryPressure: { True: TAINT_MEMORY_PRESSURE },
  DiskPressure: { True: TAINT_DISK_PRESSURE },
  NetworkUnavailable: { True: TAINT_NETWORK_UNAVAILABLE },
  PIDPressure: { True: TAINT_PID_PRESSURE },
};
const CONDITION_TAINT_KEYS = new Set(Object.values(CONDITION_TAINTS).flatMap((m) => Object.values(m)));

export function taintsOf(node: KubeObject): Taint[] {
  return (((node.spec ?? {}) as { taints?: Taint[] }).taints ?? []);
}

export function sameTaint(a: Taint, b: Taint): boolean { return a.key === b.key && a.effect === b.effect; }

export function hasTaint(node: KubeObject, t: Taint): boolean { return taintsOf(node).some((x) => sameTaint(x, t)); }

/** The NoSchedule taints the node's conditions and spec.unschedulable call for. */
export function desiredNoScheduleTaints(node: KubeObject): Taint[] {
  const out: Taint[] = [];
  const conditions = (((node.status ?? {}) as { conditions?: Array<{ type?: string; status?: string }> }).conditions ?? []);
  for (const c of conditions) {
    const key = CONDITION_TAINTS[c.type ?? '']?.[c.status ?? ''];
    if (key && !out.some((t) => t.key === key)) out.push({ key, effect: 'NoSchedule' });
  }
  if (((node.spec ?? {}) as { unschedulable?: boolean }).unschedulable === true) out.push({ key: TAINT_UNSCHEDULABLE, effect: 'NoSchedule' });
  return out;
}

/** What to add and remove so that the node's condition NoSchedule taints match its state. */
export function noScheduleTaintDiff(node: KubeObject): { add: Taint[]; remove: Taint[] } {
  const want = desiredNoScheduleTaints(node);
  const have = taintsOf(node).filter((t) => t.effect === 'NoSchedule' && (t.key === TAINT_UNSCHEDULABLE || CONDITION_TAINT_KEYS.has(t.key)));
  return {
    add: want.filter((w) => !have.some((h) => sameTaint(h, w))),
    remove: have.filter((h) => !want.some((w) => sameTaint(h, w))),
  };
}

/** The node's taints after the swap; undefined when nothing changes. */
export function swappedTaints(current: readonly Taint[], add: readonly Taint[], remove: readonly Taint[], nowMs: number): Taint[] | undefined {
  const kept = current.filter((t) => !remove.some((r) => sameTaint(r, t)));
  const added = add.filter((a) => !kept.some((t) => sameTaint(a, t))).map((a) => ({ key: a.key, ...(a.value ? { value: a.value } : {}), effect: a.effect, timeAdded: metaTime(nowMs) }));
  if (kept.length === current.length && added.length === 0) return undefined;
  return [...kept, ...added];
}

/**
 * Adds and removes taints on the node (starting from the cached copy); true when the node now
 * has them as asked or is gone, false when the write failed (logged).
 */
export async function swapNodeTaints(client: RestClient, cached: KubeObject, add: readonly Taint[], remove: readonly Taint[], now: () => number, log: Logger): Promise<boolean> {
  const name = cached.metadata?.name ?? '';
  let node = cached;
  for (let attempt = 0; attempt < NODE_WRITE_RETRIES; attempt++) {
    try {
      if (attempt > 0) node = await client.get(NODES, name);
      const taints = swappedTaints(taintsOf(node), add, remove, now());
      if (!taints) return true;
      await client.update(NODES, { ...node, spec: { ...(node.spec ?? {}), taints } });
      log.debug({ node: name, add: add.map((t) => `${t.key}:${t.effect}`), remove: remove.map((t) => `${t.key}:${t.effect}`) }, 'node taints swapped');
      return true;
    } catch (e) {
      if (isApiError(e) && e.code === 404) return true;
      if (isApiError(e) && e.code === 409) continue;
      log.warn({ node: name, err: (e as Error).message }, 'could not update node taints');
      return false;
    }
  }
  log.warn({ node: name }, 'could not update node taints: conflicts');
  return false;
}

/** The node's Ready condition status ('' when it has none). */
export function readyStatus(node: KubeObject): string {
  return conditionOf(node.status, 'Ready')?.status ?? '';
}

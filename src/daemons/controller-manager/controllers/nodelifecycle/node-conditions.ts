/**
 * Judging a node's health from what it posts (Kubernetes' tryUpdateNodeHealth).
 *
 * The controller never compares a node's timestamps with its own clock (clocks drift): it
 * remembers, per node, when it last *saw* a new heartbeat — a changed Ready
 * lastHeartbeatTime or a newer renewTime of the node's Lease in kube-node-lease — and when it
 * saw the Ready condition change. A node silent for longer than its grace period (the startup
 * grace while it never posted Ready, the monitor grace after) gets Ready, MemoryPressure,
 * DiskPressure and PIDPressure set to Unknown; conditions it never posted are added as Unknown.
 * NetworkUnavailable is left alone: it is not the node agent's to post.
 *
 * Contract: `assessNodeHealth` is pure; it returns the node to write through nodes/status only
 * when the Ready condition changed.
 */
import type { KubeObject } from '../../../../api/resources/types.js';
import { metaTime } from '../../../../api/meta/time.js';

export interface NodeCondition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastHeartbeatTime?: string;
  lastTransitionTime?: string;
}

/** What the controller remembers about one node between passes. */
export interface NodeHealth {
  /** When (controller clock, ms) a heartbeat was last seen. */
  probeTimestamp: number;
  /** When (controller clock, ms) the Ready condition was last seen to change. */
  readyTransitionTimestamp: number;
  /** The node status as last taken in. */
  status: unknown;
  /** renewTime (ms) of the node's Lease as last seen. */
  leaseRenewTime?: number;
}

export interface HealthOptions {
  monitorGraceMs: number;
  startupGraceMs: number;
}

export interface HealthAssessment {
  health: NodeHealth;
  gracePeriodMs: number;
  /** The Ready condition as the node had it when the pass began (made up when it has none). */
  observedReady: NodeCondition;
  /** The Ready condition after this pass (absent: the node never posted one and is in grace). */
  currentReady: NodeCondition | undefined;
  /** The node with Unknown conditions, to write through nodes/status. */
  write?: KubeObject;
}

/** The conditions set to Unknown when a node falls silent. */
export const MONITORED_CONDITIONS = ['Ready', 'MemoryPressure', 'DiskPressure', 'PIDPressure'] as const;
export const MSG_STOPPED = 'Node agent stopped posting node status.';
export const MSG_NEVER = 'Node agent never posted node status.';


function time(s: unknown): number {
  const t = typeof s === 'string' ? Date.parse(s) : NaN;
  return Number.isNaN(t) ? 0 : t;
}

export function conditionOf(status: unknown, type: string): NodeCondition | undefined {
  const conditions = ((status ?? {}) as { conditions?: NodeCondition[] }).conditions ?? [];
  return conditions.find((c) => c.type === type);
}

function sameCondition(a: NodeCondition | undefined, b: NodeCondition | undefined): boolean {
  if (!a || !b) return a === b;
  return a.type === b.type && a.status === b.status && (a.reason ?? '') === (b.reason ?? '') && (a.message ?? '') === (b.message ?? '')
    && (a.lastHeartbeatTime ?? '') === (b.lastHeartbeatTime ?? '') && (a.lastTransitionTime ?? '') === (b.lastTransitionTime ?? '');
}

/** renewTime (ms) of a Lease; undefined when it has none. */
export function leaseRenewTime(lease: KubeObject | undefined): number | undefined {
  const t = time(((lease?.spec ?? {}) as { renewTime?: string }).renewTime);
  return t > 0 ? t : undefined;
}

/** One pass over one node: updates what is remembered and decides whether it went silent. */
export function assessNodeHealth(node: KubeObject, saved: NodeHealth | undefined, lease: KubeObject | undefined, now: number, o: HealthOptions): HealthAssessment {
  const created = time(node.metadata?.creationTimestamp);
  const currentReady = conditionOf(node.status, 'Ready');
  let health: NodeHealth | undefined = saved && { ...saved };
  let observedReady: NodeCondition;
  let gracePeriodMs: number;
  if (!currentReady) {
    // Never posted: judged from its creation, with the longer startup grace.
    observedReady = { type: 'Ready', status: 'Unknown', lastHeartbeatTime: metaTime(created), lastTransitionTime: metaTime(created) };
    gracePeriodMs = o.startupGraceMs;
    if (health) health.status = node.status;
    else health = { status: node.status, probeTimestamp: created, readyTransitionTimestamp: created };
  } else {
    observedReady = { ...currentReady };
    gracePeriodMs = o.monitorGraceMs;
  }
  const savedReady = health ? conditionOf(health.status, 'Ready') : undefined;
  const leaseSeen = health?.leaseRenewTime;
  const fresh = (readyTransitionTimestamp: number): NodeHealth => ({
    status: node.status, probeTimestamp: now, readyTransitionTimestamp, ...(leaseSeen !== undefined ? { leaseRenewTime: leaseSeen } : {}),
  });
  if (!health) health = fresh(now);
  else if (!savedReady && currentReady) health = fresh(now);
  else if (savedReady && !currentReady) health = fresh(now);
  else if (savedReady && currentReady && savedReady.lastHeartbeatTime !== currentReady.lastHeartbeatTime) {
    health = fresh(savedReady.lastTransitionTime !== currentReady.lastTransitionTime ? now : health.readyTransitionTimestamp);
  }
  // A renewed Lease is a heartbeat too, even from a node that never posted its status.
  const renewed = leaseRenewTime(lease);
  if (renewed !== undefined && (leaseSeen === undefined || leaseSeen < renewed)) {
    health = { ...health, leaseRenewTime: renewed, probeTimestamp: now };
  }

  const result: HealthAssessment = { health, gracePeriodMs, observedReady, currentReady };
  if (now <= health.probeTimestamp + gracePeriodMs) return result;

  const stamp = metaTime(now);
  const status = structuredClone((node.status ?? {}) as Record<string, unknown>);
  const conditions = ((status.conditions as NodeCondition[] | undefined) ?? []);
  for (const type of MONITORED_CONDITIONS) {
    const c = conditions.find((x) => x.type === type);
    if (!c) {
      conditions.push({ type, status: 'Unknown', reason: 'NodeStatusNeverUpdated', message: MSG_NEVER, lastHeartbeatTime: metaTime(created), lastTransitionTime: stamp });
    } else if (c.status !== 'Unknown') {
      c.status = 'Unknown';
      c.reason = 'NodeStatusUnknown';
      c.message = MSG_STOPPED;
      c.lastTransitionTime = stamp;
    }
  }
  status.conditions = conditions;
  const ready = conditions.find((x) => x.type === 'Ready');
  if (sameCondition(ready, observedReady)) return result;
  return { ...result, currentReady: ready, write: { ...node, status } };
}

/**
 * The order in which Kubernetes' node agent evicts pods for a signal:
 *   memory: pods whose usage exceeds their requests first, then lower priority, then larger
 *           usage above requests;
 *   disk:   the same with ephemeral-storage (usage: emptyDir volumes and logs);
 *   pids:   lower priority, then more processes.
 * Pods the agent must not evict (static pods, system-critical priority) are left out.
 */
import { parseQuantity } from '../../../util/quantity.js';
import { isStaticPod, type Pod } from '../pod-types.js';
import type { Signal } from './thresholds.js';

/** scheduling.SystemCriticalPriority: pods at or above it are never evicted. */
export const SYSTEM_CRITICAL_PRIORITY = 2_000_000_000;

export interface ContainerUsage { readonly name: string; readonly memory?: number; readonly disk?: number }
export interface PodUsage {
  readonly memory?: number;
  readonly disk?: number;
  readonly pids?: number;
  readonly containers: readonly ContainerUsage[];
}

export interface Candidate { readonly pod: Pod; readonly usage: PodUsage }

export function podRequest(pod: Pod, resource: string): number {
  let sum = 0;
  for (const c of pod.spec?.containers ?? []) {
    const v = c.resources?.requests?.[resource];
    if (v !== undefined) { try { sum += parseQuantity(String(v)); } catch { /* validated by the API server */ } }
  }
  return sum;
}

export function containerRequest(pod: Pod, name: string, resource: string): number {
  const c = (pod.spec?.containers ?? []).find((x) => x.name === name);
  const v = c?.resources?.requests?.[resource];
  try { return v !== undefined ? parseQuantity(String(v)) : 0; } catch { return 0; }
}

export function evictable(pod: Pod): boolean {
  if (isStaticPod(pod)) return false;
  return (pod.spec?.priority ?? 0) < SYSTEM_CRITICAL_PRIORITY;
}

type Cmp = (a: Candidate, b: Candidate) => number;

const byPriority: Cmp = (a, b) => (a.pod.spec?.priority ?? 0) - (b.pod.spec?.priority ?? 0);

function exceeds(usage: (c: Candidate) => number | undefined, resource: string): Cmp {
  // true sorts first
  return (a, b) => {
    const ea = (usage(a) ?? 0) > podRequest(a.pod, resource) ? 1 : 0;
    const eb = (usage(b) ?? 0) > podRequest(b.pod, resource) ? 1 : 0;
    return eb - ea;
  };
}

function aboveRequests(usage: (c: Candidate) => number | undefined, resource: string): Cmp {
  return (a, b) => ((usage(b) ?? 0) - podRequest(b.pod, resource)) - ((usage(a) ?? 0) - podRequest(a.pod, resource));
}

function chain(...cmps: Cmp[]): Cmp {
  return (a, b) => {
    for (const c of cmps) { const r = c(a, b); if (r !== 0) return r; }
    return 0;
  };
}

/** Candidates in eviction order for the signal (first is evicted first). */
export function rankForSignal(signal: Signal, candidates: readonly Candidate[]): Candidate[] {
  const list = candidates.filter((c) => evictable(c.pod));
  let cmp: Cmp;
  if (signal === 'memory.available') {
    const mem = (c: Candidate): number | undefined => c.usage.memory;
    cmp = chain(exceeds(mem, 'memory'), byPriority, aboveRequests(mem, 'memory'));
  } else if (signal === 'pid.available') {
    cmp = chain(byPriority, (a, b) => (b.usage.pids ?? 0) - (a.usage.pids ?? 0));
  } else {
    const disk = (c: Candidate): number | undefined => c.usage.disk;
    cmp = chain(exceeds(disk, 'ephemeral-storage'), byPriority, aboveRequests(disk, 'ephemeral-storage'));
  }
  return [...list].sort(cmp);
}

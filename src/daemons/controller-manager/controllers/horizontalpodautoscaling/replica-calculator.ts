/**
 * How many replicas a metric asks for, with Kubernetes' replica calculator semantics
 * (pkg/controller/podautoscaler/replica_calculator.go):
 *  - pods being deleted or Failed are ignored; Pending pods count as unready; for CPU a pod is
 *    also unready while it is not Ready, or still within its CPU initialization period (5 min
 *    from start) without a sample taken since it became Ready, or Ready for the first time less
 *    than 30 s after start (its first readiness is not trusted);
 *  - the usage ratio is over the ready pods with metrics; within the tolerance nothing changes;
 *  - pods without metrics count, on a scale-down, as using 100 % of their request (or the target,
 *    when that is higher) and on a scale-up as using nothing; unready pods, on a scale-up, as
 *    using nothing; if that flips the direction, or lands within the tolerance, nothing changes.
 * Values are in milli-units (CPU millicores, memory milli-bytes) as Kubernetes computes them.
 */

export interface PodInfo {
  name: string;
  phase: string;
  deleting: boolean;
  /** Epoch ms, or undefined. */
  startTime?: number;
  /** The Ready condition, if any. */
  ready?: { status: string; lastTransitionTime?: number };
  /** Resource request per container (milli-units), by resource name then container. */
  requests: Record<string, Record<string, number | undefined>>;
  /** Container names of the spec (a request missing in any of them is an error). */
  containers: string[];
}

/** One pod's metric (milli-units), with the sample's time and window (ms). */
export interface PodMetric { value: number; timestamp: number; windowMs: number }

export const CPU_INITIALIZATION_PERIOD_MS = 5 * 60 * 1000;
export const DELAY_OF_INITIAL_READINESS_STATUS_MS = 30 * 1000;

export class ReplicaCalcError extends Error {
  override readonly name = 'ReplicaCalcError';
}

interface Groups { readyPodCount: number; unready: Set<string>; missing: Set<string>; ignored: Set<string> }

function groupPods(pods: readonly PodInfo[], metrics: ReadonlyMap<string, PodMetric>, resource: string | undefined, now: number): Groups {
  const g: Groups = { readyPodCount: 0, unready: new Set(), missing: new Set(), ignored: new Set() };
  for (const pod of pods) {
    if (pod.deleting || pod.phase === 'Failed') { g.ignored.add(pod.name); continue; }
    if (pod.phase === 'Pending') { g.unready.add(pod.name); continue; }
    const metric = metrics.get(pod.name);
    if (!metric) { g.missing.add(pod.name); continue; }
    if (resource === 'cpu') {
      let ignore: boolean;
      const cond = pod.ready;
      if (!cond || pod.startTime === undefined) ignore = true;
      else if (pod.startTime + CPU_INITIALIZATION_PERIOD_MS > now) {
        ignore = cond.status === 'False' || metric.timestamp < (cond.lastTransitionTime ?? 0) + metric.windowMs;
      } else {
        ignore = cond.status === 'False' && pod.startTime + DELAY_OF_INITIAL_READINESS_STATUS_MS > (cond.lastTransitionTime ?? 0);
      }
      if (ignore) { g.unready.add(pod.name); continue; }
    }
    g.readyPodCount++;
  }
  return g;
}

/** Sum of each pod's requests of `resource` (or one container's); a container without a request is an error. */
function podRequests(pods: readonly PodInfo[], resource: string, container?: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const pod of pods) {
    let sum = 0;
    for (const c of pod.containers) {
      if (container && c !== container) continue;
      const r = pod.requests[resource]?.[c];
      if (r === undefined) throw new ReplicaCalcError(`missing request for ${resource} in container ${c} of Pod ${pod.name}`);
      sum += r;
    }
    out.set(pod.name, sum);
  }
  return out;
}

/** Kubernetes' GetResourceUtilizationRatio: pods without a request are left out. */
export function utilizationRatio(metrics: ReadonlyMap<string, PodMetric>, requests: ReadonlyMap<string, number>, target: number): { ratio: number; utilization: number; rawAverage: number } {
  let used = 0, requested = 0, n = 0;
  for (const [name, m] of metrics) {
    const r = requests.get(name);
    if (r === undefined) continue;
    used += m.value;
    requested += r;
    n++;
  }
  if (requested === 0) throw new ReplicaCalcError('no metrics returned matched known pods');
  const utilization = Math.trunc((used * 100) / requested);
  return { ratio: utilization / target, utilization, rawAverage: Math.trunc(used / n) };
}

export interface ResourceReplicas { replicas: number; utilization: number; rawAverage: number; timestamp: number }

/** Replicas for a Utilization target (percent of request) of `resource` (optionally one container's). */
export function resourceUtilizationReplicas(o: {
  currentReplicas: number; targetUtilization: number; resource: string; container?: string;
  pods: readonly PodInfo[]; metrics: ReadonlyMap<string, PodMetric>; tolerance: number; now: number;
}): ResourceReplicas {
  if (!o.metrics.size) throw new ReplicaCalcError(`unable to get metrics for resource ${o.resource}: no metrics returned from resource metrics API`);
  if (!o.pods.length) throw new ReplicaCalcError('no pods returned by selector while calculating replica count');
  const metrics = new Map(o.metrics);
  const timestamp = Math.min(...[...metrics.values()].map((m) => m.timestamp));
  const g = groupPods(o.pods, metrics, o.resource, o.now);
  for (const n of [...g.ignored, ...g.unready]) metrics.delete(n);
  const requests = podRequests(o.pods, o.resource, o.container);
  if (!metrics.size) throw new ReplicaCalcError('did not receive metrics for targeted pods (pods might be unready)');
  const first = utilizationRatio(metrics, requests, o.targetUtilization);
  const scaleUpWithUnready = g.unready.size > 0 && first.ratio > 1.0;
  if (!scaleUpWithUnready && g.missing.size === 0) {
    if (Math.abs(1.0 - first.ratio) <= o.tolerance) return { replicas: o.currentReplicas, utilization: first.utilization, rawAverage: first.rawAverage, timestamp };
    return { replicas: Math.ceil(first.ratio * g.readyPodCount), utilization: first.utilization, rawAverage: first.rawAverage, timestamp };
  }
  if (g.missing.size) {
    if (first.ratio < 1.0) {
      const fallback = Math.max(100, o.targetUtilization);
      for (const n of g.missing) metrics.set(n, { value: Math.trunc(((requests.get(n) ?? 0) * fallback) / 100), timestamp, windowMs: 0 });
    } else if (first.ratio > 1.0) {
      for (const n of g.missing) metrics.set(n, { value: 0, timestamp, windowMs: 0 });
    }
  }
  if (scaleUpWithUnready) for (const n of g.unready) metrics.set(n, { value: 0, timestamp, windowMs: 0 });
  const second = utilizationRatio(metrics, requests, o.targetUtilization);
  const keep = { replicas: o.currentReplicas, utilization: first.utilization, rawAverage: first.rawAverage, timestamp };
  if (Math.abs(1.0 - second.ratio) <= o.tolerance || (first.ratio < 1.0 && second.ratio > 1.0) || (first.ratio > 1.0 && second.ratio < 1.0)) return keep;
  const replicas = Math.ceil(second.ratio * metrics.size);
  if ((second.ratio < 1.0 && replicas > o.currentReplicas) || (second.ratio > 1.0 && replicas < o.currentReplicas)) return keep;
  return { replicas, utilization: first.utilization, rawAverage: first.rawAverage, timestamp };
}

/**
 * Replicas for a per-pod average value target (Resource AverageValue, Pods metrics), Kubernetes'
 * calcPlainMetricReplicas: the same grouping; missing pods count as the target on a scale-down
 * and as zero on a scale-up. `usage` is the average over the pods with metrics.
 */
export function plainMetricReplicas(o: {
  currentReplicas: number; targetAverage: number; resource?: string;
  pods: readonly PodInfo[]; metrics: ReadonlyMap<string, PodMetric>; tolerance: number; now: number;
}): { replicas: number; usage: number; timestamp: number } {
  if (!o.pods.length) throw new ReplicaCalcError('no pods returned by selector while calculating replica count');
  if (!o.metrics.size) throw new ReplicaCalcError('no metrics returned from the metrics API');
  const metrics = new Map(o.metrics);
  const timestamp = Math.min(...[...metrics.values()].map((m) => m.timestamp));
  const g = groupPods(o.pods, metrics, o.resource, o.now);
  for (const n of [...g.ignored, ...g.unready]) metrics.delete(n);
  if (!metrics.size) throw new ReplicaCalcError('did not receive metrics for targeted pods (pods might be unready)');
  const ratioOf = (m: Map<string, PodMetric>): { ratio: number; usage: number } => {
    let total = 0;
    for (const v of m.values()) total += v.value;
    return { ratio: total / (o.targetAverage * m.size), usage: total / m.size };
  };
  const first = ratioOf(metrics);
  const scaleUpWithUnready = g.unready.size > 0 && first.ratio > 1.0;
  if (!scaleUpWithUnready && g.missing.size === 0) {
    if (Math.abs(1.0 - first.ratio) <= o.tolerance) return { replicas: o.currentReplicas, usage: first.usage, timestamp };
    return { replicas: Math.ceil(first.ratio * g.readyPodCount), usage: first.usage, timestamp };
  }
  if (g.missing.size) {
    if (first.ratio < 1.0) for (const n of g.missing) metrics.set(n, { value: o.targetAverage, timestamp, windowMs: 0 });
    else for (const n of g.missing) metrics.set(n, { value: 0, timestamp, windowMs: 0 });
  }
  if (scaleUpWithUnready) for (const n of g.unready) metrics.set(n, { value: 0, timestamp, windowMs: 0 });
  const second = ratioOf(metrics);
  const keep = { replicas: o.currentReplicas, usage: first.usage, timestamp };
  if (Math.abs(1.0 - second.ratio) <= o.tolerance || (first.ratio < 1.0 && second.ratio > 1.0) || (first.ratio > 1.0 && second.ratio < 1.0)) return keep;
  const replicas = Math.ceil(second.ratio * metrics.size);
  if ((second.ratio < 1.0 && replicas > o.currentReplicas) || (second.ratio > 1.0 && replicas < o.currentReplicas)) return keep;
  return { replicas, usage: first.usage, timestamp };
}

/** Kubernetes' getUsageRatioReplicaCount (Object and External Value targets). */
export function usageRatioReplicas(currentReplicas: number, ratio: number, readyPods: number, tolerance: number): number {
  if (currentReplicas !== 0) {
    if (Math.abs(1.0 - ratio) <= tolerance) return currentReplicas;
    return Math.ceil(ratio * readyPods);
  }
  return Math.ceil(ratio);
}

/** Kubernetes' per-pod average for Object/External AverageValue targets. */
export function perPodReplicas(currentReplicas: number, usage: number, targetAverage: number, tolerance: number): number {
  const ratio = usage / (targetAverage * currentReplicas);
  return Math.abs(1.0 - ratio) > tolerance ? Math.ceil(usage / targetAverage) : currentReplicas;
}

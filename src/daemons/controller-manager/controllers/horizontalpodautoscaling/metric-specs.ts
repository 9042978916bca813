/**
 * One HPA's metrics to replica proposals, as Kubernetes' computeReplicasForMetrics: each metric
 * of spec.metrics gives a proposal and its status; the largest proposal wins. A metric that
 * fails sets ScalingActive=False with Kubernetes' reason (FailedGetResourceMetric, ...); when
 * some failed and the others would scale down, or all failed, there is no proposal at all.
 */
import { labelSelectorMatcher } from '../../../../api/meta/label-selector.js';
import type { KubeObject } from '../../../../api/resources/types.js';
import { parseQuantity } from '../../../../util/quantity.js';
import type { HpaMetricsClient } from './metrics-client.js';
import { perPodReplicas, plainMetricReplicas, resourceUtilizationReplicas, usageRatioReplicas, type PodInfo } from './replica-calculator.js';
import type { ScaleClient } from './scale-client.js';

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (typeof v === 'object' && v !== null ? v as Obj : {});
const milli = (q: unknown): number => Math.round(parseQuantity(String(q)) * 1000);
/** A milli-unit count as Kubernetes writes a MilliQuantity ("250m", "2"). */
export const quantity = (m: number): string => (m % 1000 === 0 ? String(m / 1000) : `${Math.round(m)}m`);

/** A label selector object as the selector text the metrics APIs take. */
function selectorText(sel: unknown): string {
  const s = obj(sel);
  const parts: string[] = [];
  for (const [k, v] of Object.entries(obj(s.matchLabels))) parts.push(`${k}=${String(v)}`);
  for (const e of Array.isArray(s.matchExpressions) ? s.matchExpressions.map(obj) : []) {
    const vals = Array.isArray(e.values) ? e.values.map(String).join(',') : '';
    if (e.operator === 'In') parts.push(`${String(e.key)} in (${vals})`);
    else if (e.operator === 'NotIn') parts.push(`${String(e.key)} notin (${vals})`);
    else if (e.operator === 'Exists') parts.push(String(e.key));
    else if (e.operator === 'DoesNotExist') parts.push(`!${String(e.key)}`);
  }
  return parts.join(',');
}

export function podInfo(p: KubeObject): PodInfo {
  const status = obj(p.status);
  const conds = Array.isArray(status.conditions) ? status.conditions.map(obj) : [];
  const ready = conds.find((c) => c.type === 'Ready');
  const containers = Array.isArray(obj(p.spec).containers) ? (obj(p.spec).containers as unknown[]).map(obj) : [];
  const requests: Record<string, Record<string, number | undefined>> = {};
  for (const c of containers) {
    for (const [r, v] of Object.entries(obj(obj(c.resources).requests))) {
      (requests[r] ??= {})[String(c.name)] = milli(v);
    }
  }
  return {
    name: p.metadata?.name ?? '', phase: String(status.phase ?? ''), deleting: !!p.metadata?.deletionTimestamp,
    ...(typeof status.startTime === 'string' ? { startTime: Date.parse(status.startTime) } : {}),
    ...(ready ? { ready: { status: String(ready.status), ...(typeof ready.lastTransitionTime === 'string' ? { lastTransitionTime: Date.parse(ready.lastTransitionTime) } : {}) } } : {}),
    requests, containers: containers.map((c) => String(c.name)),
  };
}

export interface MetricContext {
  namespace: string;
  currentReplicas: number;
  /** The scale's selector text ('' when the target has none). */
  selector: string;
  pods: () => KubeObject[];
  metrics: HpaMetricsClient;
  scale: ScaleClient;
  tolerance: number;
  restClients: boolean;
  now: number;
}

export interface MetricFailure { reason: string; message: string; event: string }
export interface Proposal { replicas: number; metricName: string; statuses: Obj[] }

export class MetricsFailed extends Error {
  constructor(readonly failure: MetricFailure, readonly statuses: Obj[]) { super(failure.message); }
}

async function one(m: Obj, c: MetricContext): Promise<{ replicas: number; name: string; status: Obj }> {
  const type = String(m.type);
  const selectedPods = (): PodInfo[] => {
    const matches = labelSelectorMatcher(c.selector);
    return c.pods().filter((p) => p.metadata?.namespace === c.namespace && matches(p.metadata?.labels)).map(podInfo);
  };
  const needSelector = (): void => { if (!c.selector) throw Object.assign(new Error('the HPA target\'s scale is missing a selector'), { reason: 'InvalidSelector' }); };
  if (type === 'Resource' || type === 'ContainerResource') {
    const spec = obj(type === 'Resource' ? m.resource : m.containerResource);
    const resource = String(spec.name);
    const container = type === 'ContainerResource' ? String(spec.container) : undefined;
    const target = obj(spec.target);
    needSelector();
    const metrics = await c.metrics.resourceMetrics(c.namespace, c.selector, resource, container);
    const key = type === 'Resource' ? 'resource' : 'containerResource';
    const base = { name: resource, ...(container ? { container } : {}) };
    if (target.type === 'AverageValue' || (target.averageValue !== undefined && target.averageUtilization === undefined)) {
      const r = plainMetricReplicas({ currentReplicas: c.currentReplicas, targetAverage: milli(target.averageValue), resource, pods: selectedPods(), metrics, tolerance: c.tolerance, now: c.now });
      return { replicas: r.replicas, name: `${resource} resource${container ? ` of container "${container}"` : ''}`, status: { type, [key]: { ...base, current: { averageValue: quantity(r.usage) } } } };
    }
    const r = resourceUtilizationReplicas({
      currentReplicas: c.currentReplicas, targetUtilization: Number(target.averageUtilization), resource, ...(container ? { container } : {}),
      pods: selectedPods(), metrics, tolerance: c.tolerance, now: c.now,
    });
    return {
      replicas: r.replicas, name: `${resource} ${container ? `container resource utilization (percentage of request)` : 'resource utilization (percentage of request)'}`,
      status: { type, [key]: { ...base, current: { averageUtilization: r.utilization, averageValue: quantity(r.rawAverage) } } },
    };
  }
  if (!c.restClients) throw new Error(`${type} metrics need --horizontal-pod-autoscaler-use-rest-clients=true`);
  if (type === 'Pods') {
    const spec = obj(m.pods), metric = obj(spec.metric), target = obj(spec.target);
    needSelector();
    const metrics = await c.metrics.podsMetric(c.namespace, String(metric.name), c.selector, selectorText(metric.selector));
    const r = plainMetricReplicas({ currentReplicas: c.currentReplicas, targetAverage: milli(target.averageValue), pods: selectedPods(), metrics, tolerance: c.tolerance, now: c.now });
    return { replicas: r.replicas, name: `pods metric ${String(metric.name)}`, status: { type, pods: { metric, current: { averageValue: quantity(r.usage) } } } };
  }
  if (type === 'Object') {
    const spec = obj(m.object), metric = obj(spec.metric), target = obj(spec.target), described = obj(spec.describedObject);
    const { ref } = await c.scale.mapping(c.namespace, String(described.apiVersion ?? 'v1'), String(described.kind));
    const v = await c.metrics.objectMetric(c.namespace, ref.resource, ref.group, String(described.name), String(metric.name), selectorText(metric.selector));
    const name = `${String(described.kind)} metric ${String(metric.name)}`;
    if (target.type === 'AverageValue') {
      const replicas = perPodReplicas(c.currentReplicas, v.value, milli(target.averageValue), c.tolerance);
      return { replicas, name, status: { type, object: { metric, describedObject: described, current: { averageValue: quantity(v.value / Math.max(1, c.currentReplicas)) } } } };
    }
    needSelector();
    const ready = selectedPods().filter((p) => p.phase === 'Running' && p.ready?.status === 'True').length;
    const replicas = usageRatioReplicas(c.currentReplicas, v.value / milli(target.value), ready, c.tolerance);
    return { replicas, name, status: { type, object: { metric, describedObject: described, current: { value: quantity(v.value) } } } };
  }
  if (type === 'External') {
    const spec = obj(m.external), metric = obj(spec.metric), target = obj(spec.target);
    const v = await c.metrics.externalMetric(c.namespace, String(metric.name), selectorText(metric.selector));
    const name = `external metric ${String(metric.name)}(${JSON.stringify(metric.selector ?? null)})`;
    if (target.type === 'AverageValue') {
      const replicas = perPodReplicas(c.currentReplicas, v.value, milli(target.averageValue), c.tolerance);
      return { replicas, name, status: { type, external: { metric, current: { averageValue: quantity(v.value / Math.max(1, c.currentReplicas)) } } } };
    }
    needSelector();
    const ready = selectedPods().filter((p) => p.phase === 'Running' && p.ready?.status === 'True').length;
    const replicas = usageRatioReplicas(c.currentReplicas, v.value / milli(target.value), ready, c.tolerance);
    return { replicas, name, status: { type, external: { metric, current: { value: quantity(v.value) } } } };
  }
  throw new Error(`unknown metric source type "${type}"`);
}

const FAILURE_REASON: Readonly<Record<string, string>> = {
  Resource: 'FailedGetResourceMetric', ContainerResource: 'FailedGetContainerResourceMetric', Pods: 'FailedGetPodsMetric',
  Object: 'FailedGetObjectMetric', External: 'FailedGetExternalMetric',
};

function failureOf(m: Obj, e: Error): MetricFailure {
  const type = String(m.type);
  if ((e as { reason?: string }).reason === 'InvalidSelector') return { reason: 'InvalidSelector', event: 'SelectorRequired', message: e.message };
  const what = type === 'Resource' ? `failed to get ${String(obj(m.resource).name)} utilization: ${e.message}`
    : type === 'ContainerResource' ? `failed to get ${String(obj(m.containerResource).name)} container utilization: ${e.message}`
      : `failed to get ${type.toLowerCase()} metric value: ${e.message}`;
  const reason = FAILURE_REASON[type] ?? 'InvalidMetricSourceType';
  return { reason, event: reason, message: `the HPA was unable to compute the replica count: ${what}` };
}

/** The largest proposal of the metrics, with every metric's status; throws MetricsFailed when there is none. */
export async function proposeReplicas(specMetrics: readonly unknown[], c: MetricContext): Promise<Proposal> {
  let best = -1, bestName = '', invalid = 0;
  let firstFailure: MetricFailure | undefined;
  const statuses: Obj[] = [];
  for (const raw of specMetrics) {
    const m = obj(raw);
    try {
      const r = await one(m, c);
      statuses.push(r.status);
      if (r.replicas > best) { best = r.replicas; bestName = r.name; }
    } catch (e) {
      invalid++;
      statuses.push({ type: String(m.type) });
      firstFailure ??= failureOf(m, e as Error);
    }
  }
  if (invalid && (invalid >= specMetrics.length || best < c.currentReplicas)) {
    throw new MetricsFailed(firstFailure ?? { reason: 'FailedGetResourceMetric', event: 'FailedComputeMetricsReplicas', message: 'no metrics' }, statuses);
  }
  return { replicas: best, metricName: bestName, statuses };
}

/**
 * HorizontalPodAutoscaler: stored as autoscaling/v2, also served as autoscaling/v1 by
 * conversion (v1 has only the CPU utilization target).
 */
import { fieldErrors, type FieldError } from '../../meta/status.js';
import { defineResource, statusStrategy } from '../common/define.js';
import { col, arr, rec, str, num, path } from '../common/table-util.js';
import { isObject } from '../common/validation.js';
import type { KubeObject } from '../types.js';

type Obj = Record<string, unknown>;
// autoscaling/v1 keeps what it cannot express in annotations (as Kubernetes does), so a round
// trip through v1 (or v1 storage) loses nothing.
const V1_METRICS_ANNOTATION = 'autoscaling.alpha.kubernetes.io/metrics';
const V1_BEHAVIOR_ANNOTATION = 'autoscaling.alpha.kubernetes.io/behavior';
const V1_CONDITIONS_ANNOTATION = 'autoscaling.alpha.kubernetes.io/conditions';
const V1_CURRENT_METRICS_ANNOTATION = 'autoscaling.alpha.kubernetes.io/current-metrics';

function takeJson(meta: NonNullable<KubeObject['metadata']>, key: string): unknown {
  const raw = meta.annotations?.[key];
  if (raw === undefined) return undefined;
  delete meta.annotations![key];
  if (!Object.keys(meta.annotations!).length) delete meta.annotations;
  try { return JSON.parse(raw) as unknown; } catch { return undefined; }
}

function cpuTarget(metrics: unknown[]): number | undefined {
  for (const m of metrics.map(rec)) {
    const r = rec(m.resource), t = rec(r.target);
    if (m.type === 'Resource' && r.name === 'cpu' && t.type === 'Utilization' && typeof t.averageUtilization === 'number') return t.averageUtilization;
  }
  return undefined;
}

function toV1(obj: KubeObject): KubeObject {
  const spec = rec(obj.spec), status = rec(obj.status);
  const out: KubeObject = { ...obj, apiVersion: 'autoscaling/v1', metadata: structuredClone(obj.metadata ?? {}) };
  const metrics = arr(spec.metrics);
  const v1spec: Obj = { scaleTargetRef: spec.scaleTargetRef, minReplicas: spec.minReplicas, maxReplicas: spec.maxReplicas };
  const cpu = cpuTarget(metrics);
  if (cpu !== undefined) v1spec.targetCPUUtilizationPercentage = cpu;
  const others = metrics.filter((m) => !(rec(m).type === 'Resource' && rec(rec(m).resource).name === 'cpu' && rec(rec(rec(m).resource).target).type === 'Utilization'));
  const stash: Record<string, string> = {};
  if (others.length) stash[V1_METRICS_ANNOTATION] = JSON.stringify(others);
  if (spec.behavior !== undefined) stash[V1_BEHAVIOR_ANNOTATION] = JSON.stringify(spec.behavior);
  if (Array.isArray(status.conditions) && status.conditions.length) stash[V1_CONDITIONS_ANNOTATION] = JSON.stringify(status.conditions);
  const otherCurrent = arr(status.currentMetrics).filter((m) => !(rec(m).type === 'Resource' && rec(rec(m).resource).name === 'cpu'));
  if (otherCurrent.length) stash[V1_CURRENT_METRICS_ANNOTATION] = JSON.stringify(otherCurrent);
  if (Object.keys(stash).length) out.metadata!.annotations = { ...(out.metadata!.annotations ?? {}), ...stash };
  out.spec = v1spec;
  if (obj.status !== undefined) {
    const v1status: Obj = { currentReplicas: status.currentReplicas ?? 0, desiredReplicas: status.desiredReplicas ?? 0 };
    if (status.observedGeneration !== undefined) v1status.observedGeneration = status.observedGeneration;
    if (status.lastScaleTime !== undefined) v1status.lastScaleTime = status.lastScaleTime;
    for (const m of arr(status.currentMetrics).map(rec)) {
      const r = rec(m.resource);
      if (m.type === 'Resource' && r.name === 'cpu' && typeof rec(r.current).averageUtilization === 'number') v1status.currentCPUUtilizationPercentage = rec(r.current).averageUtilization;
    }
    out.status = v1status;
  }
  return out;
}

function toV2(obj: KubeObject): KubeObject {
  const spec = rec(obj.spec), status = rec(obj.status);
  const meta = structuredClone(obj.metadata ?? {});
  const metrics: unknown[] = [];
  if (typeof spec.targetCPUUtilizationPercentage === 'number') {
    metrics.push({ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: spec.targetCPUUtilizationPercentage } } });
  }
  const extra = takeJson(meta, V1_METRICS_ANNOTATION);
  if (Array.isArray(extra)) metrics.push(...extra);
  const behavior = takeJson(meta, V1_BEHAVIOR_ANNOTATION);
  const conditions = takeJson(meta, V1_CONDITIONS_ANNOTATION);
  const currentExtra = takeJson(meta, V1_CURRENT_METRICS_ANNOTATION);
  const v2spec: Obj = { scaleTargetRef: spec.scaleTargetRef, minReplicas: spec.minReplicas, maxReplicas: spec.maxReplicas };
  if (metrics.length) v2spec.metrics = metrics;
  if (behavior !== undefined) v2spec.behavior = behavior;
  const out: KubeObject = { ...obj, apiVersion: 'autoscaling/v2', metadata: meta, spec: v2spec };
  if (obj.status !== undefined) {
    const s: Obj = { currentReplicas: status.currentReplicas ?? 0, desiredReplicas: status.desiredReplicas ?? 0 };
    if (status.observedGeneration !== undefined) s.observedGeneration = status.observedGeneration;
    if (status.lastScaleTime !== undefined) s.lastScaleTime = status.lastScaleTime;
    const current: unknown[] = [];
    if (typeof status.currentCPUUtilizationPercentage === 'number') {
      current.push({ type: 'Resource', resource: { name: 'cpu', current: { averageUtilization: status.currentCPUUtilizationPercentage } } });
    }
    if (Array.isArray(currentExtra)) current.push(...currentExtra);
    if (current.length) s.currentMetrics = current;
    if (Array.isArray(conditions)) s.conditions = conditions;
    out.status = s;
  }
  return out;
}

function targets(o: KubeObject): string {
  const metrics = arr(path(o, 'spec.metrics')).map(rec), current = arr(path(o, 'status.currentMetrics')).map(rec);
  if (!metrics.length) return '<none>';
  return metrics.map((m, i) => {
    const r = rec(m.resource), t = rec(r.target), c = rec(rec(current[i]).resource).current;
    if (m.type === 'Resource' && t.type === 'Utilization') {
      const cur = rec(c).averageUtilization;
      return `${str(r.name)}: ${cur === undefined ? '<unknown>' : `${String(cur)}%`}/${String(t.averageUtilization)}%`;
    }
    return `${str(m.type).toLowerCase()}: <unknown>`;
  }).join(', ');
}

export const horizontalpodautoscalers = defineResource({
  group: 'autoscaling', versions: ['v2', 'v1'], storageVersion: 'v2', kind: 'HorizontalPodAutoscaler', plural: 'horizontalpodautoscalers', namespaced: true,
  shortNames: ['hpa'], categories: ['all'], subresources: { status: true },
  convert(obj, toVersion) {
    const from = String(obj.apiVersion ?? '').split('/')[1] ?? toVersion;
    if (from === toVersion) return obj;
    return toVersion === 'v1' ? toV1(obj) : toV2(obj);
  },
  defaults(obj) {
    const spec = obj.spec;
    if (!isObject(spec)) return;
    spec.minReplicas ??= 1;
    if (String(obj.apiVersion).endsWith('/v2') && !Array.isArray(spec.metrics)) {
      spec.metrics = [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 80 } } }];
    }
  },
  validateSpec(obj) {
    const errs: FieldError[] = [];
    const spec = rec(obj.spec), ref = rec(spec.scaleTargetRef);
    if (!str(ref.kind)) errs.push(fieldErrors.required('spec.scaleTargetRef.kind'));
    if (!str(ref.name)) errs.push(fieldErrors.required('spec.scaleTargetRef.name'));
    if (typeof spec.minReplicas === 'number' && spec.minReplicas < 1) errs.push(fieldErrors.invalid('spec.minReplicas', spec.minReplicas, 'must be greater than or equal to 1'));
    if (typeof spec.maxReplicas !== 'number' || spec.maxReplicas < 1) errs.push(fieldErrors.invalid('spec.maxReplicas', spec.maxReplicas ?? 0, 'must be greater than 0'));
    else if (spec.maxReplicas < num(spec.minReplicas)) errs.push(fieldErrors.invalid('spec.maxReplicas', spec.maxReplicas, 'must be greater than or equal to `minReplicas`'));
    return errs;
  },
  prepareForCreate(obj) { delete obj.status; },
  prepareForUpdate: statusStrategy.prepareForUpdate,
  columns: [
    col('Reference', 'string', 'reference to scaled resource; horizontal pod autoscaler will learn the current resource consumption and will set the desired number of pods by using its Scale subresource.', (o) => `${str(path(o, 'spec.scaleTargetRef.kind'))}/${str(path(o, 'spec.scaleTargetRef.name'))}`),
    col('Targets', 'string', 'metrics contains the specifications for which to use to calculate the desired replica count.', targets),
    col('MinPods', 'string', 'minReplicas is the lower limit for the number of replicas to which the autoscaler can scale down.', (o) => String(path(o, 'spec.minReplicas') ?? '<unset>')),
    col('MaxPods', 'integer', 'maxReplicas is the upper limit for the number of replicas to which the autoscaler can scale up.', (o) => num(path(o, 'spec.maxReplicas'))),
    col('Replicas', 'integer', 'currentReplicas is current number of replicas of pods managed by this autoscaler.', (o) => num(path(o, 'status.currentReplicas'))),
  ],
});

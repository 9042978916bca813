/**
 * The horizontal pod autoscaler controller (`horizontalpodautoscaling`), as Kubernetes' runs
 * it: every --horizontal-pod-autoscaler-sync-period each HorizontalPodAutoscaler (read as
 * autoscaling/v2; v1 objects are served converted by the API server) is reconciled:
 *   read the target's scale subresource (AbleToScale) → outside [minReplicas, maxReplicas]:
 *   move inside; a target at 0 replicas: scaling disabled; else the metrics' proposal
 *   (ScalingActive) → normalization by behavior or the downscale stabilization
 *   (ScalingLimited) → write the scale when it differs (event SuccessfulRescale) → status
 *   (currentReplicas, desiredReplicas, currentMetrics, lastScaleTime, conditions).
 * Without spec.behavior, an upscale within --horizontal-pod-autoscaler-upscale-delay of the last
 * rescale waits (AbleToScale=False BackoffUp), as the reference's option describes.
 *
 * Contract: one HPA is never reconciled twice at once (work queue); a status is written only
 * when it changed; spec changes are picked up at once, everything else at the next period.
 */
import type { KubeObject } from '../../../../api/resources/types.js';
import type { Controller, ControllerContext } from '../../controller-registry.js';
import { keyOf, WorkQueue, type ResourceRef, type RestClient, type SharedIndexInformer } from '../../deps.js';
import type { EventRecorder } from '../../events.js';
import { defaultedBehavior, ReplicaNormalizer, type Behavior } from './behavior.js';
import { HpaMetricsClient } from './metrics-client.js';
import { MetricsFailed, proposeReplicas } from './metric-specs.js';
import { ScaleClient } from './scale-client.js';
import { sameInGoForm } from '../../../../api/codec/go-json.js';

const HPAS: ResourceRef = { group: 'autoscaling', version: 'v2', resource: 'horizontalpodautoscalers' };
const PODS: ResourceRef = { group: '', version: 'v1', resource: 'pods' };
const WORKERS = 5;

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (typeof v === 'object' && v !== null ? v as Obj : {});

export interface Condition { type: string; status: string; lastTransitionTime?: string; reason: string; message: string }

/** Sets a condition; its lastTransitionTime moves only when its status does. */
export function setCondition(conds: Condition[], type: string, status: string, reason: string, message: string, now: string): void {
  const i = conds.findIndex((c) => c.type === type);
  const had = i >= 0 ? conds[i] : undefined;
  const next: Condition = { type, status, lastTransitionTime: had && had.status === status && had.lastTransitionTime ? had.lastTransitionTime : now, reason, message };
  if (i >= 0) conds[i] = next; else conds.push(next);
}

const rfc3339 = (ms: number): string => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(/\.\d+Z$/, 'Z');

export interface HpaOptions {
  syncPeriodMs: number;
  tolerance: number;
  downscaleStabilizationMs: number;
  upscaleDelayMs: number;
  useRestClients: boolean;
  now?: () => number;
}

export class HorizontalPodAutoscalingController implements Controller {
  readonly name = 'horizontalpodautoscaling';
  private hpas!: SharedIndexInformer;
  private pods!: SharedIndexInformer;
  private client!: RestClient;
  private metrics!: HpaMetricsClient;
  private scales!: ScaleClient;
  private events: EventRecorder | undefined;
  private normalizer!: ReplicaNormalizer;
  private opts!: HpaOptions;

  constructor(private readonly override?: Partial<HpaOptions>) {}

  async run(ctx: ControllerContext): Promise<void> {
    const c = ctx.config;
    this.opts = {
      syncPeriodMs: c.horizontalPodAutoscalerSyncPeriod, tolerance: c.horizontalPodAutoscalerTolerance,
      downscaleStabilizationMs: c.horizontalPodAutoscalerDownscaleDelay, upscaleDelayMs: c.horizontalPodAutoscalerUpscaleDelay,
      useRestClients: c.horizontalPodAutoscalerUseRestClients, ...this.override,
    };
    this.client = ctx.client;
    this.metrics = new HpaMetricsClient(ctx.client);
    this.scales = new ScaleClient(ctx.client);
    this.events = ctx.events?.('horizontal-pod-autoscaler');
    this.normalizer = new ReplicaNormalizer(this.opts.downscaleStabilizationMs, this.opts.now);
    const queue = new WorkQueue({ name: 'horizontalpodautoscaler', log: ctx.log });
    this.hpas = ctx.informers.informerFor(HPAS);
    this.pods = ctx.informers.informerFor(PODS);
    this.hpas.addEventHandler({
      onAdd: (h) => queue.add(keyOf(h)),
      // Our own status writes come back as updates: only a spec change is worth an early look.
      onUpdate: (old, cur) => { if (old.metadata?.generation !== cur.metadata?.generation) queue.add(keyOf(cur)); },
      onDelete: (h) => this.normalizer.forget(keyOf(h as KubeObject)),
    });
    ctx.informers.start(ctx.signal);
    if (!await this.hpas.waitForSync(ctx.signal) || !await this.pods.waitForSync(ctx.signal)) return;
    await queue.runWorkers(WORKERS, async (key) => {
      const hpa = this.hpas.indexer.getByKey(key);
      if (!hpa) return;
      try {
        await this.reconcile(key, hpa);
      } catch (e) {
        ctx.log.warn({ hpa: key, err: (e as Error).message }, 'reconcile failed');
      }
      return { requeueAfterMs: this.opts.syncPeriodMs };
    }, ctx.signal);
    await this.events?.flush();
  }

  private now(): number { return (this.opts.now ?? Date.now)(); }

  /** One round for one HPA (see the file comment). */
  async reconcile(key: string, hpa: KubeObject): Promise<void> {
    const now = this.now();
    const nowText = rfc3339(now);
    const namespace = hpa.metadata?.namespace ?? '';
    const spec = obj(hpa.spec);
    const status = obj(hpa.status);
    const conds: Condition[] = (Array.isArray(status.conditions) ? status.conditions as Condition[] : []).map((x) => ({ ...x }));
    const target = obj(spec.scaleTargetRef);
    const minReplicas = typeof spec.minReplicas === 'number' ? spec.minReplicas : 1;
    const maxReplicas = Number(spec.maxReplicas ?? 1);
    const next: Obj = { ...status, conditions: conds };
    if (hpa.metadata?.generation !== undefined) next.observedGeneration = hpa.metadata.generation;

    let ref: ResourceRef, scale: KubeObject;
    try {
      ref = await this.scales.resourceFor(namespace, { apiVersion: String(target.apiVersion ?? ''), kind: String(target.kind), name: String(target.name) });
      scale = await this.scales.get(ref, String(target.name));
    } catch (e) {
      const message = `the HPA controller was unable to get the target's current scale: ${(e as Error).message}`;
      setCondition(conds, 'AbleToScale', 'False', 'FailedGetScale', message, nowText);
      this.events?.event(hpa, 'Warning', 'FailedGetScale', (e as Error).message);
      await this.writeStatus(hpa, next);
      return;
    }
    setCondition(conds, 'AbleToScale', 'True', 'SucceededGetScale', 'the HPA controller was able to get the target\'s current scale', nowText);
    const currentReplicas = Number(obj(scale.spec).replicas ?? 0);
    next.currentReplicas = Number(obj(scale.status).replicas ?? 0);
    const selector = String(obj(scale.status).selector ?? '');

    let desired: number;
    let reason = '';
    const behavior = spec.behavior ? defaultedBehavior(spec.behavior as Behavior, this.opts.downscaleStabilizationMs / 1000) : undefined;
    if (currentReplicas === 0 && minReplicas !== 0) {
      desired = 0;
      setCondition(conds, 'ScalingActive', 'False', 'ScalingDisabled', 'scaling is disabled since the replica count of the target is zero', nowText);
    } else if (currentReplicas > maxReplicas) {
      desired = maxReplicas;
      reason = 'Current number of replicas above Spec.MaxReplicas';
    } else if (currentReplicas < minReplicas) {
      desired = minReplicas;
      reason = 'Current number of replicas below Spec.MinReplicas';
    } else {
      let proposal;
      try {
        proposal = await proposeReplicas(Array.isArray(spec.metrics) ? spec.metrics : [], {
          namespace, currentReplicas, selector, pods: () => this.pods.indexer.list(), metrics: this.metrics, scale: this.scales,
          tolerance: this.opts.tolerance, restClients: this.opts.useRestClients, now,
        });
      } catch (e) {
        const f = e instanceof MetricsFailed ? e.failure : { reason: 'FailedGetResourceMetric', event: 'FailedComputeMetricsReplicas', message: (e as Error).message };
        setCondition(conds, 'ScalingActive', 'False', f.reason, f.message, nowText);
        this.events?.event(hpa, 'Warning', f.event, f.message);
        this.events?.event(hpa, 'Warning', 'FailedComputeMetricsReplicas', `invalid metrics (${Array.isArray(spec.metrics) ? spec.metrics.length : 0} invalid out of ${Array.isArray(spec.metrics) ? spec.metrics.length : 0}), first error is: ${f.message}`);
        if (e instanceof MetricsFailed) next.currentMetrics = e.statuses.filter((s) => Object.keys(s).length > 1);
        next.desiredReplicas = currentReplicas;
        await this.writeStatus(hpa, next);
        return;
      }
      setCondition(conds, 'ScalingActive', 'True', 'ValidMetricFound', `the HPA was able to successfully calculate a replica count from ${proposal.metricName}`, nowText);
      next.currentMetrics = proposal.statuses;
      const n = behavior
        ? this.normalizer.normalizeWithBehavior(key, currentReplicas, proposal.replicas, minReplicas, maxReplicas, behavior)
        : this.normalizer.normalize(key, currentReplicas, proposal.replicas, minReplicas, maxReplicas);
      setCondition(conds, 'AbleToScale', 'True', n.ableToScale.reason, n.ableToScale.message, nowText);
      setCondition(conds, 'ScalingLimited', n.limited.status, n.limited.reason, n.limited.message, nowText);
      desired = n.replicas;
      if (desired > currentReplicas) reason = `${proposal.metricName} above target`;
      else if (desired < currentReplicas) reason = 'All metrics below target';
      // The reference's upscale delay (HPAs without behavior): no upscale soon after a rescale.
      const last = typeof status.lastScaleTime === 'string' ? Date.parse(status.lastScaleTime) : NaN;
      if (!behavior && desired > currentReplicas && !Number.isNaN(last) && now - last < this.opts.upscaleDelayMs) {
        setCondition(conds, 'AbleToScale', 'False', 'BackoffUp', 'the time since the previous scale is still within the upscale forbidden window', nowText);
        desired = currentReplicas;
      }
    }
    if (desired !== currentReplicas) {
      try {
        await this.scales.update(ref, scale, desired);
      } catch (e) {
        setCondition(conds, 'AbleToScale', 'False', 'FailedUpdateScale', `the HPA controller was unable to update the target scale: ${(e as Error).message}`, nowText);
        this.events?.event(hpa, 'Warning', 'FailedRescale', `New size: ${desired}; reason: ${reason}; error: ${(e as Error).message}`);
        await this.writeStatus(hpa, next);
        return;
      }
      setCondition(conds, 'AbleToScale', 'True', 'SucceededRescale', `the HPA controller was able to update the target scale to ${desired}`, nowText);
      this.events?.event(hpa, 'Normal', 'SuccessfulRescale', `New size: ${desired}; reason: ${reason}`);
      this.normalizer.storeScaleEvent(key, currentReplicas, desired, behavior);
      next.lastScaleTime = nowText;
    }
    next.desiredReplicas = desired;
    await this.writeStatus(hpa, next);
  }

  private async writeStatus(hpa: KubeObject, status: Obj): Promise<void> {
    // The stored status is in Go's form (order, omitted zeros): compare as Kubernetes does.
    if (sameInGoForm('k8s.io.api.autoscaling.v2.HorizontalPodAutoscalerStatus', hpa.status ?? {}, status)) return;
    await this.client.update({ ...HPAS, namespace: hpa.metadata?.namespace ?? '' }, { ...hpa, apiVersion: 'autoscaling/v2', kind: 'HorizontalPodAutoscaler', status }, { subresource: 'status' });
  }
}

export function newHorizontalPodAutoscalingController(override?: Partial<HpaOptions>): Controller {
  return new HorizontalPodAutoscalingController(override);
}

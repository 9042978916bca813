/**
 * From a metric's recommendation to the replicas the autoscaler sets, as Kubernetes'
 * HorizontalController normalizes it (horizontal.go):
 *  - without spec.behavior (v1 objects): the highest recommendation of the last
 *    --horizontal-pod-autoscaler-downscale-stabilization window (the downscale delay), then
 *    min/max and a scale-up of at most max(2×current, 4) per step;
 *  - with spec.behavior (its missing parts defaulted as the API does): the stabilization windows
 *    of both directions (a scale-down window left unset is the downscale delay), then the
 *    policies of the direction (Pods or Percent per period, over the scale events of that
 *    period; selectPolicy Max, Min or Disabled), then min/max.
 * Recommendations and scale events are kept per HPA key; the clock is injected.
 */

export interface ScalingPolicy { type: 'Pods' | 'Percent'; value: number; periodSeconds: number }
export interface ScalingRules { stabilizationWindowSeconds?: number; selectPolicy?: 'Max' | 'Min' | 'Disabled'; policies?: ScalingPolicy[] }
export interface Behavior { scaleUp?: ScalingRules; scaleDown?: ScalingRules }

type Full = Required<ScalingRules>;

/** The API's defaults for a behavior given in part (Kubernetes' GenerateHPAScale{Up,Down}Rules). */
export function defaultedBehavior(b: Behavior, downscaleStabilizationSeconds: number): { scaleUp: Full; scaleDown: Full } {
  const up = b.scaleUp ?? {};
  const down = b.scaleDown ?? {};
  return {
    scaleUp: {
      stabilizationWindowSeconds: up.stabilizationWindowSeconds ?? 0,
      selectPolicy: up.selectPolicy ?? 'Max',
      policies: up.policies?.length ? up.policies : [{ type: 'Pods', value: 4, periodSeconds: 15 }, { type: 'Percent', value: 100, periodSeconds: 15 }],
    },
    scaleDown: {
      stabilizationWindowSeconds: down.stabilizationWindowSeconds ?? downscaleStabilizationSeconds,
      selectPolicy: down.selectPolicy ?? 'Max',
      policies: down.policies?.length ? down.policies : [{ type: 'Percent', value: 100, periodSeconds: 15 }],
    },
  };
}

interface Recommendation { at: number; replicas: number }
interface ScaleEvent { at: number; change: number; outdated: boolean }

export interface Normalized {
  replicas: number;
  /** The AbleToScale condition's reason and message (ScaleUpStabilized, ScaleDownStabilized, ReadyForNewScale). */
  ableToScale: { reason: string; message: string };
  /** ScalingLimited: limited when `replicas` differs from the stabilized recommendation. */
  limited: { status: 'True' | 'False'; reason: string; message: string };
}

const WITHIN = { reason: 'DesiredWithinRange', message: 'the desired count is within the acceptable range' };
const TOO_FEW = { reason: 'TooFewReplicas', message: 'the desired replica count is less than the minimum replica count' };
const TOO_MANY = { reason: 'TooManyReplicas', message: 'the desired replica count is more than the maximum replica count' };
const UP_LIMIT = { reason: 'ScaleUpLimit', message: 'the desired replica count is increasing faster than the maximum scale rate' };
const DOWN_LIMIT = { reason: 'ScaleDownLimit', message: 'the desired replica count is decreasing faster than the maximum scale rate' };
const READY = { reason: 'ReadyForNewScale', message: 'recommended size matches current size' };
const DOWN_STABILIZED = { reason: 'ScaleDownStabilized', message: 'recent recommendations were higher than current one, applying the highest recent recommendation' };
const UP_STABILIZED = { reason: 'ScaleUpStabilized', message: 'recent recommendations were lower than current one, applying the lowest recent recommendation' };

export class ReplicaNormalizer {
  private readonly recommendations = new Map<string, Recommendation[]>();
  private readonly upEvents = new Map<string, ScaleEvent[]>();
  private readonly downEvents = new Map<string, ScaleEvent[]>();

  constructor(private readonly downscaleStabilizationMs: number, private readonly now: () => number = Date.now) {}

  forget(key: string): void {
    this.recommendations.delete(key);
    this.upEvents.delete(key);
    this.downEvents.delete(key);
  }

  /** Records `replicas` at `slot` (replacing one older than `cutoff` when there is one). */
  private record(key: string, replicas: number, oldIndex: number): void {
    const list = this.recommendations.get(key) ?? [];
    const rec = { at: this.now(), replicas };
    if (oldIndex >= 0) list[oldIndex] = rec; else list.push(rec);
    this.recommendations.set(key, list);
  }

  /** Without behavior: stabilize downscales, then min/max and the fixed scale-up limit. */
  normalize(key: string, current: number, desired: number, min: number, max: number): Normalized {
    const cutoff = this.now() - this.downscaleStabilizationMs;
    let stabilized = desired;
    let old = -1;
    (this.recommendations.get(key) ?? []).forEach((r, i) => {
      if (r.at < cutoff) old = i;
      else if (r.replicas > stabilized) stabilized = r.replicas;
    });
    this.record(key, desired, old);
    const ableToScale = stabilized !== desired ? DOWN_STABILIZED : READY;
    const scaleUpLimit = Math.max(2 * current, 4);
    let replicas = stabilized;
    let why = WITHIN;
    const maxAllowed = max > scaleUpLimit ? scaleUpLimit : max;
    const maxWhy = max > scaleUpLimit ? UP_LIMIT : TOO_MANY;
    if (stabilized < min) { replicas = min; why = TOO_FEW; } else if (stabilized > maxAllowed) { replicas = maxAllowed; why = maxWhy; }
    return { replicas, ableToScale, limited: { status: replicas === stabilized ? 'False' : 'True', ...why } };
  }

  /** With behavior (already defaulted). */
  normalizeWithBehavior(key: string, current: number, desired: number, min: number, max: number, b: { scaleUp: Full; scaleDown: Full }): Normalized {
    const now = this.now();
    const upCutoff = now - b.scaleUp.stabilizationWindowSeconds * 1000;
    const downCutoff = now - b.scaleDown.stabilizationWindowSeconds * 1000;
    let up = desired, down = desired, old = -1;
    (this.recommendations.get(key) ?? []).forEach((r, i) => {
      if (r.at > upCutoff) up = Math.min(r.replicas, up);
      if (r.at > downCutoff) down = Math.max(r.replicas, down);
      if (r.at < upCutoff && r.at < downCutoff) old = i;
    });
    let stabilized = current;
    if (stabilized < up) stabilized = up;
    if (stabilized > down) stabilized = down;
    this.record(key, desired, old);
    const ableToScale = stabilized !== desired ? (desired >= current ? UP_STABILIZED : DOWN_STABILIZED) : READY;
    let replicas = stabilized;
    let why = WITHIN;
    if (stabilized > current) {
      let limit = scaleUpLimit(current, this.events(this.upEvents, key), b.scaleUp, now);
      if (limit < current) limit = current;
      const maxAllowed = max > limit ? limit : max;
      if (stabilized > maxAllowed) { replicas = maxAllowed; why = max > limit ? UP_LIMIT : TOO_MANY; }
    } else if (stabilized < current) {
      let limit = scaleDownLimit(current, this.events(this.downEvents, key), b.scaleDown, now);
      if (limit > current) limit = current;
      const minAllowed = min < limit ? limit : min;
      if (stabilized < minAllowed) { replicas = minAllowed; why = min < limit ? DOWN_LIMIT : TOO_FEW; }
    }
    return { replicas, ableToScale, limited: { status: replicas === stabilized ? 'False' : 'True', ...why } };
  }

  private events(m: Map<string, ScaleEvent[]>, key: string): ScaleEvent[] {
    return m.get(key) ?? [];
  }

  /** Remembers a rescale for the rate policies (only HPAs with behavior use them). */
  storeScaleEvent(key: string, from: number, to: number, b: { scaleUp: Full; scaleDown: Full } | undefined): void {
    if (!b || from === to) return;
    const upward = to > from;
    const map = upward ? this.upEvents : this.downEvents;
    const rules = upward ? b.scaleUp : b.scaleDown;
    const longest = Math.max(0, ...rules.policies.map((p) => p.periodSeconds)) * 1000;
    const now = this.now();
    const list = map.get(key) ?? [];
    for (const e of list) if (e.at <= now - longest) e.outdated = true;
    const ev = { at: now, change: Math.abs(to - from), outdated: false };
    const i = list.findIndex((e) => e.outdated);
    if (i >= 0) list[i] = ev; else list.push(ev);
    map.set(key, list);
  }
}

function changeInPeriod(periodSeconds: number, events: readonly ScaleEvent[], now: number): number {
  const cutoff = now - periodSeconds * 1000;
  let sum = 0;
  for (const e of events) if (e.at > cutoff && !e.outdated) sum += e.change;
  return sum;
}

/** Kubernetes' calculateScaleUpLimitWithScalingRules. */
export function scaleUpLimit(current: number, events: readonly ScaleEvent[], rules: Full, now: number): number {
  if (rules.selectPolicy === 'Disabled') return current;
  const pick = rules.selectPolicy === 'Min' ? Math.min : Math.max;
  let result = rules.selectPolicy === 'Min' ? Number.MAX_SAFE_INTEGER : Number.MIN_SAFE_INTEGER;
  for (const p of rules.policies) {
    const start = current - changeInPeriod(p.periodSeconds, events, now);
    const proposed = p.type === 'Pods' ? start + p.value : Math.ceil(start * (1 + p.value / 100));
    result = pick(result, proposed);
  }
  return result;
}

/** Kubernetes' calculateScaleDownLimitWithBehaviors. */
export function scaleDownLimit(current: number, events: readonly ScaleEvent[], rules: Full, now: number): number {
  if (rules.selectPolicy === 'Disabled') return current;
  // The smallest change ('Min') is the highest count.
  const pick = rules.selectPolicy === 'Min' ? Math.max : Math.min;
  let result = rules.selectPolicy === 'Min' ? Number.MIN_SAFE_INTEGER : Number.MAX_SAFE_INTEGER;
  for (const p of rules.policies) {
    const start = current + changeInPeriod(p.periodSeconds, events, now);
    const proposed = p.type === 'Pods' ? start - p.value : Math.trunc(start * (1 - p.value / 100));
    result = pick(result, proposed);
  }
  return result;
}

/**
 * The eviction manager (Kubernetes' kubelet eviction manager, in our terms). Every monitoring
 * interval (and on a memcg notification) it:
 *   1. measures the signals (an injectable source; the host's by default, host-signals.ts);
 *   2. finds the thresholds met — a threshold already met stays met until the signal is above
 *      it by its minimum reclaim (--eviction-minimum-reclaim);
 *   3. sets the pressure conditions from the thresholds met, and keeps a condition for
 *      --eviction-pressure-transition-period after its last observation;
 *   4. keeps the thresholds met longer than their grace period (0 for hard ones);
 *   5. for disk signals first reclaims node-level resources (dead containers, unused images)
 *      and stops when that was enough;
 *   6. evicts at most one pod per pass, in rank.ts' order, with the grace period 0 for hard
 *      thresholds and min(--eviction-max-pod-grace-period, the pod's own) for soft ones.
 * Contract: `run` never throws; a failed measurement skips the pass.
 */
import type { Logger } from 'pino';
import type { Pod } from '../pod-types.js';
import { evictable, rankForSignal, containerRequest, type Candidate, type PodUsage } from './rank.js';
import type { PodRef, PodUsageSource } from './pod-usage.js';
import {
  amountOf, SIGNAL_CONDITION, SIGNAL_RESOURCE, signalOrder, thresholdsMet,
  type Observations, type Signal, type Threshold,
} from './thresholds.js';

export type PressureCondition = 'MemoryPressure' | 'DiskPressure' | 'PIDPressure';

/** A pod the manager may evict, with what it needs to measure and stop it. */
export interface ActivePod extends PodRef {
  readonly pod: Pod;
  /** Stops the pod for good: phase Failed, reason Evicted, this message. */
  evict(message: string, gracePeriodSeconds: number): Promise<void>;
}

export interface NodeReclaimers {
  /** Removes exited containers of pods that are gone or finished; returns bytes freed (0 if unknown). */
  readonly deadContainers?: () => Promise<void>;
  /** Removes unused images until `bytes` are free; returns bytes freed. */
  readonly images?: (bytes: number) => Promise<number>;
}

export interface EvictionManagerOptions {
  readonly thresholds: readonly Threshold[];
  readonly measure: () => Promise<Observations>;
  readonly podUsage: PodUsageSource;
  readonly activePods: () => ActivePod[];
  readonly reclaim?: NodeReclaimers;
  readonly pressureTransitionPeriodMs: number;
  /** --eviction-max-pod-grace-period; <= 0 defers to the pod's own grace period. */
  readonly maxPodGracePeriodSeconds: number;
  /** Kubernetes' housekeeping interval: 10 s. */
  readonly monitoringIntervalMs?: number;
  readonly emit?: (pod: Pod, type: 'Normal' | 'Warning', reason: string, message: string) => void;
  /** Called after a pass whose pressure conditions differ from the last pass' (node status posts at once). */
  readonly onConditionsChange?: () => void;
  readonly log: Logger;
  readonly now?: () => number;
}

export const MONITORING_INTERVAL_MS = 10_000;

function fmtBytes(n: number, signal: Signal): string {
  if (signal === 'pid.available' || signal.endsWith('inodesFree')) return String(Math.round(n));
  const units: [string, number][] = [['Gi', 2 ** 30], ['Mi', 2 ** 20], ['Ki', 2 ** 10]];
  for (const [u, v] of units) if (n >= v && n % v === 0) return `${n / v}${u}`;
  return n >= 2 ** 10 ? `${Math.ceil(n / 2 ** 10)}Ki` : String(Math.round(n));
}

export class EvictionManager {
  private met: Threshold[] = [];
  private readonly firstObserved = new Map<Threshold, number>();
  private readonly conditionSeen = new Map<PressureCondition, number>();
  private kickResolve?: () => void;
  private reported = '';
  private passRunning?: Promise<Pod | undefined>;
  /** The last observations (for tests and the node status). */
  lastObservations: Observations = {};
  evictions = 0;

  constructor(private readonly o: EvictionManagerOptions) {}

  private now(): number { return this.o.now?.() ?? Date.now(); }

  /** Pressure conditions in force now. */
  conditions(): Set<PressureCondition> {
    const out = new Set<PressureCondition>();
    const now = this.now();
    for (const [c, at] of this.conditionSeen) if (now - at < this.o.pressureTransitionPeriodMs || this.metConditions().has(c)) out.add(c);
    return out;
  }

  hasCondition(c: PressureCondition): boolean { return this.conditions().has(c); }

  private metConditions(): Set<PressureCondition> {
    return new Set(this.met.map((t) => SIGNAL_CONDITION[t.signal]));
  }

  /** Asks for a pass as soon as possible (a memcg notification). */
  kick(): void { this.kickResolve?.(); }

  /** One pass; returns the pod evicted, if any. Passes never overlap. */
  synchronize(): Promise<Pod | undefined> {
    this.passRunning ??= this.pass().finally(() => {
      this.passRunning = undefined;
      const now = [...this.conditions()].sort().join(',');
      if (now !== this.reported) { this.reported = now; this.o.onConditionsChange?.(); }
    });
    return this.passRunning;
  }

  private async pass(): Promise<Pod | undefined> {
    if (this.o.thresholds.length === 0) return undefined;
    let obs = await this.o.measure();
    this.lastObservations = obs;
    const now = this.now();
    const fresh = thresholdsMet(this.o.thresholds, obs, false);
    const unresolved = thresholdsMet(this.met, obs, true);
    const met = [...new Set([...fresh, ...unresolved])];
    for (const t of met) if (!this.firstObserved.has(t)) this.firstObserved.set(t, now);
    for (const t of [...this.firstObserved.keys()]) if (!met.includes(t)) this.firstObserved.delete(t);
    const before = this.conditions();
    this.met = met;
    for (const t of met) this.conditionSeen.set(SIGNAL_CONDITION[t.signal], now);
    const after = this.conditions();
    for (const c of after) if (!before.has(c)) this.o.log.warn({ condition: c, signals: met.map((t) => t.signal) }, 'node under pressure');
    for (const c of before) if (!after.has(c)) this.o.log.info({ condition: c }, 'node pressure over');

    const due = met.filter((t) => now - (this.firstObserved.get(t) ?? now) >= t.gracePeriodMs)
      .sort((a, b) => signalOrder(a.signal) - signalOrder(b.signal) || Number(b.hard) - Number(a.hard));
    const target = due[0];
    if (!target) return undefined;
    this.o.log.info({ signal: target.signal, available: obs[target.signal]?.available }, 'eviction threshold met, reclaiming');

    if (target.signal !== 'memory.available' && target.signal !== 'pid.available' && this.o.reclaim) {
      obs = await this.reclaimNodeLevel(target, obs);
      if (thresholdsMet([target], obs, true).length === 0) {
        this.o.log.info({ signal: target.signal }, 'node-level reclaim was enough; no pod evicted');
        return undefined;
      }
    }

    const active = this.o.activePods().filter((p) => evictable(p.pod));
    if (active.length === 0) { this.o.log.warn({ signal: target.signal }, 'eviction threshold met but no pod to evict'); return undefined; }
    const usage = await this.o.podUsage(active);
    const byUid = new Map(active.map((p) => [p.uid, p]));
    const ranked = rankForSignal(target.signal, active.map((p): Candidate => ({ pod: p.pod, usage: usage.get(p.uid) ?? { containers: [] } })));
    for (const c of ranked) {
      const ap = byUid.get(c.pod.metadata?.uid ?? '');
      if (!ap) continue;
      const message = this.message(target, obs, c.pod, c.usage);
      const grace = target.hard ? 0 : this.softGrace(c.pod);
      this.o.log.warn({ pod: `${c.pod.metadata?.namespace}/${c.pod.metadata?.name}`, signal: target.signal, grace }, 'evicting pod');
      this.o.emit?.(c.pod, 'Warning', 'Evicted', message);
      try {
        await ap.evict(message, grace);
        this.evictions++;
        return c.pod;
      } catch (e) {
        this.o.log.warn({ err: (e as Error).message }, 'eviction failed; trying the next pod');
      }
    }
    return undefined;
  }

  private softGrace(pod: Pod): number {
    const own = pod.spec?.terminationGracePeriodSeconds ?? 30;
    const max = this.o.maxPodGracePeriodSeconds;
    return max > 0 ? Math.min(max, own) : own;
  }

  private async reclaimNodeLevel(t: Threshold, obs: Observations): Promise<Observations> {
    const o = obs[t.signal];
    const r = this.o.reclaim;
    if (!o || !r) return obs;
    await r.deadContainers?.().catch((e: Error) => this.o.log.warn({ err: e.message }, 'removing dead containers failed'));
    const want = amountOf(t.value, o.capacity) + (t.minReclaim ? amountOf(t.minReclaim, o.capacity) : 0) - o.available;
    if (want > 0 && !t.signal.endsWith('inodesFree')) {
      const freed = await (r.images?.(want) ?? Promise.resolve(0)).catch((e: Error) => { this.o.log.warn({ err: e.message }, 'image reclaim failed'); return 0; });
      this.o.log.info({ signal: t.signal, wantBytes: Math.round(want), freedBytes: freed }, 'node-level reclaim');
    }
    const again = await this.o.measure();
    this.lastObservations = again;
    return again;
  }

  /** Kubernetes' message: the resource, the threshold and what was left, and the top containers. */
  message(t: Threshold, obs: Observations, pod: Pod, usage: PodUsage): string {
    const resource = SIGNAL_RESOURCE[t.signal];
    const o = obs[t.signal];
    let m = `The node was low on resource: ${resource}. `;
    if (o) m += `Threshold quantity: ${fmtBytes(amountOf(t.value, o.capacity), t.signal)}, available: ${fmtBytes(o.available, t.signal)}. `;
    if (resource === 'memory') {
      for (const c of usage.containers) {
        if (c.memory === undefined) continue;
        const req = containerRequest(pod, c.name, 'memory');
        if (c.memory > req) m += `Container ${c.name} was using ${fmtBytes(c.memory, t.signal)}, request is ${req ? fmtBytes(req, t.signal) : '0'}, has larger consumption of memory. `;
      }
    } else if (resource === 'ephemeral-storage' && usage.disk !== undefined) {
      const names = (pod.spec?.containers ?? []).map((c) => c.name);
      if (names.length === 1) m += `Container ${names[0]} was using ${fmtBytes(usage.disk, t.signal)}, request is ${fmtBytes(containerRequest(pod, names[0]!, 'ephemeral-storage'), t.signal)}, has larger consumption of ephemeral-storage. `;
    }
    return m;
  }

  async run(signal: AbortSignal): Promise<void> {
    const interval = this.o.monitoringIntervalMs ?? MONITORING_INTERVAL_MS;
    while (!signal.aborted) {
      try {
        await this.synchronize();
      } catch (e) {
        this.o.log.warn({ err: (e as Error).message }, 'eviction pass failed');
      }
      if (signal.aborted) break; // aborted during the pass: 'abort' will not fire again
      await new Promise<void>((resolve) => {
        const done = (): void => { clearTimeout(t); signal.removeEventListener('abort', done); this.kickResolve = undefined; resolve(); };
        const t = setTimeout(done, interval);
        this.kickResolve = done;
        signal.addEventListener('abort', done, { once: true });
      });
    }
  }
}

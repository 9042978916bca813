/**
 * Eviction signals and thresholds as Kubernetes' node agent defines them: a threshold is
 * "signal < quantity" or "signal < percentage of capacity", hard (acted on at once) or soft
 * (acted on once it has held for its grace period), with an optional minimum reclaim that
 * keeps a threshold "met" until the signal is that much above it.
 */
import { parseDuration } from '../../../util/duration.js';
import { parseQuantity } from '../../../util/quantity.js';

export const SIGNALS = ['memory.available', 'nodefs.available', 'nodefs.inodesFree', 'imagefs.available', 'imagefs.inodesFree', 'pid.available'] as const;
export type Signal = (typeof SIGNALS)[number];

/** What one signal measured: the free amount and the total it is a part of. */
export interface Observation { readonly available: number; readonly capacity: number }
export type Observations = Partial<Record<Signal, Observation>>;

/** An absolute amount or a fraction (0..1) of capacity. */
export interface ThresholdValue { readonly quantity?: number; readonly percentage?: number }

export interface Threshold {
  readonly signal: Signal;
  readonly value: ThresholdValue;
  /** 0 for hard thresholds. */
  readonly gracePeriodMs: number;
  readonly hard: boolean;
  readonly minReclaim?: ThresholdValue;
}

/** The resource a signal stands for, as eviction messages name it. */
export const SIGNAL_RESOURCE: Readonly<Record<Signal, string>> = {
  'memory.available': 'memory', 'nodefs.available': 'ephemeral-storage', 'nodefs.inodesFree': 'inodes',
  'imagefs.available': 'ephemeral-storage', 'imagefs.inodesFree': 'inodes', 'pid.available': 'pids',
};

/** The node condition a signal drives. */
export const SIGNAL_CONDITION: Readonly<Record<Signal, 'MemoryPressure' | 'DiskPressure' | 'PIDPressure'>> = {
  'memory.available': 'MemoryPressure', 'nodefs.available': 'DiskPressure', 'nodefs.inodesFree': 'DiskPressure',
  'imagefs.available': 'DiskPressure', 'imagefs.inodesFree': 'DiskPressure', 'pid.available': 'PIDPressure',
};

export function isSignal(s: string): s is Signal {
  return (SIGNALS as readonly string[]).includes(s);
}

export function parseThresholdValue(text: string): ThresholdValue {
  const v = text.trim();
  if (v.endsWith('%')) {
    const p = Number(v.slice(0, -1));
    if (!Number.isFinite(p) || p < 0 || p > 100) throw new Error(`invalid percentage ${JSON.stringify(text)}`);
    return { percentage: p / 100 };
  }
  const q = parseQuantity(v);
  if (q < 0) throw new Error(`negative threshold ${JSON.stringify(text)}`);
  return { quantity: q };
}

/** The value in the signal's units for a given capacity. */
export function amountOf(v: ThresholdValue, capacity: number): number {
  return v.quantity ?? (v.percentage ?? 0) * capacity;
}

export interface ThresholdConfig {
  readonly evictionHard: Readonly<Record<string, string>>;
  readonly evictionSoft: Readonly<Record<string, string>>;
  readonly evictionSoftGracePeriod: Readonly<Record<string, number | string>>;
  readonly evictionMinimumReclaim: Readonly<Record<string, string>>;
}

function durationMs(v: number | string): number {
  return typeof v === 'number' ? v : parseDuration(v);
}

/** The thresholds of the options; a zero threshold ("<0", "<0%") disables its signal, as in Kubernetes. */
export function thresholdsFromConfig(c: ThresholdConfig): Threshold[] {
  const out: Threshold[] = [];
  const add = (map: Readonly<Record<string, string>>, hard: boolean): void => {
    for (const [signal, text] of Object.entries(map)) {
      if (!isSignal(signal)) continue; // the option parser rejects unknown ones
      const value = parseThresholdValue(text);
      if (amountOf(value, 1) === 0) continue;
      const min = c.evictionMinimumReclaim[signal];
      const grace = hard ? 0 : durationMs(c.evictionSoftGracePeriod[signal] ?? 0);
      out.push({ signal, value, hard, gracePeriodMs: grace, ...(min ? { minReclaim: parseThresholdValue(min) } : {}) });
    }
  };
  add(c.evictionHard, true);
  add(c.evictionSoft, false);
  return out;
}

/** Thresholds whose signal is below their value (plus the minimum reclaim when asked). */
export function thresholdsMet(thresholds: readonly Threshold[], obs: Observations, withMinReclaim: boolean): Threshold[] {
  return thresholds.filter((t) => {
    const o = obs[t.signal];
    if (!o) return false;
    const extra = withMinReclaim && t.minReclaim ? amountOf(t.minReclaim, o.capacity) : 0;
    return o.available < amountOf(t.value, o.capacity) + extra;
  });
}

/** Kubernetes reclaims memory first, then disk, then PIDs. */
export function signalOrder(s: Signal): number {
  return s === 'memory.available' ? 0 : s === 'pid.available' ? 2 : 1;
}

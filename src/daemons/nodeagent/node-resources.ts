/**
 * Node capacity and allocatable, as Kubernetes computes them:
 *   pods        = min(--max-pods, --pods-per-core x cores) when --pods-per-core > 0
 *   allocatable = capacity - --core-reserved - --system-reserved - hard eviction thresholds
 * (the last only for memory.available and nodefs.available, and not with
 * --experimental-allocatable-ignore-eviction). Quantities are written in canonical forms:
 * cpu in cores or millicores, bytes with Ki.
 */
import { parseQuantity } from '../../util/quantity.js';
import type { HostFacts } from './host-facts.js';

export interface ResourceConfig {
  readonly maxPods: number;
  readonly podsPerCore: number;
  readonly coreReserved: Readonly<Record<string, string>>;
  readonly systemReserved: Readonly<Record<string, string>>;
  readonly evictionHard: Readonly<Record<string, string>>;
  readonly ignoreEviction: boolean;
}

export interface NodeResources {
  readonly capacity: Record<string, string>;
  readonly allocatable: Record<string, string>;
  readonly maxPods: number;
}

function cpuText(milli: number): string {
  return milli % 1000 === 0 ? String(milli / 1000) : `${milli}m`;
}

function bytesText(bytes: number): string {
  const b = Math.max(0, Math.floor(bytes));
  return b % 1024 === 0 ? `${b / 1024}Ki` : String(b);
}

/** Parses an eviction threshold value: an absolute quantity or a percentage of `capacity`. */
function threshold(value: string | undefined, capacity: number): number {
  if (!value) return 0;
  const v = value.trim();
  if (v.endsWith('%')) return (Number(v.slice(0, -1)) / 100) * capacity;
  try { return parseQuantity(v); } catch { return 0; }
}

function reserved(maps: readonly Readonly<Record<string, string>>[], key: string): number {
  let sum = 0;
  for (const m of maps) {
    const v = m[key];
    if (v) { try { sum += parseQuantity(v); } catch { /* rejected by the option parser */ } }
  }
  return sum;
}

export function nodeResources(host: HostFacts, c: ResourceConfig): NodeResources {
  let pods = c.maxPods;
  if (c.podsPerCore > 0) pods = Math.min(pods, c.podsPerCore * host.cpuCores);
  const maps = [c.coreReserved, c.systemReserved];
  const cpuMilli = host.cpuCores * 1000;
  const evMem = c.ignoreEviction ? 0 : threshold(c.evictionHard['memory.available'], host.memoryBytes);
  const evDisk = c.ignoreEviction ? 0 : threshold(c.evictionHard['nodefs.available'], host.ephemeralStorageBytes);
  const allocCpu = Math.max(0, cpuMilli - Math.round(reserved(maps, 'cpu') * 1000));
  const allocMem = Math.max(0, host.memoryBytes - reserved(maps, 'memory') - evMem);
  const allocEph = Math.max(0, host.ephemeralStorageBytes - reserved(maps, 'ephemeral-storage') - evDisk);
  return {
    maxPods: pods,
    capacity: {
      cpu: cpuText(cpuMilli), memory: bytesText(host.memoryBytes), 'ephemeral-storage': bytesText(host.ephemeralStorageBytes),
      pods: String(pods), 'hugepages-1Gi': '0', 'hugepages-2Mi': '0',
    },
    allocatable: {
      cpu: cpuText(allocCpu), memory: bytesText(allocMem), 'ephemeral-storage': String(Math.floor(allocEph)),
      pods: String(pods), 'hugepages-1Gi': '0', 'hugepages-2Mi': '0',
    },
  };
}

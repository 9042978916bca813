/**
 * What a pod's cgroup gets, as Kubernetes' node agent computes it (ResourceConfigForPod):
 * requests and limits summed over the containers (an init container counts when it asks for
 * more than all of them together), then by QoS class:
 *   Guaranteed  cpu.shares from requests, CFS quota from limits, memory limit
 *   Burstable   cpu.shares; quota only when every container limits cpu, memory limit only when
 *               every container limits memory
 *   BestEffort  cpu.shares 2 and nothing else
 * --cpu-cfs-quota=false leaves quota unlimited (-1).
 */
import { qosClass } from '../../../api/resources/core/pod-qos.js';
import { parseQuantity } from '../../../util/quantity.js';
import type { Container, Pod } from '../pod-types.js';
import type { CgroupResources } from './cgroup-fs.js';
import type { QosClass } from './cgroup-name.js';

export const MIN_SHARES = 2;
export const MAX_SHARES = 262_144;
export const CFS_PERIOD_US = 100_000;
const MIN_QUOTA_US = 1000;

export function milliCpuToShares(milli: number): number {
  if (milli <= 0) return MIN_SHARES;
  return Math.min(MAX_SHARES, Math.max(MIN_SHARES, Math.floor((milli * 1024) / 1000)));
}

/** 0 (no quota) for no limit. */
export function milliCpuToQuota(milli: number, periodUs = CFS_PERIOD_US): number {
  if (milli <= 0) return 0;
  return Math.max(MIN_QUOTA_US, Math.floor((milli * periodUs) / 1000));
}

export function podQos(pod: Pod): QosClass {
  return qosClass(pod.spec) as QosClass;
}

function quantity(v: string | number | undefined): number | undefined {
  if (v === undefined) return undefined;
  try { return parseQuantity(String(v)); } catch { return undefined; }
}

/** One container's cpu (millicores) and memory (bytes) requests and limits; a request defaults to the limit. */
export function containerAmounts(c: Container): { cpuReq: number; memReq: number; cpuLim?: number; memLim?: number } {
  const req = c.resources?.requests ?? {};
  const lim = c.resources?.limits ?? {};
  const cpuLimQ = quantity(lim.cpu);
  const memLimQ = quantity(lim.memory);
  const cpuLim = cpuLimQ === undefined ? undefined : Math.round(cpuLimQ * 1000);
  const memLim = memLimQ === undefined ? undefined : Math.floor(memLimQ);
  const cpuReqQ = quantity(req.cpu);
  const memReqQ = quantity(req.memory);
  return {
    cpuReq: cpuReqQ !== undefined ? Math.round(cpuReqQ * 1000) : cpuLim ?? 0,
    memReq: memReqQ !== undefined ? Math.floor(memReqQ) : memLim ?? 0,
    ...(cpuLim !== undefined ? { cpuLim } : {}),
    ...(memLim !== undefined ? { memLim } : {}),
  };
}

export interface PodAmounts {
  readonly cpuReq: number;
  readonly memReq: number;
  /** Undefined when some container has no limit. */
  readonly cpuLim?: number;
  readonly memLim?: number;
}

export function podAmounts(pod: Pod): PodAmounts {
  const main = (pod.spec?.containers ?? []).map(containerAmounts);
  const init = (pod.spec?.initContainers ?? []).map(containerAmounts);
  const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);
  const max = (xs: number[]): number => xs.reduce((a, b) => Math.max(a, b), 0);
  const allLimit = (k: 'cpuLim' | 'memLim'): boolean => [...main, ...init].every((x) => x[k] !== undefined);
  const cpuLim = allLimit('cpuLim') ? Math.max(sum(main.map((x) => x.cpuLim ?? 0)), max(init.map((x) => x.cpuLim ?? 0))) : undefined;
  const memLim = allLimit('memLim') ? Math.max(sum(main.map((x) => x.memLim ?? 0)), max(init.map((x) => x.memLim ?? 0))) : undefined;
  return {
    cpuReq: Math.max(sum(main.map((x) => x.cpuReq)), max(init.map((x) => x.cpuReq))),
    memReq: Math.max(sum(main.map((x) => x.memReq)), max(init.map((x) => x.memReq))),
    ...(cpuLim !== undefined ? { cpuLim } : {}),
    ...(memLim !== undefined ? { memLim } : {}),
  };
}

export function podCgroupResources(pod: Pod, cfsQuota: boolean): CgroupResources {
  const qos = podQos(pod);
  const a = podAmounts(pod);
  if (qos === 'BestEffort') return { cpuShares: MIN_SHARES };
  const shares = milliCpuToShares(a.cpuReq);
  const out: { -readonly [K in keyof CgroupResources]: CgroupResources[K] } = { cpuShares: shares };
  if (a.cpuLim !== undefined) {
    out.cpuPeriod = CFS_PERIOD_US;
    out.cpuQuota = cfsQuota ? milliCpuToQuota(a.cpuLim) || -1 : -1;
  }
  if (a.memLim !== undefined) out.memoryLimit = a.memLim;
  return out;
}

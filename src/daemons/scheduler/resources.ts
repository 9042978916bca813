/**
 * Resource arithmetic: quantities become integers (cpu in millicores, everything else in its
 * base unit, rounded up as Kubernetes does), and a pod's effective request is computed the way
 * Kubernetes computes it:
 *
 *   containers sum (+ sidecars, i.e. init containers with restartPolicy Always), versus the
 *   largest single init container (plus the sidecars started before it), whichever is larger,
 *   plus spec.overhead.
 *
 * Missing requests fall back to limits (what API defaulting does). The "non-zero" variant
 * counts a container without a cpu/memory request as 100m / 200Mi: scoring uses it so that
 * pods with no requests still spread by load.
 */
import { parseQuantity } from '../../util/quantity.js';
import type { Container, Pod, ResourceList } from './types.js';

export type Resources = Record<string, number>;

export const CPU = 'cpu';
export const MEMORY = 'memory';
export const EPHEMERAL_STORAGE = 'ephemeral-storage';
export const PODS = 'pods';

export const DEFAULT_MILLI_CPU_REQUEST = 100;
export const DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024;

/** One quantity as an integer: millicores for cpu, base units otherwise (rounded up). */
export function quantityValue(resource: string, q: string | number | undefined): number {
  if (q === undefined || q === '') return 0;
  let v: number;
  try { v = typeof q === 'number' ? q : parseQuantity(String(q)); } catch { return 0; }
  if (resource === CPU) v *= 1000;
  // Absorb float noise (0.1 * 1000 = 100.00000000000001) before rounding up.
  return Math.ceil(v - 1e-6);
}

export function toResources(list: ResourceList | undefined): Resources {
  const out: Resources = {};
  for (const [k, v] of Object.entries(list ?? {})) out[k] = quantityValue(k, v);
  return out;
}

function addInto(into: Resources, r: Resources): void {
  for (const [k, v] of Object.entries(r)) into[k] = (into[k] ?? 0) + v;
}

function maxInto(into: Resources, r: Resources): void {
  for (const [k, v] of Object.entries(r)) if (v > (into[k] ?? 0)) into[k] = v;
}

function containerRequests(c: Container, nonZero: boolean): Resources {
  const req = toResources(c.resources?.requests);
  const lim = toResources(c.resources?.limits);
  for (const [k, v] of Object.entries(lim)) if (req[k] === undefined) req[k] = v;
  if (nonZero) {
    if (!req[CPU]) req[CPU] = DEFAULT_MILLI_CPU_REQUEST;
    if (!req[MEMORY]) req[MEMORY] = DEFAULT_MEMORY_REQUEST;
  }
  return req;
}

function effective(pod: Pod, nonZero: boolean): Resources {
  const spec = pod.spec ?? {};
  const total: Resources = {};
  for (const c of spec.containers ?? []) addInto(total, containerRequests(c, nonZero));
  const sidecars: Resources = {};
  const initMax: Resources = {};
  for (const ic of spec.initContainers ?? []) {
    const r = containerRequests(ic, nonZero);
    if (ic.restartPolicy === 'Always') {
      // A sidecar keeps running next to the app containers and the later init containers.
      addInto(total, r);
      addInto(sidecars, r);
      maxInto(initMax, sidecars);
    } else {
      const during = { ...r };
      addInto(during, sidecars);
      maxInto(initMax, during);
    }
  }
  maxInto(total, initMax);
  addInto(total, toResources(spec.overhead));
  return reportOrder(total);
}

const FIRST = [CPU, MEMORY, EPHEMERAL_STORAGE];

/** Keys in Kubernetes' report order (cpu, memory, ephemeral-storage, then by name), so filters need not sort. */
function reportOrder(r: Resources): Resources {
  const out: Resources = {};
  for (const k of FIRST) if (r[k] !== undefined) out[k] = r[k];
  for (const k of Object.keys(r).sort()) if (!FIRST.includes(k)) out[k] = r[k] as number;
  return out;
}

/** The pod's effective request per resource (cpu in millicores). */
export function podRequests(pod: Pod): Resources {
  return effective(pod, false);
}

/** As podRequests, with 100m cpu / 200Mi memory for containers that request none (scoring). */
export function podNonZeroRequests(pod: Pod): Resources {
  const r = effective(pod, true);
  return { [CPU]: r[CPU] ?? 0, [MEMORY]: r[MEMORY] ?? 0 };
}

/** A node's allocatable resources (capacity when allocatable is absent). */
export function nodeAllocatable(node: { status?: { allocatable?: ResourceList; capacity?: ResourceList } }): Resources {
  return toResources(node.status?.allocatable ?? node.status?.capacity);
}

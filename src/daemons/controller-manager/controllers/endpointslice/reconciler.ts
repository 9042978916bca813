/**
 * Plans the EndpointSlice writes of one service (Kubernetes' endpointslice reconciler), as a
 * pure function of the service, its pods, the nodes and its current managed slices:
 *  - slices per address type of the service, and within one, per distinct set of ports (pods
 *    whose named ports resolve differently land in different slices);
 *  - existing slices are kept and changed in place: an endpoint that went is removed, one that
 *    changed is replaced; new endpoints fill the slices being changed anyway (fullest first),
 *    then the unchanged slice that would be closest to full, then new slices, never past
 *    maxEndpointsPerSlice;
 *  - a slice left without endpoints is deleted; a service with no endpoints at all keeps one
 *    empty placeholder slice per address type;
 *  - slices of an address type the service no longer has, or not owned by this service (an old
 *    service of the same name), are deleted; creates replace deletes by updating the doomed
 *    slice instead where it is owned by the service and of the same address type.
 */
import type { KubeObject } from '../../../../api/resources/types.js';
import { LABEL_MANAGED_BY, LABEL_SERVICE_NAME } from '../../../../api/resources/discovery/endpointslices.js';
import { canonicalJson, newControllerRef } from '../controller-utils.js';
import { HEADLESS_LABEL, isHeadless, podInEndpoints } from '../service-selector.js';
import {
  addressTypesOf, endpointChanged, endpointKey, endpointPortsFor, podToEndpoint, portMapKey,
  type Endpoint, type EndpointPort,
} from './desired.js';

/** The managed-by value of this controller's slices. */
export const CONTROLLER_NAME = 'endpointslice-controller.k8s.io';
const RESERVED_LABELS = new Set([LABEL_SERVICE_NAME, LABEL_MANAGED_BY, HEADLESS_LABEL]);

type Dict = Record<string, unknown>;

export interface PlanInput {
  service: KubeObject;
  /** The pods the service selects. */
  pods: readonly KubeObject[];
  /** The slices labelled as this controller's for the service (none being deleted). */
  existing: readonly KubeObject[];
  node(name: string): KubeObject | undefined;
  maxEndpointsPerSlice: number;
}

export interface SlicePlan {
  create: KubeObject[];
  update: KubeObject[];
  delete: KubeObject[];
  /** Pods left out because their node is unknown (the sync is retried for them). */
  skipped: string[];
}

function endpointsOf(slice: KubeObject): unknown[] {
  return Array.isArray(slice.endpoints) ? slice.endpoints : [];
}

function ownedBy(slice: KubeObject, svc: KubeObject): boolean {
  return (slice.metadata?.ownerReferences ?? []).some((o) => o.uid === svc.metadata?.uid && o.kind === 'Service' && o.apiVersion === 'v1');
}

/**
 * The labels a slice of the service should carry: the service's own (the reserved ones
 * excepted), the headless marker, the service name and our managed-by. `changed` says whether
 * the service's labels differ from the slice's (changes to reserved labels alone do not count).
 */
function sliceLabels(slice: KubeObject | undefined, svc: KubeObject): { labels: Record<string, string>; changed: boolean } {
  const own = (l: Record<string, string> | undefined): Record<string, string> =>
    Object.fromEntries(Object.entries(l ?? {}).filter(([k]) => !RESERVED_LABELS.has(k)));
  const labels = own(svc.metadata?.labels);
  const changed = canonicalJson(own(slice?.metadata?.labels)) !== canonicalJson(labels);
  if (isHeadless(svc)) labels[HEADLESS_LABEL] = '';
  labels[LABEL_SERVICE_NAME] = svc.metadata?.name ?? '';
  labels[LABEL_MANAGED_BY] = CONTROLLER_NAME;
  return { labels, changed };
}

function newSlice(svc: KubeObject, addressType: string, ports: EndpointPort[]): KubeObject {
  const m = svc.metadata ?? {};
  return {
    apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice',
    metadata: {
      generateName: `${m.name ?? ''}-`, namespace: m.namespace ?? '', labels: sliceLabels(undefined, svc).labels,
      ownerReferences: [newControllerRef(svc, 'v1', 'Service')],
    },
    addressType, endpoints: [], ports,
  };
}

function isPlaceholder(slice: KubeObject, placeholder: KubeObject): boolean {
  return slice.metadata?.namespace === placeholder.metadata?.namespace && slice.addressType === placeholder.addressType
    && canonicalJson(slice.metadata?.labels ?? {}) === canonicalJson(placeholder.metadata?.labels ?? {})
    && endpointsOf(slice).length === 0 && (Array.isArray(slice.ports) ? slice.ports.length : 0) === 0;
}

interface Desired { ports: EndpointPort[]; endpoints: Map<string, Endpoint> }

/** Pops up to `room` desired endpoints (insertion order) into `slice`. */
function fill(slice: KubeObject, desired: Map<string, Endpoint>, max: number): void {
  const eps = endpointsOf(slice);
  for (const [k, ep] of desired) {
    if (eps.length >= max) break;
    eps.push(ep);
    desired.delete(k);
  }
  slice.endpoints = eps;
}

/** The unchanged slice that comes closest to full with `n` more endpoints, if any fits them. */
function sliceToFill(slices: KubeObject[], n: number, max: number): KubeObject | undefined {
  let best: KubeObject | undefined, bestDiff = max;
  for (const s of slices) {
    const diff = max - (n + endpointsOf(s).length);
    if (diff >= 0 && diff < bestDiff) { best = s; bestDiff = diff; if (diff === 0) break; }
  }
  return best;
}

function byPortMapping(svc: KubeObject, existing: KubeObject[], desired: Map<string, Endpoint>, addressType: string, ports: EndpointPort[], max: number): Pick<SlicePlan, 'create' | 'update' | 'delete'> {
  const update: KubeObject[] = [], del: KubeObject[] = [], unchanged: KubeObject[] = [];
  // 1. Keep what is still desired, replace what changed, drop what went.
  for (const slice of existing) {
    const kept: Endpoint[] = [];
    let changedEndpoint = false;
    for (const ep of endpointsOf(slice)) {
      const key = endpointKey(ep);
      const want = desired.get(key);
      if (!want) continue;
      kept.push(want);
      if (endpointChanged(want, ep)) changedEndpoint = true;
      desired.delete(key);
    }
    const { labels, changed: labelsChanged } = sliceLabels(slice, svc);
    if (changedEndpoint || kept.length !== endpointsOf(slice).length) {
      if (kept.length === 0) del.push(slice);
      else update.push({ ...structuredClone(slice), endpoints: kept, metadata: { ...structuredClone(slice.metadata), labels } });
    } else if (labelsChanged) {
      update.push({ ...structuredClone(slice), metadata: { ...structuredClone(slice.metadata), labels } });
    } else {
      unchanged.push(slice);
    }
  }
  // 2. Slices written anyway take new endpoints first, fullest first.
  if (desired.size && update.length) {
    for (const s of [...update].sort((a, b) => endpointsOf(b).length - endpointsOf(a).length)) fill(s, desired, max);
  }
  // 3. Then the unchanged slice closest to full, else new slices.
  const create: KubeObject[] = [];
  while (desired.size) {
    const target = desired.size < max ? sliceToFill(unchanged, desired.size, max) : undefined;
    if (target) {
      unchanged.splice(unchanged.indexOf(target), 1);
      const copy = structuredClone(target);
      fill(copy, desired, max);
      update.push(copy);
    } else {
      const s = newSlice(svc, addressType, ports);
      fill(s, desired, max);
      create.push(s);
    }
  }
  return { create, update, delete: del };
}

function byAddressType(input: PlanInput, existing: KubeObject[], addressType: string, skipped: Set<string>): Pick<SlicePlan, 'create' | 'update' | 'delete'> {
  const svc = input.service;
  const plan: Pick<SlicePlan, 'create' | 'update' | 'delete'> = { create: [], update: [], delete: [] };
  const existingByPorts = new Map<string, KubeObject[]>();
  for (const s of existing) {
    if (!ownedBy(s, svc)) { plan.delete.push(s); continue; }
    const key = portMapKey(s.ports);
    existingByPorts.set(key, [...(existingByPorts.get(key) ?? []), s]);
  }
  const desiredByPorts = new Map<string, Desired>();
  const publishNotReady = (svc.spec as Dict | undefined)?.publishNotReadyAddresses === true;
  for (const pod of input.pods) {
    if (!podInEndpoints(pod, true)) continue;
    const ports = endpointPortsFor(svc, pod);
    const key = portMapKey(ports);
    let d = desiredByPorts.get(key);
    if (!d) desiredByPorts.set(key, d = { ports, endpoints: new Map() });
    const nodeName = String((pod.spec as Dict | undefined)?.nodeName ?? '');
    const node = input.node(nodeName);
    // A pod on an unknown node is left out (unless not-ready addresses are published anyway),
    // so a pod whose node went cannot hold the slices stale; the sync is retried.
    if (!node && !publishNotReady) { skipped.add(pod.metadata?.name ?? ''); continue; }
    const ep = podToEndpoint(pod, node, svc, addressType);
    if (ep.addresses.length) d.endpoints.set(endpointKey(ep), ep);
  }
  for (const [key, d] of desiredByPorts) {
    const p = byPortMapping(svc, existingByPorts.get(key) ?? [], d.endpoints, addressType, d.ports, input.maxEndpointsPerSlice);
    plan.create.push(...p.create); plan.update.push(...p.update); plan.delete.push(...p.delete);
  }
  for (const [key, slices] of existingByPorts) if (!desiredByPorts.has(key)) plan.delete.push(...slices);
  if (existing.length === plan.delete.length && plan.create.length === 0) {
    const placeholder = newSlice(svc, addressType, []);
    if (plan.delete.length === 1 && isPlaceholder(plan.delete[0]!, placeholder)) plan.delete = [];
    else plan.create.push(placeholder);
  }
  return plan;
}

/**
 * Turns creates into updates of slices that would be deleted (owned, same address type), so a
 * changed port set or placeholder reuses its slice instead of deleting and creating one.
 */
function reuseDeleted(plan: SlicePlan, svc: KubeObject): void {
  for (let i = 0; i < plan.delete.length && plan.create.length;) {
    const doomed = plan.delete[i]!, fresh = plan.create[plan.create.length - 1]!;
    if (doomed.addressType === fresh.addressType && ownedBy(doomed, svc)) {
      plan.create.pop();
      plan.delete.splice(i, 1);
      plan.update.push({
        ...fresh,
        metadata: { ...structuredClone(doomed.metadata), labels: fresh.metadata?.labels, ownerReferences: fresh.metadata?.ownerReferences },
      });
    } else {
      i++;
    }
  }
}

export function planSlices(input: PlanInput): SlicePlan {
  const types = addressTypesOf(input.service);
  const plan: SlicePlan = { create: [], update: [], delete: [], skipped: [] };
  const skipped = new Set<string>();
  const byType = new Map<string, KubeObject[]>();
  for (const s of input.existing) {
    const t = String(s.addressType ?? '');
    if (!types.includes(t)) plan.delete.push(s);
    else byType.set(t, [...(byType.get(t) ?? []), s]);
  }
  for (const t of types) {
    const p = byAddressType(input, byType.get(t) ?? [], t, skipped);
    plan.create.push(...p.create); plan.update.push(...p.update); plan.delete.push(...p.delete);
  }
  reuseDeleted(plan, input.service);
  plan.skipped = [...skipped];
  return plan;
}

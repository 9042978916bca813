/**
 * What an object uses of a ResourceQuota, as Kubernetes' quota evaluators count it. Shared by
 * the API server's ResourceQuota admission (the usage a write adds) and the controller
 * manager's resourcequota controller (the usage a namespace has).
 *
 * Resource names: object counts `count/<plural>[.<group>]` for every resource, and the legacy
 * names pods, services, replicationcontrollers, resourcequotas, secrets, configmaps,
 * persistentvolumeclaims, services.nodeports, services.loadbalancers; pod compute
 * requests.<r> / limits.<r> (cpu and memory also bare: `cpu` is requests.cpu) for every
 * resource the containers name; claim storage requests.storage and the per-class
 * `<class>.storageclass.storage.k8s.io/requests.storage` and `/persistentvolumeclaims`.
 *
 * Contract: amounts are numbers (cpu in cores, bytes otherwise); `formatAmount` writes them as
 * quantities. A terminal pod (Succeeded, Failed) or one whose deletion grace has run out uses
 * nothing. Scopes (Terminating, NotTerminating, BestEffort, NotBestEffort and scopeSelector on
 * PriorityClass) apply to pods only; a quota with scopes covers no other object.
 */
import type { KubeObject } from '../resources/types.js';
import { parseQuantity } from '../../util/quantity.js';
import { qosClass } from '../resources/core/pod-qos.js';

export type Usage = Record<string, number>;
type Dict = Record<string, unknown>;
const isDict = (v: unknown): v is Dict => typeof v === 'object' && v !== null && !Array.isArray(v);
const list = (v: unknown): Dict[] => (Array.isArray(v) ? v.filter(isDict) : []);

export function amount(q: unknown): number {
  if (typeof q === 'number') return q;
  if (typeof q !== 'string') return 0;
  try { return parseQuantity(q); } catch { return 0; }
}

const LEGACY_COUNTS: Readonly<Record<string, string>> = {
  pods: 'pods', services: 'services', replicationcontrollers: 'replicationcontrollers', resourcequotas: 'resourcequotas',
  secrets: 'secrets', configmaps: 'configmaps', persistentvolumeclaims: 'persistentvolumeclaims',
};

/** `count/<plural>` for the core group, `count/<plural>.<group>` otherwise. */
export function countName(group: string, plural: string): string {
  return group ? `count/${plural}.${group}` : `count/${plural}`;
}

export function isTerminalPod(pod: KubeObject, nowMs = Date.now()): boolean {
  const phase = (pod.status as Dict | undefined)?.phase;
  if (phase === 'Succeeded' || phase === 'Failed') return true;
  const deleting = pod.metadata?.deletionTimestamp;
  if (!deleting) return false;
  const grace = pod.metadata?.deletionGracePeriodSeconds ?? 0;
  return Date.parse(deleting) + grace * 1000 < nowMs;
}

function add(u: Usage, name: string, v: number): void {
  u[name] = (u[name] ?? 0) + v;
}

/** A pod's effective requests or limits: containers summed, or the largest init container when that is more, plus overhead. */
function podTotals(spec: Dict, field: 'requests' | 'limits'): Usage {
  const of = (c: Dict): Dict => (isDict(c.resources) && isDict(c.resources[field]) ? c.resources[field] as Dict : {});
  const sum: Usage = {};
  for (const c of list(spec.containers)) for (const [k, v] of Object.entries(of(c))) add(sum, k, amount(v));
  for (const c of list(spec.initContainers)) {
    for (const [k, v] of Object.entries(of(c))) if (amount(v) > (sum[k] ?? 0)) sum[k] = amount(v);
  }
  if (isDict(spec.overhead)) for (const [k, v] of Object.entries(spec.overhead)) add(sum, k, amount(v));
  return sum;
}

function podUsage(pod: KubeObject): Usage {
  if (isTerminalPod(pod)) return {};
  const spec = isDict(pod.spec) ? pod.spec : {};
  const u: Usage = { pods: 1, 'count/pods': 1 };
  for (const [k, v] of Object.entries(podTotals(spec, 'requests'))) {
    u[`requests.${k}`] = v;
    if (k === 'cpu' || k === 'memory' || k === 'ephemeral-storage') u[k] = v;
  }
  for (const [k, v] of Object.entries(podTotals(spec, 'limits'))) u[`limits.${k}`] = v;
  return u;
}

function serviceUsage(svc: KubeObject): Usage {
  const spec = isDict(svc.spec) ? svc.spec : {};
  const u: Usage = { services: 1, 'count/services': 1 };
  if (spec.type === 'NodePort' || spec.type === 'LoadBalancer') u['services.nodeports'] = list(spec.ports).length;
  if (spec.type === 'LoadBalancer') u['services.loadbalancers'] = 1;
  return u;
}

function claimUsage(pvc: KubeObject): Usage {
  const spec = isDict(pvc.spec) ? pvc.spec : {};
  const requested = amount(isDict(spec.resources) && isDict(spec.resources.requests) ? spec.resources.requests.storage : undefined);
  const allocated = amount(isDict(pvc.status) && isDict(pvc.status.allocatedResources) ? pvc.status.allocatedResources.storage : undefined);
  const storage = Math.max(requested, allocated);
  const u: Usage = { persistentvolumeclaims: 1, 'count/persistentvolumeclaims': 1, 'requests.storage': storage };
  const cls = typeof spec.storageClassName === 'string' && spec.storageClassName ? spec.storageClassName
    : pvc.metadata?.annotations?.['volume.beta.kubernetes.io/storage-class'];
  if (cls) {
    u[`${cls}.storageclass.storage.k8s.io/requests.storage`] = storage;
    u[`${cls}.storageclass.storage.k8s.io/persistentvolumeclaims`] = 1;
  }
  return u;
}

/** Everything `obj` (of resource group/plural) counts toward. */
export function usageOf(group: string, plural: string, obj: KubeObject): Usage {
  if (group === '' && plural === 'pods') return podUsage(obj);
  if (group === '' && plural === 'services') return serviceUsage(obj);
  if (group === '' && plural === 'persistentvolumeclaims') return claimUsage(obj);
  const u: Usage = { [countName(group, plural)]: 1 };
  if (group === '' && LEGACY_COUNTS[plural]) u[LEGACY_COUNTS[plural]] = 1;
  return u;
}

/** The resource (group, plural) a quota resource name counts, when it is an object count. */
export function countedResource(name: string): { group: string; plural: string } | undefined {
  if (LEGACY_COUNTS[name]) return { group: '', plural: LEGACY_COUNTS[name] };
  if (name === 'services.nodeports' || name === 'services.loadbalancers') return { group: '', plural: 'services' };
  if (name.startsWith('count/')) {
    const rest = name.slice('count/'.length);
    const dot = rest.indexOf('.');
    return dot < 0 ? { group: '', plural: rest } : { group: rest.slice(dot + 1), plural: rest.slice(0, dot) };
  }
  if (name.endsWith('.storageclass.storage.k8s.io/requests.storage') || name.endsWith('.storageclass.storage.k8s.io/persistentvolumeclaims') || name === 'requests.storage') {
    return { group: '', plural: 'persistentvolumeclaims' };
  }
  return { group: '', plural: 'pods' }; // compute resources
}

function matchesExpression(pod: KubeObject, e: Dict): boolean {
  const spec = isDict(pod.spec) ? pod.spec : {};
  const values = Array.isArray(e.values) ? e.values.map(String) : [];
  const scope = String(e.scopeName ?? '');
  if (scope === 'PriorityClass') {
    const cls = typeof spec.priorityClassName === 'string' ? spec.priorityClassName : '';
    switch (e.operator) {
      case 'In': return cls !== '' && values.includes(cls);
      case 'NotIn': return !values.includes(cls);
      case 'Exists': return cls !== '';
      case 'DoesNotExist': return cls === '';
      default: return false;
    }
  }
  const holds = scopeHolds(pod, scope);
  return e.operator === 'DoesNotExist' || e.operator === 'NotIn' ? !holds : holds;
}

function scopeHolds(pod: KubeObject, scope: string): boolean {
  const spec = isDict(pod.spec) ? pod.spec : {};
  switch (scope) {
    case 'Terminating': return typeof spec.activeDeadlineSeconds === 'number';
    case 'NotTerminating': return typeof spec.activeDeadlineSeconds !== 'number';
    case 'BestEffort': return qosClass(spec) === 'BestEffort';
    case 'NotBestEffort': return qosClass(spec) !== 'BestEffort';
    default: return false;
  }
}

/** Whether a quota's scopes (and scopeSelector) cover the object. */
export function quotaCovers(quota: KubeObject, group: string, plural: string, obj: KubeObject): boolean {
  const spec = isDict(quota.spec) ? quota.spec : {};
  const scopes = Array.isArray(spec.scopes) ? spec.scopes.map(String) : [];
  const exprs = isDict(spec.scopeSelector) ? list(spec.scopeSelector.matchExpressions) : [];
  if (!scopes.length && !exprs.length) return true;
  if (group !== '' || plural !== 'pods') return false;
  return scopes.every((s) => scopeHolds(obj, s)) && exprs.every((e) => matchesExpression(obj, e));
}

const BINARY = [['Ei', 2 ** 60], ['Pi', 2 ** 50], ['Ti', 2 ** 40], ['Gi', 2 ** 30], ['Mi', 2 ** 20], ['Ki', 2 ** 10]] as const;

/** An amount as a quantity: millicores for fractional cpu, a binary suffix for whole multiples of KiB and up. */
export function formatAmount(name: string, v: number): string {
  const isCpu = name === 'cpu' || name.endsWith('.cpu');
  // Rounded to millicores first: sums of millicores drift (0.1 + 0.2), and 0.9999999 is "1", not "1000m".
  if (isCpu) { const m = Math.round(v * 1000); return m % 1000 === 0 ? String(m / 1000) : `${m}m`; }
  const n = Math.round(v);
  if (n === 0) return '0';
  // Bytes only for names ending in memory or storage: `<class>.storageclass.storage.k8s.io/persistentvolumeclaims` is a count.
  const isBytes = /(memory|storage)$/.test(name);
  if (isBytes) for (const [suffix, size] of BINARY) if (n % size === 0) return `${n / size}${suffix}`;
  return String(n);
}

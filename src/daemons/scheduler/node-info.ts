/**
 * NodeInfo: one node with the pods bound (or assumed bound) to it and their aggregates:
 * requested resources, the non-zero requests scoring uses, host ports in use and pod counts
 * per controlling owner. Filters and scores read it; only the cache changes it.
 */
import { nodeAllocatable, podNonZeroRequests, podRequests, type Resources } from './resources.js';
import { controllerOf, podKey, type Node, type Pod } from './types.js';

export interface HostPort { protocol: string; hostIP: string; port: number }

/** Everything the scheduler derives from one pod, computed once. */
export interface PodInfo {
  key: string;
  pod: Pod;
  requests: Resources;
  nonZero: Resources;
  hostPorts: HostPort[];
  /** uid of the controlling owner, '' when none. */
  ownerUid: string;
}

export const ANY_IP = '0.0.0.0';

/** Host ports a pod asks for (app containers and sidecars). */
export function podHostPorts(pod: Pod): HostPort[] {
  const out: HostPort[] = [];
  const spec = pod.spec ?? {};
  const containers = [...(spec.containers ?? []), ...(spec.initContainers ?? []).filter((c) => c.restartPolicy === 'Always')];
  for (const c of containers) {
    for (const p of c.ports ?? []) {
      if (!p.hostPort || p.hostPort <= 0) continue;
      out.push({ protocol: p.protocol || 'TCP', hostIP: p.hostIP && p.hostIP !== '::' ? p.hostIP : ANY_IP, port: p.hostPort });
    }
  }
  return out;
}

export function newPodInfo(pod: Pod): PodInfo {
  return { key: podKey(pod), pod, requests: podRequests(pod), nonZero: podNonZeroRequests(pod), hostPorts: podHostPorts(pod), ownerUid: controllerOf(pod)?.uid ?? '' };
}

function add(into: Resources, r: Resources, sign: 1 | -1): void {
  for (const [k, v] of Object.entries(r)) into[k] = (into[k] ?? 0) + sign * v;
}

export class NodeInfo {
  node: Node | undefined;
  allocatable: Resources = {};
  readonly pods = new Map<string, PodInfo>();
  readonly requested: Resources = {};
  readonly nonZeroRequested: Resources = {};
  /** `protocol/port` -> hostIP -> number of pods using it. */
  readonly usedPorts = new Map<string, Map<string, number>>();
  readonly ownerCounts = new Map<string, number>();

  constructor(node?: Node) { if (node) this.setNode(node); }

  get name(): string { return this.node?.metadata?.name ?? ''; }

  setNode(node: Node): void {
    this.node = node;
    this.allocatable = nodeAllocatable(node);
  }

  addPod(pi: PodInfo): void {
    if (this.pods.has(pi.key)) this.removePod(pi.key);
    this.pods.set(pi.key, pi);
    add(this.requested, pi.requests, 1);
    add(this.nonZeroRequested, pi.nonZero, 1);
    for (const hp of pi.hostPorts) {
      const k = `${hp.protocol}/${hp.port}`;
      let ips = this.usedPorts.get(k);
      if (!ips) this.usedPorts.set(k, ips = new Map());
      ips.set(hp.hostIP, (ips.get(hp.hostIP) ?? 0) + 1);
    }
    if (pi.ownerUid) this.ownerCounts.set(pi.ownerUid, (this.ownerCounts.get(pi.ownerUid) ?? 0) + 1);
  }

  removePod(key: string): PodInfo | undefined {
    const pi = this.pods.get(key);
    if (!pi) return undefined;
    this.pods.delete(key);
    add(this.requested, pi.requests, -1);
    add(this.nonZeroRequested, pi.nonZero, -1);
    for (const hp of pi.hostPorts) {
      const k = `${hp.protocol}/${hp.port}`;
      const ips = this.usedPorts.get(k);
      const n = (ips?.get(hp.hostIP) ?? 0) - 1;
      if (n > 0) ips?.set(hp.hostIP, n); else ips?.delete(hp.hostIP);
      if (ips && ips.size === 0) this.usedPorts.delete(k);
    }
    if (pi.ownerUid) {
      const n = (this.ownerCounts.get(pi.ownerUid) ?? 0) - 1;
      if (n > 0) this.ownerCounts.set(pi.ownerUid, n); else this.ownerCounts.delete(pi.ownerUid);
    }
    return pi;
  }
}

/** A NodeInfo for tests and benchmarks: the node plus pods already on it. */
export function nodeInfoOf(node: Node, pods: Pod[] = []): NodeInfo {
  const ni = new NodeInfo(node);
  for (const p of pods) ni.addPod(newPodInfo(p));
  return ni;
}

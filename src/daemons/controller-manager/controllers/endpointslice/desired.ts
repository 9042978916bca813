/**
 * What a service's EndpointSlices should say about one pod (Kubernetes' endpointslice utils):
 * the address types a service publishes, the ports a pod serves for it, the endpoint of a pod,
 * and the keys that identify endpoints and port sets. Pure functions; tests call them directly.
 */
import { isIPv6 } from 'node:net';
import type { KubeObject } from '../../../../api/resources/types.js';
import { canonicalJson, isPodReady } from '../controller-utils.js';
import { resolveTargetPort } from '../service-selector.js';

type Dict = Record<string, unknown>;

export interface EndpointPort { name: string; port: number; protocol: string; appProtocol?: string }
export interface Endpoint {
  addresses: string[];
  conditions: { ready: boolean; serving: boolean; terminating: boolean };
  hostname?: string;
  targetRef: { kind: 'Pod'; namespace: string; name: string; uid: string };
  nodeName?: string;
  zone?: string;
}

const ZONE_LABEL = 'topology.kubernetes.io/zone';

function rec(v: unknown): Dict { return typeof v === 'object' && v !== null && !Array.isArray(v) ? v as Dict : {}; }
function arr(v: unknown): Dict[] { return Array.isArray(v) ? v.map(rec) : []; }
function str(v: unknown): string { return typeof v === 'string' ? v : ''; }

/**
 * The address types a service's slices carry: its ipFamilies; without them (a service written
 * before families existed) the family of its cluster IP, or both for a headless service.
 */
export function addressTypesOf(svc: KubeObject): string[] {
  const spec = rec(svc.spec);
  const out = new Set<string>();
  for (const f of Array.isArray(spec.ipFamilies) ? spec.ipFamilies : []) {
    if (f === 'IPv4') out.add('IPv4');
    if (f === 'IPv6') out.add('IPv6');
  }
  if (out.size) return [...out];
  const ip = str(spec.clusterIP);
  if (ip && ip !== 'None') return [isIPv6(ip) ? 'IPv6' : 'IPv4'];
  return ['IPv4', 'IPv6'];
}

/** The ports a pod serves for the service, in the service's order (a headless service may have none). */
export function endpointPortsFor(svc: KubeObject, pod: KubeObject): EndpointPort[] {
  const out: EndpointPort[] = [];
  for (const sp of arr(rec(svc.spec).ports)) {
    const port = resolveTargetPort(pod, sp);
    if (port === undefined) continue;
    const ep: EndpointPort = { name: str(sp.name), port, protocol: str(sp.protocol) || 'TCP' };
    if (typeof sp.appProtocol === 'string') ep.appProtocol = sp.appProtocol;
    out.push(ep);
  }
  return out;
}

/** The pod's addresses of one family: status.podIPs (status.podIP when the list is empty). */
function addressesOf(pod: KubeObject, addressType: string): string[] {
  const st = rec(pod.status);
  const ips = arr(st.podIPs).map((p) => str(p.ip)).filter(Boolean);
  if (!ips.length && str(st.podIP)) ips.push(str(st.podIP));
  return ips.filter((ip) => isIPv6(ip) === (addressType === 'IPv6'));
}

/**
 * The endpoint of a pod. Ready means serving and not terminating (or the service publishes
 * not-ready addresses); the zone comes from the node's topology label; the hostname is
 * published only for pods that chose this service as their subdomain.
 */
export function podToEndpoint(pod: KubeObject, node: KubeObject | undefined, svc: KubeObject, addressType: string): Endpoint {
  const spec = rec(pod.spec), meta = pod.metadata ?? {};
  const serving = isPodReady(pod);
  const terminating = !!meta.deletionTimestamp;
  const ep: Endpoint = {
    addresses: addressesOf(pod, addressType),
    conditions: { ready: rec(svc.spec).publishNotReadyAddresses === true || (serving && !terminating), serving, terminating },
    targetRef: { kind: 'Pod', namespace: meta.namespace ?? '', name: meta.name ?? '', uid: meta.uid ?? '' },
  };
  if (str(spec.hostname) && spec.subdomain === svc.metadata?.name && meta.namespace === svc.metadata?.namespace) ep.hostname = str(spec.hostname);
  if (str(spec.nodeName)) ep.nodeName = str(spec.nodeName);
  const zone = node?.metadata?.labels?.[ZONE_LABEL];
  if (zone) ep.zone = zone;
  return ep;
}

/** What identifies an endpoint across syncs: its addresses, hostname and target. */
export function endpointKey(ep: unknown): string {
  const e = rec(ep), ref = rec(e.targetRef);
  const addresses = Array.isArray(e.addresses) ? e.addresses.map(String).sort() : [];
  return canonicalJson([addresses, str(e.hostname), str(ref.namespace), str(ref.name)]);
}

/** Whether two endpoints with the same key differ in what the slice says about them. */
export function endpointChanged(a: unknown, b: unknown): boolean {
  const view = (ep: unknown): unknown => {
    const e = rec(ep), c = rec(e.conditions), ref = rec(e.targetRef);
    return [c.ready, c.serving, c.terminating, e.nodeName, e.zone, ref.kind, ref.namespace, ref.name, ref.uid];
  };
  return canonicalJson(view(a)) !== canonicalJson(view(b));
}

/** What identifies a set of ports, whatever their order. */
export function portMapKey(ports: unknown): string {
  const view = arr(ports).map((p) => canonicalJson({ name: str(p.name), port: p.port, protocol: str(p.protocol) || 'TCP', appProtocol: p.appProtocol }));
  return canonicalJson(view.sort());
}

/**
 * From Services and EndpointSlices to what the proxy programs: one ServicePort per port of a
 * routable Service, with the endpoints kube-proxy would use for cluster and for local traffic.
 *
 * As kube-proxy: headless Services and those with the service.kubernetes.io/service-proxy-name
 * label get nothing; ExternalName Services get nothing; ready endpoints are used, and only when
 * none is ready the serving-and-terminating ones are (so that a rolling update never drops to
 * zero); a nil condition means ready/serving, nil terminating means false.
 *
 * Each IP family is built on its own (as kube-proxy runs one proxier per family): a Service's
 * ClusterIP of that family among spec.clusterIPs, its externalIPs and LoadBalancer IPs of that
 * family, and the endpoints of its EndpointSlices of that address type.
 */
import { isIP } from 'node:net';


export interface ServiceObject {
  metadata?: { name?: string; namespace?: string; labels?: Record<string, string> };
  spec?: {
    type?: string;
    clusterIP?: string;
    clusterIPs?: string[];
    ipFamilies?: string[];
    ports?: Array<{ name?: string; port?: number; protocol?: string; nodePort?: number; targetPort?: number | string }>;
    externalIPs?: string[];
    sessionAffinity?: string;
    sessionAffinityConfig?: { clientIP?: { timeoutSeconds?: number } };
    externalTrafficPolicy?: string;
    internalTrafficPolicy?: string;
  };
  status?: { loadBalancer?: { ingress?: Array<{ ip?: string }> } };
}

export interface EndpointSliceObject {
  metadata?: { name?: string; namespace?: string; labels?: Record<string, string> };
  addressType?: string;
  endpoints?: Array<{
    addresses?: string[];
    conditions?: { ready?: boolean | null; serving?: boolean | null; terminating?: boolean | null };
    nodeName?: string;
  }>;
  ports?: Array<{ name?: string | null; port?: number | null; protocol?: string | null }> | null;
}

export type Protocol = 'tcp' | 'udp' | 'sctp';

export interface Endpoint {
  ip: string;
  port: number;
  local: boolean;
}

export interface ServicePort {
  /** namespace/name/portname-or-empty, stable across syncs. */
  id: string;
  namespace: string;
  name: string;
  portName: string;
  protocol: Protocol;
  clusterIp: string;
  port: number;
  nodePort: number;
  /** externalIPs and LoadBalancer status IPs (of the port's family). */
  externalIps: string[];
  /** Seconds, 0 when sessionAffinity is not ClientIP. */
  affinitySeconds: number;
  externalLocal: boolean;
  internalLocal: boolean;
  /** Endpoints for cluster-wide traffic (ready, else serving-terminating). */
  clusterEndpoints: Endpoint[];
  /** The local ones among all usable endpoints (ready, else serving-terminating). */
  localEndpoints: Endpoint[];
}

/** 4 or 6: an IP family. */
export type Family = 4 | 6;
export const isIpv4 = (s: string | undefined): s is string => !!s && isIP(s) === 4;
export const isIpv6 = (s: string | undefined): s is string => !!s && isIP(s) === 6;
const ofFamily = (family: Family) => (s: string | undefined): s is string => !!s && isIP(s) === family;

/** The Service's ClusterIP of this family (spec.clusterIPs, else spec.clusterIP), if any. */
export function clusterIpOf(svc: ServiceObject, family: Family): string | undefined {
  const spec = svc.spec ?? {};
  return [...(spec.clusterIPs ?? []), spec.clusterIP].find(ofFamily(family));
}

export const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';
const PROXY_NAME_LABEL = 'service.kubernetes.io/service-proxy-name';
const DEFAULT_AFFINITY_SECONDS = 10800;

interface Candidate extends Endpoint { ready: boolean; serving: boolean; terminating: boolean }

function protocolOf(p: string | null | undefined): Protocol | undefined {
  const v = (p ?? 'TCP').toLowerCase();
  return v === 'tcp' || v === 'udp' || v === 'sctp' ? v : undefined;
}

/** The usable endpoints of a list: the ready ones, else the serving and terminating ones. */
function usable(list: Candidate[]): Endpoint[] {
  const ready = list.filter((e) => e.ready);
  const chosen = ready.length > 0 ? ready : list.filter((e) => e.serving && e.terminating);
  return chosen.map(({ ip, port, local }) => ({ ip, port, local }));
}

/** Whether the proxy programs anything for this Service in this family. */
export function isRoutable(svc: ServiceObject, family: Family = 4): boolean {
  const spec = svc.spec ?? {};
  if (svc.metadata?.labels?.[PROXY_NAME_LABEL] !== undefined) return false;
  if (spec.type === 'ExternalName') return false;
  return clusterIpOf(svc, family) !== undefined;
}

/** Groups the family's EndpointSlices by the Service they belong to ("namespace/name"). */
export function slicesByService(slices: readonly EndpointSliceObject[], family: Family = 4): Map<string, EndpointSliceObject[]> {
  const byService = new Map<string, EndpointSliceObject[]>();
  const addressType = family === 6 ? 'IPv6' : 'IPv4';
  for (const s of slices) {
    const svcName = s.metadata?.labels?.[SERVICE_NAME_LABEL];
    if (!svcName || s.addressType !== addressType) continue;
    const key = `${s.metadata?.namespace ?? ''}/${svcName}`;
    const list = byService.get(key);
    if (list) list.push(s); else byService.set(key, [s]);
  }
  return byService;
}

/**
 * The ServicePorts of every routable Service. `slices` are grouped by their
 * kubernetes.io/service-name label; endpoints on node `nodeName` are local.
 */
export function buildServicePorts(services: readonly ServiceObject[], slices: readonly EndpointSliceObject[], nodeName: string, family: Family = 4): ServicePort[] {
  const byService = slicesByService(slices, family);
  const out: ServicePort[] = [];
  for (const svc of services) out.push(...servicePortsOf(svc, byService.get(`${svc.metadata?.namespace ?? ''}/${svc.metadata?.name ?? ''}`) ?? [], nodeName, family));
  out.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return out;
}

/** The ServicePorts of one Service from its own EndpointSlices (of `family`); none when not routable. */
export function servicePortsOf(svc: ServiceObject, svcSlices: readonly EndpointSliceObject[], nodeName: string, family: Family = 4): ServicePort[] {
  const clusterIp = isRoutable(svc, family) ? clusterIpOf(svc, family) : undefined;
  if (!clusterIp) return [];
  const isFamily = ofFamily(family);
  const out: ServicePort[] = [];
  const spec = svc.spec ?? {};
  const namespace = svc.metadata?.namespace ?? '';
  const name = svc.metadata?.name ?? '';
  const external = [...(spec.externalIPs ?? []), ...(svc.status?.loadBalancer?.ingress ?? []).map((i) => i.ip)].filter(isFamily);
  const affinity = spec.sessionAffinity === 'ClientIP' ? (spec.sessionAffinityConfig?.clientIP?.timeoutSeconds || DEFAULT_AFFINITY_SECONDS) : 0;
  const hasExternal = spec.type === 'NodePort' || spec.type === 'LoadBalancer' || external.length > 0;
  for (const p of spec.ports ?? []) {
    const protocol = protocolOf(p.protocol);
    if (!protocol || !p.port) continue;
    const portName = p.name ?? '';
    const candidates: Candidate[] = [];
    const seen = new Set<string>();
    for (const slice of svcSlices) {
      const sp = (slice.ports ?? []).find((x) => (x.name ?? '') === portName && protocolOf(x.protocol) === protocol);
      if (!sp?.port) continue;
      for (const e of slice.endpoints ?? []) {
        const ip = e.addresses?.[0];
        if (!isFamily(ip)) continue;
        const key = `${ip}:${sp.port}`;
        if (seen.has(key)) continue;
        seen.add(key);
        const c = e.conditions ?? {};
        const ready = c.ready !== false;
        candidates.push({
          ip, port: sp.port, local: !!nodeName && e.nodeName === nodeName,
          ready, serving: c.serving === undefined || c.serving === null ? ready : c.serving, terminating: c.terminating === true,
        });
      }
    }
    candidates.sort((a, b) => (a.ip === b.ip ? a.port - b.port : a.ip < b.ip ? -1 : 1));
    out.push({
      id: `${namespace}/${name}/${portName}`, namespace, name, portName, protocol,
      clusterIp, port: p.port,
      nodePort: (spec.type === 'NodePort' || spec.type === 'LoadBalancer') && p.nodePort ? p.nodePort : 0,
      externalIps: [...new Set(external)], affinitySeconds: affinity,
      externalLocal: hasExternal && spec.externalTrafficPolicy === 'Local',
      internalLocal: spec.internalTrafficPolicy === 'Local',
      clusterEndpoints: usable(candidates),
      localEndpoints: usable(candidates.filter((c) => c.local)),
    });
  }
  return out;
}

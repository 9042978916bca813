/**
 * What the cluster DNS reads: services, the ready addresses of their EndpointSlices and the
 * namespaces, by the keys the answers need (name, ClusterIP, endpoint address). The informer
 * implementation is in informer-view.ts; tests may give a plain one.
 */

export interface DnsServicePort { name?: string; port: number; protocol?: string }

export interface DnsService {
  readonly name: string;
  readonly namespace: string;
  /** ClusterIP, NodePort, LoadBalancer or ExternalName. */
  readonly type: string;
  /** The ClusterIPs; empty for headless ("None") and ExternalName services. */
  readonly clusterIps: readonly string[];
  readonly headless: boolean;
  readonly externalName: string;
  readonly ports: readonly DnsServicePort[];
}

/** One ready address of a service's endpoints, with the ports of its slice. */
export interface DnsEndpoint {
  readonly ip: string;
  /** The endpoint's hostname (a StatefulSet pod's stable name), else ''. */
  readonly hostname: string;
  readonly ports: readonly DnsServicePort[];
}

export interface ClusterView {
  /** False until the first lists are in: "not found" is then a server failure, as CoreDNS. */
  synced(): boolean;
  namespaceExists(namespace: string): boolean;
  service(namespace: string, name: string): DnsService | undefined;
  /** Ready endpoint addresses of the service (serving ones of every slice, IPv4 and IPv6). */
  endpoints(namespace: string, service: string): readonly DnsEndpoint[];
  /** Services having this ClusterIP. */
  servicesByClusterIp(ip: string): readonly DnsService[];
  /** The services whose ready endpoints have this address, with the endpoint. */
  endpointsByIp(ip: string): ReadonlyArray<{ service: DnsService; endpoint: DnsEndpoint }>;
}

type Obj = Record<string, unknown>;

/** One spelling per address (IPv6 compressed, lower case), so that index keys compare. */
export function canonicalIp(ip: string): string {
  if (!ip.includes(':')) return ip;
  try {
    return new URL(`http://[${ip}]/`).hostname.slice(1, -1);
  } catch {
    return ip.toLowerCase();
  }
}

function rec(v: unknown): Obj {
  return typeof v === 'object' && v !== null ? v as Obj : {};
}

function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

function ports(list: unknown): DnsServicePort[] {
  if (!Array.isArray(list)) return [];
  return list.map((p) => {
    const r = rec(p);
    return { ...(str(r.name) ? { name: str(r.name) } : {}), port: typeof r.port === 'number' ? r.port : -1, protocol: str(r.protocol) || 'TCP' };
  });
}

/** A Service object as the DNS sees it. */
export function dnsService(obj: unknown): DnsService {
  const meta = rec(rec(obj).metadata);
  const spec = rec(rec(obj).spec);
  const clusterIp = str(spec.clusterIP);
  const listed = Array.isArray(spec.clusterIPs) ? spec.clusterIPs.filter((x): x is string => typeof x === 'string') : [];
  const ips = (listed.length ? listed : clusterIp ? [clusterIp] : []).filter((ip) => ip !== 'None');
  const type = str(spec.type) || 'ClusterIP';
  return {
    name: str(meta.name), namespace: str(meta.namespace) || 'default', type,
    clusterIps: type === 'ExternalName' ? [] : ips,
    headless: type !== 'ExternalName' && clusterIp === 'None',
    externalName: str(spec.externalName), ports: ports(spec.ports),
  };
}

/**
 * The ready addresses of one EndpointSlice. A slice without ports still publishes its
 * addresses (CoreDNS puts a port-less sentinel there too); FQDN slices hold no addresses.
 */
export function sliceEndpoints(obj: unknown): DnsEndpoint[] {
  const slice = rec(obj);
  if (slice.addressType === 'FQDN') return [];
  const p = ports(slice.ports);
  const out: DnsEndpoint[] = [];
  for (const e of Array.isArray(slice.endpoints) ? slice.endpoints : []) {
    const ep = rec(e);
    if (rec(ep.conditions).ready === false) continue;
    for (const ip of Array.isArray(ep.addresses) ? ep.addresses : []) {
      if (typeof ip === 'string') out.push({ ip, hostname: str(ep.hostname), ports: p });
    }
  }
  return out;
}

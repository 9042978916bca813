/**
 * The server's cluster DNS, the Kubernetes way: the DNS server (src/daemons/proxy/dns) on the
 * node's address, a selector-less `kube-dns` Service in kube-system at the tenth address of the
 * service range (10.0.0.10 in the default 10.0.0.0/24), and an EndpointSlice of ours pointing
 * that Service at the node's address and the DNS port, so a service proxy routes 10.0.0.10:53
 * to it. The node agent's --cluster-dns names the Service's IP when a service proxy runs, else
 * the node's address itself (a resolv.conf can only name port 53).
 */
import type { Logger } from 'pino';
import { ApiError } from '../../api/meta/status.js';
import type { KubeObject } from '../../api/resources/types.js';
import type { ClientConnection } from '../../client/coreconfig.js';
import { RestClient, type ResourceRef } from '../../client/rest-client.js';
import { formatIp, isLoopbackIp, parseCidr } from '../../util/ip.js';

export const KUBE_DNS = { namespace: 'kube-system', name: 'kube-dns' } as const;
const SLICE_NAME = 'kube-dns-corectl';
const MANAGED_BY = 'corectl-server';

export interface ClusterDnsPlan {
  /** The node's address the server listens on. */
  readonly nodeIp: string;
  readonly port: number;
  /** The kube-dns Service's ClusterIP (undefined: the range has no tenth address). */
  readonly serviceIp: string | undefined;
  readonly domain: string;
  readonly resolvConf: string;
  /** What the node agent's --cluster-dns is set to ([] when the user set it, or none works). */
  readonly agentClusterDns: readonly string[];
}

/** The n-th address of the first range of `range` (n=10: 10.0.0.0/24 → 10.0.0.10). */
export function nthServiceIp(range: string, n: number): string | undefined {
  const c = parseCidr(range.split(',')[0]?.trim() ?? '');
  if (!c) return undefined;
  const ip = [...c.ip];
  let carry = n;
  for (let i = ip.length - 1; i >= 0 && carry > 0; i--) {
    const v = (ip[i] ?? 0) + carry;
    ip[i] = v & 0xff;
    carry = v >> 8;
  }
  const hostBits = ip.length * 8 - c.prefix;
  return hostBits > 0 && n < 2 ** Math.min(hostBits, 30) - 1 ? formatIp(ip) : undefined;
}

/** The Service and EndpointSlice the server keeps for the DNS (created, or the slice updated). */
export function kubeDnsObjects(p: Pick<ClusterDnsPlan, 'nodeIp' | 'port' | 'serviceIp'>, nodeName: string): { service: KubeObject; slice: KubeObject } {
  const labels = { 'k8s-app': 'kube-dns', 'kubernetes.io/cluster-service': 'true', 'kubernetes.io/name': 'corectl-dns' };
  const service: KubeObject = {
    apiVersion: 'v1', kind: 'Service', metadata: { name: KUBE_DNS.name, namespace: KUBE_DNS.namespace, labels },
    spec: {
      ...(p.serviceIp ? { clusterIP: p.serviceIp } : {}),
      ports: [{ name: 'dns', port: 53, protocol: 'UDP', targetPort: p.port }, { name: 'dns-tcp', port: 53, protocol: 'TCP', targetPort: p.port }],
    },
  };
  const slice: KubeObject = {
    apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice',
    metadata: { name: SLICE_NAME, namespace: KUBE_DNS.namespace, labels: { 'kubernetes.io/service-name': KUBE_DNS.name, 'endpointslice.kubernetes.io/managed-by': MANAGED_BY } },
    addressType: p.nodeIp.includes(':') ? 'IPv6' : 'IPv4',
    endpoints: [{ addresses: [p.nodeIp], conditions: { ready: true, serving: true, terminating: false }, nodeName }],
    ports: [{ name: 'dns', port: p.port, protocol: 'UDP' }, { name: 'dns-tcp', port: p.port, protocol: 'TCP' }],
  };
  return { service, slice };
}

function isStatus(e: unknown, code: number): boolean {
  return e instanceof ApiError && e.status.code === code;
}

/**
 * Creates `obj` unless it exists; an existing one is replaced (`replace`) or left as it is. Read
 * first: creating a Service again with its ClusterIP fails on the IP (422), not on the name.
 */
export async function ensureObject(client: RestClient, ref: ResourceRef, obj: KubeObject, replace: boolean): Promise<void> {
  const name = obj.metadata?.name ?? '';
  let cur: KubeObject | undefined;
  try {
    cur = await client.get<KubeObject>(ref, name);
  } catch (e) {
    if (!isStatus(e, 404)) throw e;
  }
  if (!cur) {
    await client.create(ref, obj);
    return;
  }
  if (replace) await client.update(ref, { ...obj, metadata: { ...obj.metadata, resourceVersion: cur.metadata?.resourceVersion } });
}

export interface RunningClusterDns { stop(): Promise<void> }

/**
 * Starts the DNS server and publishes the kube-dns Service. A server that cannot bind (port 53
 * needs privileges, or another DNS server holds it) is reported by the caller; the cluster runs on.
 */
export async function startServerClusterDns(p: ClusterDnsPlan, o: { connection: ClientConnection; nodeName: string; log: Logger }): Promise<RunningClusterDns> {
  const client = new RestClient({ connection: o.connection, qps: 0, contentType: 'application/json', userAgent: 'corectl-server/cluster-dns' });
  // Loaded here so that a server without the DNS never reads the module.
  const { startClusterDns } = await import('../proxy/dns/cluster-dns.js');
  let dns;
  try {
    dns = await startClusterDns({ client, listen: [{ host: p.nodeIp, port: p.port }], clusterDomain: p.domain, resolvConf: p.resolvConf, log: o.log });
  } catch (e) {
    client.close();
    throw e;
  }
  try {
    const { service, slice } = kubeDnsObjects(p, o.nodeName);
    await ensureObject(client, { group: '', version: 'v1', resource: 'services', namespace: KUBE_DNS.namespace }, service, false);
    // An EndpointSlice may not hold a loopback address (Kubernetes' validation): a server bound
    // to loopback has no pod that could reach it anyway.
    if (isLoopbackIp(p.nodeIp)) o.log.info({ nodeIp: p.nodeIp }, 'node address is loopback: the kube-dns Service gets no endpoints');
    else await ensureObject(client, { group: 'discovery.k8s.io', version: 'v1', resource: 'endpointslices', namespace: KUBE_DNS.namespace }, slice, true);
  } catch (e) {
    o.log.warn({ err: (e as Error).message }, 'kube-dns Service not published');
  }
  return {
    async stop() {
      await dns.stop();
      client.close();
    },
  };
}

/**
 * Service environment variables, as Kubernetes' node agent gives every container: the
 * `kubernetes` service of the default namespace always (in-cluster clients find the API server
 * by KUBERNETES_SERVICE_HOST/PORT), and with the pod's enableServiceLinks (default true) every
 * service of the pod's namespace, as <NAME>_SERVICE_HOST, <NAME>_SERVICE_PORT(_<PORT NAME>) and
 * Docker's link variables <NAME>_PORT, <NAME>_PORT_<port>_<PROTO>(_PROTO|_PORT|_ADDR).
 * Services without a ClusterIP (headless, ExternalName) have none. The container's own env wins
 * over them (env.ts).
 */
import { isIP } from 'node:net';
import type { KubeObject } from '../../api/resources/types.js';
import type { Pod } from './pod-types.js';

export interface ServiceLister {
  /** False until the first list is in: kubelet refuses to build env vars before that. */
  synced(): boolean;
  list(): readonly KubeObject[];
}

interface SvcPort { name?: string; port?: number; protocol?: string }
interface Svc { name: string; namespace: string; clusterIp: string; ports: SvcPort[] }

/** Service names are DNS labels: upper case, '-' becomes '_'. */
function envName(s: string): string {
  return s.replace(/-/g, '_').toUpperCase();
}

function hostPort(ip: string, port: number): string {
  return isIP(ip) === 6 ? `[${ip}]:${port}` : `${ip}:${port}`;
}

function asSvc(o: KubeObject): Svc | undefined {
  const spec = (o.spec ?? {}) as { clusterIP?: string; ports?: SvcPort[] };
  const ip = spec.clusterIP ?? '';
  // IsServiceIPSet: neither empty nor None.
  if (ip === '' || ip === 'None') return undefined;
  return { name: o.metadata?.name ?? '', namespace: o.metadata?.namespace ?? '', clusterIp: ip, ports: spec.ports ?? [] };
}

/** One service's variables in kubelet's order (envvars.FromServices). */
export function serviceVars(s: Svc): Array<[string, string]> {
  const first = s.ports[0];
  if (!first) return [];
  const prefix = envName(s.name);
  const out: Array<[string, string]> = [[`${prefix}_SERVICE_HOST`, s.clusterIp], [`${prefix}_SERVICE_PORT`, String(first.port ?? 0)]];
  for (const p of s.ports) if (p.name) out.push([`${prefix}_SERVICE_PORT_${envName(p.name)}`, String(p.port ?? 0)]);
  s.ports.forEach((p, i) => {
    const proto = p.protocol || 'TCP';
    const url = `${proto.toLowerCase()}://${hostPort(s.clusterIp, p.port ?? 0)}`;
    if (i === 0) out.push([`${prefix}_PORT`, url]);
    const pp = `${prefix}_PORT_${p.port ?? 0}_${proto.toUpperCase()}`;
    out.push([pp, url], [`${pp}_PROTO`, proto.toLowerCase()], [`${pp}_PORT`, String(p.port ?? 0)], [`${pp}_ADDR`, s.clusterIp]);
  });
  return out;
}

/**
 * The service variables of `pod` (kubelet's getServiceEnvVarMap): the default namespace's
 * `kubernetes` service, then, with enableServiceLinks, the pod namespace's services, a service
 * of the pod's namespace replacing a same-named master service. Services are taken by name.
 */
export function podServiceEnv(pod: Pod, services: readonly KubeObject[]): Map<string, string> {
  const ns = pod.metadata?.namespace ?? 'default';
  const links = (pod.spec as { enableServiceLinks?: boolean } | undefined)?.enableServiceLinks !== false;
  const byName = new Map<string, Svc>();
  for (const o of services) {
    const s = asSvc(o);
    if (!s) continue;
    if (s.namespace === 'default' && s.name === 'kubernetes') { if (!byName.has(s.name)) byName.set(s.name, s); } else if (s.namespace === ns && links) byName.set(s.name, s);
  }
  const out = new Map<string, string>();
  for (const name of [...byName.keys()].sort()) for (const [k, v] of serviceVars(byName.get(name) as Svc)) out.set(k, v);
  return out;
}

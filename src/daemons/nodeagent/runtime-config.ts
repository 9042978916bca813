/**
 * Pod spec → CRI configuration: the sandbox (metadata, hostname, log directory, DNS, port
 * mappings, namespaces, labels) and each container (image, command, env, mounts, resources,
 * log path), with the labels Kubernetes uses so the runtime's listings map back to pods.
 */
import { join } from 'node:path';
import { parseQuantity } from '../../util/quantity.js';
import type { Container, Pod } from './pod-types.js';
import type { ContainerConfig, Device, DnsConfig, LinuxContainerResources, Mount, NamespaceMode, PodSandboxConfig, PortMapping } from './runtime/runtime.js';

export const LABEL_POD_NAME = 'io.kubernetes.pod.name';
export const LABEL_POD_NAMESPACE = 'io.kubernetes.pod.namespace';
export const LABEL_POD_UID = 'io.kubernetes.pod.uid';
export const LABEL_CONTAINER_NAME = 'io.kubernetes.container.name';
export const ANNOTATION_RESTART_COUNT = 'io.kubernetes.container.restartCount';

export interface HostDns { servers: string[]; searches: string[]; options: string[] }

export function parseResolvConf(text: string): HostDns {
  const out: HostDns = { servers: [], searches: [], options: [] };
  for (const raw of text.split('\n')) {
    const line = raw.replace(/[#;].*$/, '').trim();
    const [key, ...rest] = line.split(/\s+/);
    if (key === 'nameserver' && rest[0]) out.servers.push(rest[0]);
    // As Kubernetes' node agent: the last search line counts, without "." and trailing dots;
    // a domain line is not a search path.
    else if (key === 'search') out.searches = rest.filter((x) => x !== '.').map((x) => x.replace(/\.$/, ''));
    else if (key === 'options') out.options.push(...rest);
  }
  return out;
}

export interface DnsSettings { readonly host: HostDns; readonly clusterDns: readonly string[]; readonly clusterDomain: string }

/** DNS for the pod's dnsPolicy (ClusterFirst, ClusterFirstWithHostNet, Default, None) plus dnsConfig. */
export function podDns(pod: Pod, s: DnsSettings): DnsConfig {
  const spec = pod.spec ?? {};
  let policy = spec.dnsPolicy ?? 'ClusterFirst';
  if (policy === 'ClusterFirst' && spec.hostNetwork) policy = 'Default';
  if ((policy === 'ClusterFirst' || policy === 'ClusterFirstWithHostNet') && s.clusterDns.length === 0) policy = 'Default';
  let servers: string[] = [];
  let searches: string[] = [];
  let options: string[] = [];
  if (policy === 'Default') {
    servers = [...s.host.servers]; searches = [...s.host.searches]; options = [...s.host.options];
  } else if (policy !== 'None') {
    const ns = pod.metadata?.namespace ?? 'default';
    servers = [...s.clusterDns];
    searches = s.clusterDomain ? [`${ns}.svc.${s.clusterDomain}`, `svc.${s.clusterDomain}`, s.clusterDomain, ...s.host.searches] : [...s.host.searches];
    options = ['ndots:5'];
  }
  const dc = spec.dnsConfig;
  if (dc) {
    servers = [...servers, ...(dc.nameservers ?? [])];
    searches = [...searches, ...(dc.searches ?? [])];
    const opts = new Map(options.map((o) => [o.split(':')[0] ?? o, o]));
    for (const o of dc.options ?? []) opts.set(o.name, o.value !== undefined ? `${o.name}:${o.value}` : o.name);
    options = [...opts.values()];
  }
  return { servers: [...new Set(servers)].slice(0, 3), searches: [...new Set(searches)].slice(0, 32), options };
}

export function logDirectory(rootLogDir: string, pod: Pod): string {
  const m = pod.metadata ?? {};
  return join(rootLogDir, `${m.namespace ?? 'default'}_${m.name ?? ''}_${m.uid ?? ''}`);
}

export function sandboxConfig(pod: Pod, attempt: number, o: { logDir: string; dns: DnsSettings }): PodSandboxConfig {
  const m = pod.metadata ?? {};
  const spec = pod.spec ?? {};
  const ports: PortMapping[] = [];
  for (const c of spec.containers ?? []) {
    for (const p of c.ports ?? []) {
      if (!p.hostPort) continue;
      ports.push({ containerPort: p.containerPort, hostPort: p.hostPort, protocol: (p.protocol ?? 'TCP') as PortMapping['protocol'], ...(p.hostIP ? { hostIp: p.hostIP } : {}) });
    }
  }
  let hostname = spec.hostname || (m.name ?? '');
  if (hostname.length > 63) hostname = hostname.slice(0, 63).replace(/[-.]+$/, '');
  return {
    metadata: { name: m.name ?? '', namespace: m.namespace ?? 'default', uid: m.uid ?? '', attempt },
    hostname: spec.hostNetwork ? '' : hostname,
    logDirectory: logDirectory(o.logDir, pod),
    dnsConfig: podDns(pod, o.dns),
    portMappings: ports,
    labels: { ...(m.labels ?? {}), [LABEL_POD_NAME]: m.name ?? '', [LABEL_POD_NAMESPACE]: m.namespace ?? 'default', [LABEL_POD_UID]: m.uid ?? '' },
    annotations: { ...(m.annotations ?? {}) },
    linux: {
      cgroupParent: '',
      securityContext: {
        namespaceOptions: {
          network: spec.hostNetwork ? 'node' : 'pod',
          pid: spec.hostPID ? 'node' : (spec.shareProcessNamespace ? 'pod' : 'container'),
          ipc: spec.hostIPC ? 'node' : 'pod',
        },
      },
    },
  };
}

function milli(v: string | number | undefined): number | undefined {
  if (v === undefined) return undefined;
  return Math.round(parseQuantity(String(v)) * 1000);
}

export function linuxResources(c: Container, cfsQuota: boolean): LinuxContainerResources {
  const req = c.resources?.requests ?? {};
  const lim = c.resources?.limits ?? {};
  const cpuReq = milli(req.cpu) ?? milli(lim.cpu);
  const cpuLim = milli(lim.cpu);
  const memLim = lim.memory !== undefined ? Math.floor(parseQuantity(String(lim.memory))) : undefined;
  const out: { -readonly [K in keyof LinuxContainerResources]: LinuxContainerResources[K] } = {
    cpuShares: cpuReq === undefined ? 2 : Math.max(2, Math.floor((cpuReq * 1024) / 1000)),
  };
  if (cfsQuota && cpuLim !== undefined) {
    out.cpuPeriod = 100_000;
    out.cpuQuota = Math.max(1000, Math.floor((cpuLim * 100_000) / 1000));
  }
  if (memLim !== undefined) out.memoryLimitInBytes = memLim;
  return out;
}

export interface ContainerConfigInput {
  readonly pod: Pod;
  readonly container: Container;
  readonly restartCount: number;
  readonly image: string;
  readonly env: ReadonlyMap<string, string>;
  readonly command: readonly string[];
  readonly args: readonly string[];
  readonly volumePaths: ReadonlyMap<string, string>;
  /** The container's mounts, prepared with subPaths resolved (volumes/container-mounts.ts); else built from volumePaths. */
  readonly mounts?: readonly Mount[];
  /** Block volumes the container names in volumeDevices (volumes/container-mounts.ts containerDevices). */
  readonly devices?: readonly Device[];
  /** The pod's managed /etc/hosts (etc-hosts.ts), mounted unless the container mounts its own. */
  readonly hostsFile?: string;
  readonly cfsQuota: boolean;
  /**
   * An ephemeral container's target: the runtime id of the container whose process namespace
   * it joins (Kubernetes' TARGET mode), when the pod shares no process namespace of its own.
   */
  readonly targetId?: string;
}

export class ContainerConfigError extends Error {
  override readonly name = 'ContainerConfigError';
}

/** The container's process namespace: the node's, the pod's, a target container's, or its own. */
function pidNamespace(i: ContainerConfigInput): { pid: NamespaceMode; targetId?: string } {
  if (i.pod.spec?.hostPID) return { pid: 'node' };
  if (i.pod.spec?.shareProcessNamespace) return { pid: 'pod' };
  return i.targetId ? { pid: 'target', targetId: i.targetId } : { pid: 'container' };
}

export function containerConfig(i: ContainerConfigInput): ContainerConfig {
  const m = i.pod.metadata ?? {};
  const c = i.container;
  const mounts: Mount[] = i.mounts ? [...i.mounts] : [];
  for (const vm of i.mounts ? [] : c.volumeMounts ?? []) {
    const host = i.volumePaths.get(vm.name);
    if (host === undefined) throw new ContainerConfigError(`volumeMount ${vm.name} names no volume of the pod`);
    mounts.push({
      containerPath: vm.mountPath, hostPath: vm.subPath ? join(host, vm.subPath) : host, readonly: vm.readOnly === true,
      propagation: vm.mountPropagation === 'Bidirectional' ? 'bidirectional' : vm.mountPropagation === 'HostToContainer' ? 'host-to-container' : 'private',
    });
  }
  if (i.hostsFile && !mounts.some((x) => x.containerPath === '/etc/hosts')) {
    mounts.push({ containerPath: '/etc/hosts', hostPath: i.hostsFile, readonly: false, propagation: 'private' });
  }
  const sc = c.securityContext;
  return {
    metadata: { name: c.name, attempt: i.restartCount },
    image: i.image,
    command: [...i.command],
    args: [...i.args],
    ...(c.workingDir ? { workingDir: c.workingDir } : {}),
    envs: [...i.env].map(([key, value]) => ({ key, value })),
    mounts,
    ...(i.devices?.length ? { devices: [...i.devices] } : {}),
    labels: { [LABEL_POD_NAME]: m.name ?? '', [LABEL_POD_NAMESPACE]: m.namespace ?? 'default', [LABEL_POD_UID]: m.uid ?? '', [LABEL_CONTAINER_NAME]: c.name },
    annotations: { ...(m.annotations ?? {}), [ANNOTATION_RESTART_COUNT]: String(i.restartCount) },
    logPath: `${c.name}/${i.restartCount}.log`,
    stdin: c.stdin === true,
    stdinOnce: c.stdinOnce === true,
    tty: c.tty === true,
    linux: {
      resources: linuxResources(c, i.cfsQuota),
      securityContext: {
        namespaceOptions: {
          network: i.pod.spec?.hostNetwork ? 'node' : 'pod',
          ...pidNamespace(i),
          ipc: i.pod.spec?.hostIPC ? 'node' : 'pod',
        },
        ...(sc?.privileged ? { privileged: true } : {}),
        ...(sc?.runAsUser !== undefined ? { runAsUser: sc.runAsUser } : {}),
        ...(sc?.runAsGroup !== undefined ? { runAsGroup: sc.runAsGroup } : {}),
        ...(sc?.readOnlyRootFilesystem ? { readonlyRootfs: true } : {}),
        ...(sc?.capabilities ? { capabilities: sc.capabilities } : {}),
      },
    },
  };
}

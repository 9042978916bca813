/**
 * Node-side admission of what a pod asks of the host, as Kubernetes' node agent checks it:
 *   --allow-privileged           privileged containers (init, main, ephemeral)
 *   --host-network-sources       hostNetwork, by the pod's source (api, file, http; * = all)
 *   --host-pid-sources           hostPID
 *   --host-ipc-sources           hostIPC
 * (refused with reason Forbidden), and securityContext.sysctls (reason SysctlForbidden): the
 * safe set is always allowed; others only when --experimental-allowed-unsafe-sysctls names
 * them (or a prefix ending in *); a namespaced sysctl of a namespace the pod shares with the
 * host is refused, and so is any sysctl that is not namespaced at all.
 * A refused pod is never run: its status is Failed with the reason and message.
 */
import { CONFIG_SOURCE_ANNOTATION, type Container, type Pod } from '../pod-types.js';

export interface PodSecurityConfig {
  readonly allowPrivileged: boolean;
  readonly hostNetworkSources: readonly string[];
  readonly hostPidSources: readonly string[];
  readonly hostIpcSources: readonly string[];
  readonly allowedUnsafeSysctls: readonly string[];
}

export interface Verdict { readonly admit: boolean; readonly reason?: string; readonly message?: string }

/** Kubernetes' safe sysctls (namespaced, and unable to affect other pods). */
export const SAFE_SYSCTLS: readonly string[] = [
  'kernel.shm_rmid_forced',
  'net.ipv4.ip_local_port_range',
  'net.ipv4.tcp_syncookies',
  'net.ipv4.ping_group_range',
  'net.ipv4.ip_unprivileged_port_start',
  'net.ipv4.ip_local_reserved_ports',
  'net.ipv4.tcp_keepalive_time',
  'net.ipv4.tcp_fin_timeout',
  'net.ipv4.tcp_keepalive_intvl',
  'net.ipv4.tcp_keepalive_probes',
];

type SysctlNamespace = 'ipc' | 'net' | undefined;

/** Which namespace a sysctl lives in; undefined for one that is node-wide. */
export function sysctlNamespace(name: string): SysctlNamespace {
  const n = name.replace(/\//g, '.');
  if (n.startsWith('net.')) return 'net';
  if (['kernel.sem', 'kernel.shmall', 'kernel.shmmax', 'kernel.shmmni', 'kernel.shm_rmid_forced', 'kernel.msgmax', 'kernel.msgmnb', 'kernel.msgmni'].includes(n) || n.startsWith('fs.mqueue.')) return 'ipc';
  return undefined;
}

function sourceOf(pod: Pod): string {
  return pod.metadata?.annotations?.[CONFIG_SOURCE_ANNOTATION] ?? 'api';
}

function sourceAllowed(list: readonly string[], source: string): boolean {
  return list.includes('*') || list.includes(source);
}

function allContainers(pod: Pod): Container[] {
  return [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? []), ...(pod.spec?.ephemeralContainers ?? [])];
}

function unsafeAllowed(name: string, patterns: readonly string[]): boolean {
  return patterns.some((p) => (p.endsWith('*') ? name.startsWith(p.slice(0, -1)) : p === name));
}

export function podSysctls(pod: Pod): { name: string; value: string }[] {
  const list = (pod.spec?.securityContext as { sysctls?: unknown } | undefined)?.sysctls;
  if (!Array.isArray(list)) return [];
  return list.filter((s): s is { name: string; value: string } => typeof (s as { name?: unknown }).name === 'string')
    .map((s) => ({ name: s.name, value: String(s.value ?? '') }));
}

export function admitPodSecurity(pod: Pod, c: PodSecurityConfig): Verdict {
  const uid = pod.metadata?.uid ?? '';
  const spec = pod.spec ?? {};
  const source = sourceOf(pod);
  const forbidden = (what: string): Verdict => ({ admit: false, reason: 'Forbidden', message: `pod with UID "${uid}" specified ${what}, but is disallowed` });
  if (!c.allowPrivileged && allContainers(pod).some((x) => x.securityContext?.privileged === true)) return forbidden('privileged container');
  if (spec.hostNetwork && !sourceAllowed(c.hostNetworkSources, source)) return forbidden('host networking');
  if (spec.hostPID && !sourceAllowed(c.hostPidSources, source)) return forbidden('host PID');
  if (spec.hostIPC && !sourceAllowed(c.hostIpcSources, source)) return forbidden('host IPC');
  for (const { name } of podSysctls(pod)) {
    const ns = sysctlNamespace(name);
    const refuse = (why: string): Verdict => ({ admit: false, reason: 'SysctlForbidden', message: `forbidden sysctl: "${name}" ${why}` });
    if (!ns) return refuse('not namespaced');
    if (ns === 'net' && spec.hostNetwork) return refuse('not allowed with host net enabled');
    if (ns === 'ipc' && spec.hostIPC) return refuse('not allowed with host ipc enabled');
    if (!SAFE_SYSCTLS.includes(name.replace(/\//g, '.')) && !unsafeAllowed(name, c.allowedUnsafeSysctls)) return refuse('not allowlisted');
  }
  return { admit: true };
}

/**
 * The Pod Security Standards' checks (Kubernetes' pod-security-admission policy package), as
 * data: each check has an id, a level, the first policy version it applies to, and returns a
 * refusal reason and detail in Kubernetes' words, or nothing. The restricted level includes the
 * baseline checks except those a restricted check overrides.
 */
import type { ContainerShape, PodSpecShape } from '../pod-shape.js';
import type { ObjectMeta } from '../../../../api/resources/types.js';

export type Level = 'privileged' | 'baseline' | 'restricted';

export interface CheckResult { readonly reason: string; readonly detail: string }

export interface Check {
  readonly id: string;
  readonly level: 'baseline' | 'restricted';
  /** Minor version of v1.x from which the check applies (latest: always). */
  readonly since: number;
  /** Minor version from which the check no longer applies (a later version of it replaces it). */
  readonly until?: number;
  /** Baseline checks this restricted check replaces. */
  readonly overrides?: readonly string[];
  readonly run: (meta: ObjectMeta, spec: PodSpecShape) => CheckResult | undefined;
}

const pluralize = (one: string, many: string, n: number): string => (n === 1 ? one : many);
const joinQuote = (items: readonly string[]): string => items.map((s) => JSON.stringify(s)).join(', ');
const sortedUnique = (items: Iterable<string>): string[] => [...new Set(items)].sort();
const containersPhrase = (names: readonly string[]): string => `${pluralize('container', 'containers', names.length)} ${joinQuote(names)}`;

/** Init, regular and ephemeral containers (Kubernetes' visitContainers). */
function visit(spec: PodSpecShape, f: (c: ContainerShape) => void): void {
  for (const c of spec.initContainers ?? []) f(c);
  for (const c of spec.containers ?? []) f(c);
  for (const c of spec.ephemeralContainers ?? []) f(c);
}
const nameOf = (c: ContainerShape): string => c.name ?? '';
const isWindows = (spec: PodSpecShape): boolean => spec.os?.name === 'windows';
/** A pod in its own user namespace (hostUsers: false) is not held to the root-user checks. */
const userNamespaced = (spec: PodSpecShape): boolean => (spec as { hostUsers?: boolean }).hostUsers === false;

const BASELINE_CAPABILITIES = new Set(['AUDIT_WRITE', 'CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'FSETID', 'KILL', 'MKNOD', 'NET_BIND_SERVICE', 'SETFCAP', 'SETGID', 'SETPCAP', 'SETUID', 'SYS_CHROOT']);
const SELINUX_TYPES = new Set(['', 'container_t', 'container_init_t', 'container_kvm_t']);
const SYSCTLS: ReadonlyArray<readonly [number, string]> = [
  [0, 'kernel.shm_rmid_forced'], [0, 'net.ipv4.ip_local_port_range'], [0, 'net.ipv4.tcp_syncookies'], [0, 'net.ipv4.ping_group_range'],
  [0, 'net.ipv4.ip_unprivileged_port_start'], [27, 'net.ipv4.ip_local_reserved_ports'], [29, 'net.ipv4.tcp_keepalive_time'],
  [29, 'net.ipv4.tcp_fin_timeout'], [29, 'net.ipv4.tcp_keepalive_intvl'], [29, 'net.ipv4.tcp_keepalive_probes'],
];
/** Volume sources the restricted level allows. */
const RESTRICTED_VOLUME_OK = new Set(['configMap', 'csi', 'downwardAPI', 'emptyDir', 'ephemeral', 'image', 'persistentVolumeClaim', 'projected', 'secret']);
const VOLUME_SOURCES = ['hostPath', 'gcePersistentDisk', 'awsElasticBlockStore', 'gitRepo', 'nfs', 'iscsi', 'glusterfs', 'rbd', 'flexVolume', 'cinder',
  'cephfs', 'flocker', 'fc', 'azureFile', 'vsphereVolume', 'quobyte', 'azureDisk', 'photonPersistentDisk', 'portworxVolume', 'scaleIO', 'storageos'];
const validSeccomp = (t: string | undefined): boolean => t === 'RuntimeDefault' || t === 'Localhost';

/** "pod and containers "a"" phrases of checks that name both the pod and containers. */
function settersPhrase(pod: boolean, containers: readonly string[]): string[] {
  const out = pod ? ['pod'] : [];
  if (containers.length) out.push(containersPhrase(containers));
  return out;
}

function sysctlsFor(version: number): Set<string> {
  return new Set(SYSCTLS.filter(([v]) => v <= version).map(([, n]) => n));
}

function sysctlCheck(since: number, until: number | undefined): Check {
  const allowed = sysctlsFor(since);
  return {
    id: 'sysctls', level: 'baseline', since, ...(until !== undefined ? { until } : {}),
    run: (_m, spec) => {
      const bad = (spec.securityContext?.sysctls ?? []).map((s) => s.name).filter((n) => !allowed.has(n));
      return bad.length ? { reason: 'forbidden sysctls', detail: bad.join(', ') } : undefined;
    },
  };
}

export const CHECKS: readonly Check[] = [
  {
    id: 'appArmorProfile', level: 'baseline', since: 0,
    run: (meta, spec) => {
      const bad: string[] = [];
      for (const [k, v] of Object.entries(meta.annotations ?? {})) {
        if (k.startsWith('container.apparmor.security.beta.kubernetes.io/') && v !== '' && v !== 'runtime/default' && !v.startsWith('localhost/')) bad.push(`${k}=${JSON.stringify(v)}`);
      }
      if ((spec.securityContext?.appArmorProfile?.type) === 'Unconfined') bad.push('securityContext.appArmorProfile.type="Unconfined"');
      visit(spec, (c) => {
        if (c.securityContext?.appArmorProfile?.type === 'Unconfined') bad.push(`containers[${JSON.stringify(nameOf(c))}].securityContext.appArmorProfile.type="Unconfined"`);
      });
      bad.sort();
      return bad.length ? { reason: pluralize('forbidden AppArmor profile', 'forbidden AppArmor profiles', bad.length), detail: bad.join(', ') } : undefined;
    },
  },
  {
    id: 'capabilities_baseline', level: 'baseline', since: 0,
    run: (_m, spec) => {
      const bad: string[] = [];
      const caps = new Set<string>();
      visit(spec, (c) => {
        const added = (c.securityContext?.capabilities?.add ?? []).filter((x) => !BASELINE_CAPABILITIES.has(x));
        if (added.length) { bad.push(nameOf(c)); added.forEach((x) => caps.add(x)); }
      });
      return bad.length ? { reason: 'non-default capabilities', detail: `${containersPhrase(bad)} must not include ${joinQuote(sortedUnique(caps))} in securityContext.capabilities.add` } : undefined;
    },
  },
  {
    id: 'hostNamespaces', level: 'baseline', since: 0,
    run: (_m, spec) => {
      const used = [spec.hostNetwork && 'hostNetwork', spec.hostPID && 'hostPID', spec.hostIPC && 'hostIPC'].filter((x): x is string => !!x).sort();
      return used.length ? { reason: 'host namespaces', detail: used.map((u) => `${u}=true`).join(', ') } : undefined;
    },
  },
  {
    id: 'hostPathVolumes', level: 'baseline', since: 0,
    run: (_m, spec) => {
      const bad = (spec.volumes ?? []).filter((v) => v['hostPath'] != null).map((v) => v.name ?? '');
      return bad.length ? { reason: 'hostPath volumes', detail: `${pluralize('volume', 'volumes', bad.length)} ${joinQuote(bad)}` } : undefined;
    },
  },
  {
    id: 'hostProbesAndHostLifecycle', level: 'baseline', since: 34,
    run: (_m, spec) => {
      type Handler = { httpGet?: { host?: string }; tcpSocket?: { host?: string } } | undefined;
      const hostsOf = (h: Handler): string[] => [h?.httpGet?.host, h?.tcpSocket?.host].filter((x): x is string => !!x);
      const bad = new Set<string>();
      const hosts = new Set<string>();
      visit(spec, (c) => {
        const x = c as { livenessProbe?: Handler; readinessProbe?: Handler; startupProbe?: Handler; lifecycle?: { postStart?: Handler; preStop?: Handler } };
        const found = [x.livenessProbe, x.readinessProbe, x.startupProbe, x.lifecycle?.postStart, x.lifecycle?.preStop].flatMap(hostsOf);
        if (found.length) { bad.add(nameOf(c)); found.forEach((h) => hosts.add(h)); }
      });
      const names = sortedUnique(bad), list = sortedUnique(hosts);
      return names.length ? {
        reason: 'probe or lifecycle host',
        detail: `${containersPhrase(names)} ${pluralize('uses', 'use', names.length)} ${pluralize('probe or lifecycle host', 'probe or lifecycle hosts', list.length)} ${joinQuote(list)}`,
      } : undefined;
    },
  },
  {
    id: 'hostPorts', level: 'baseline', since: 0,
    run: (_m, spec) => {
      const bad: string[] = [];
      const ports = new Set<string>();
      visit(spec, (c) => {
        const hp = (c.ports ?? []).filter((p) => p.hostPort !== undefined && p.hostPort !== 0).map((p) => String(p.hostPort));
        if (hp.length) { bad.push(nameOf(c)); hp.forEach((p) => ports.add(p)); }
      });
      const list = sortedUnique(ports);
      return bad.length ? { reason: 'hostPort', detail: `${containersPhrase(bad)} ${pluralize('uses', 'use', bad.length)} ${pluralize('hostPort', 'hostPorts', list.length)} ${list.join(', ')}` } : undefined;
    },
  },
  {
    id: 'privileged', level: 'baseline', since: 0,
    run: (_m, spec) => {
      const bad: string[] = [];
      visit(spec, (c) => { if (c.securityContext?.privileged === true) bad.push(nameOf(c)); });
      return bad.length ? { reason: 'privileged', detail: `${containersPhrase(bad)} must not set securityContext.privileged=true` } : undefined;
    },
  },
  {
    id: 'procMount', level: 'baseline', since: 0,
    run: (_m, spec) => {
      const bad: string[] = [];
      const values = new Set<string>();
      visit(spec, (c) => {
        const pm = c.securityContext?.procMount;
        if (pm !== undefined && pm !== 'Default') { bad.push(nameOf(c)); values.add(pm); }
      });
      return bad.length ? { reason: 'procMount', detail: `${containersPhrase(bad)} must not set securityContext.procMount to ${joinQuote(sortedUnique(values))}` } : undefined;
    },
  },
  {
    id: 'seLinuxOptions', level: 'baseline', since: 0,
    run: (_m, spec) => {
      const badTypes = new Set<string>();
      let setUser = false, setRole = false;
      const valid = (o: Record<string, unknown>): boolean => {
        let ok = true;
        const type = String(o['type'] ?? '');
        if (!SELINUX_TYPES.has(type)) { ok = false; badTypes.add(type); }
        if (o['user']) { ok = false; setUser = true; }
        if (o['role']) { ok = false; setRole = true; }
        return ok;
      };
      const podBad = spec.securityContext?.seLinuxOptions ? !valid(spec.securityContext.seLinuxOptions) : false;
      const bad: string[] = [];
      visit(spec, (c) => { if (c.securityContext?.seLinuxOptions && !valid(c.securityContext.seLinuxOptions)) bad.push(nameOf(c)); });
      const setters = settersPhrase(podBad, bad);
      if (!setters.length) return undefined;
      const data: string[] = [];
      if (badTypes.size) data.push(`${pluralize('type', 'types', badTypes.size)} ${joinQuote(sortedUnique(badTypes))}`);
      if (setUser) data.push('user may not be set');
      if (setRole) data.push('role may not be set');
      return { reason: 'seLinuxOptions', detail: `${setters.join(' and ')} set forbidden securityContext.seLinuxOptions: ${data.join('; ')}` };
    },
  },
  {
    id: 'seccompProfile_baseline', level: 'baseline', since: 19,
    run: (_m, spec) => {
      const values = new Set<string>();
      const podType = spec.securityContext?.seccompProfile?.type;
      const podBad = spec.securityContext?.seccompProfile !== undefined && !validSeccomp(podType);
      if (podBad) values.add(podType ?? '');
      const bad: string[] = [];
      visit(spec, (c) => {
        const sp = c.securityContext?.seccompProfile;
        if (sp !== undefined && !validSeccomp(sp.type)) { bad.push(nameOf(c)); values.add(sp.type ?? ''); }
      });
      const setters = settersPhrase(podBad, bad);
      return setters.length ? { reason: 'seccompProfile', detail: `${setters.join(' and ')} must not set securityContext.seccompProfile.type to ${joinQuote(sortedUnique(values))}` } : undefined;
    },
  },
  sysctlCheck(0, 27), sysctlCheck(27, 29), sysctlCheck(29, undefined),
  {
    id: 'windowsHostProcess', level: 'baseline', since: 0,
    run: (_m, spec) => {
      const podBad = spec.securityContext?.windowsOptions?.hostProcess === true;
      const bad: string[] = [];
      visit(spec, (c) => { if (c.securityContext?.windowsOptions?.hostProcess === true) bad.push(nameOf(c)); });
      const setters = settersPhrase(podBad, bad);
      return setters.length ? { reason: 'hostProcess', detail: `${setters.join(' and ')} must not set securityContext.windowsOptions.hostProcess=true` } : undefined;
    },
  },
  {
    id: 'allowPrivilegeEscalation', level: 'restricted', since: 8,
    run: (_m, spec) => {
      if (isWindows(spec)) return undefined;
      const bad: string[] = [];
      visit(spec, (c) => { if (c.securityContext?.allowPrivilegeEscalation !== false) bad.push(nameOf(c)); });
      return bad.length ? { reason: 'allowPrivilegeEscalation != false', detail: `${containersPhrase(bad)} must set securityContext.allowPrivilegeEscalation=false` } : undefined;
    },
  },
  {
    id: 'capabilities_restricted', level: 'restricted', since: 22, overrides: ['capabilities_baseline'],
    run: (_m, spec) => {
      if (isWindows(spec)) return undefined;
      const missingDrop: string[] = [];
      const adding: string[] = [];
      const caps = new Set<string>();
      visit(spec, (c) => {
        const cp = c.securityContext?.capabilities;
        if (!cp) { missingDrop.push(nameOf(c)); return; }
        if (!(cp.drop ?? []).includes('ALL')) missingDrop.push(nameOf(c));
        const extra = (cp.add ?? []).filter((x) => x !== 'NET_BIND_SERVICE');
        if (extra.length) { adding.push(nameOf(c)); extra.forEach((x) => caps.add(x)); }
      });
      const details: string[] = [];
      if (missingDrop.length) details.push(`${containersPhrase(missingDrop)} must set securityContext.capabilities.drop=["ALL"]`);
      if (adding.length) details.push(`${containersPhrase(adding)} must not include ${joinQuote(sortedUnique(caps))} in securityContext.capabilities.add`);
      return details.length ? { reason: 'unrestricted capabilities', detail: details.join('; ') } : undefined;
    },
  },
  {
    id: 'restrictedVolumes', level: 'restricted', since: 0, overrides: ['hostPathVolumes'],
    run: (_m, spec) => {
      const bad: string[] = [];
      const types = new Set<string>();
      for (const v of spec.volumes ?? []) {
        const sources = Object.keys(v).filter((k) => k !== 'name' && v[k] != null);
        if (sources.some((s) => RESTRICTED_VOLUME_OK.has(s))) continue;
        bad.push(v.name ?? '');
        const known = sources.find((s) => VOLUME_SOURCES.includes(s));
        types.add(known ?? 'unknown');
      }
      const list = sortedUnique(types);
      return bad.length ? {
        reason: 'restricted volume types',
        detail: `${pluralize('volume', 'volumes', bad.length)} ${joinQuote(bad)} ${pluralize('uses', 'use', bad.length)} ${pluralize('restricted volume type', 'restricted volume types', list.length)} ${joinQuote(list)}`,
      } : undefined;
    },
  },
  {
    id: 'runAsNonRoot', level: 'restricted', since: 0,
    run: (_m, spec) => {
      if (userNamespaced(spec)) return undefined;
      const setters: string[] = [];
      let podTrue = false;
      const podValue = spec.securityContext?.runAsNonRoot;
      if (podValue === false) setters.push('pod'); else if (podValue === true) podTrue = true;
      const explicit: string[] = [];
      const implicit: string[] = [];
      visit(spec, (c) => {
        const v = c.securityContext?.runAsNonRoot;
        if (v !== undefined && v !== null) { if (!v) explicit.push(nameOf(c)); } else if (!podTrue) implicit.push(nameOf(c));
      });
      if (explicit.length) setters.push(containersPhrase(explicit));
      if (setters.length) return { reason: 'runAsNonRoot != true', detail: `${setters.join(' and ')} must not set securityContext.runAsNonRoot=false` };
      if (implicit.length) return { reason: 'runAsNonRoot != true', detail: `pod or ${containersPhrase(implicit)} must set securityContext.runAsNonRoot=true` };
      return undefined;
    },
  },
  {
    id: 'runAsUser', level: 'restricted', since: 23,
    run: (_m, spec) => {
      if (userNamespaced(spec)) return undefined;
      const bad: string[] = [];
      visit(spec, (c) => { if (c.securityContext?.runAsUser === 0) bad.push(nameOf(c)); });
      const setters = settersPhrase(spec.securityContext?.runAsUser === 0, bad);
      return setters.length ? { reason: 'runAsUser=0', detail: `${setters.join(' and ')} must not set runAsUser=0` } : undefined;
    },
  },
  {
    id: 'seccompProfile_restricted', level: 'restricted', since: 19, overrides: ['seccompProfile_baseline'],
    run: (_m, spec) => {
      if (isWindows(spec)) return undefined;
      const values = new Set<string>();
      const sp = spec.securityContext?.seccompProfile;
      let podSet = false;
      const setters: string[] = [];
      if (sp !== undefined) {
        if (!validSeccomp(sp.type)) { setters.push('pod'); values.add(sp.type ?? ''); } else podSet = true;
      }
      const explicit: string[] = [];
      const implicit: string[] = [];
      visit(spec, (c) => {
        const csp = c.securityContext?.seccompProfile;
        if (csp !== undefined) { if (!validSeccomp(csp.type)) { explicit.push(nameOf(c)); values.add(csp.type ?? ''); } } else if (!podSet) implicit.push(nameOf(c));
      });
      if (explicit.length) setters.push(containersPhrase(explicit));
      if (setters.length) return { reason: 'seccompProfile', detail: `${setters.join(' and ')} must not set securityContext.seccompProfile.type to ${joinQuote(sortedUnique(values))}` };
      if (implicit.length) return { reason: 'seccompProfile', detail: `pod or ${containersPhrase(implicit)} must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"` };
      return undefined;
    },
  },
];

/**
 * What the pod manager and pod workers ask of the node's guards, in one place: admission
 * (host namespaces, privileged, sysctls, then exclusive CPUs), the sandbox's cgroup parent,
 * sysctls and seccomp profile, the pod cgroup before the sandbox, each container's cpuset and
 * seccomp profile, and clean-up when a pod is gone. A reconcile loop keeps the cpusets of
 * running containers in line with the CPU manager every --cpu-manager-reconcile-period (and
 * recomputes the QoS cgroups, sweeping pod cgroups left behind). Containers adopted after an
 * agent restart are not tracked for cpuset updates until they are restarted.
 * Contract: `admit` and `container` are synchronous and never touch the runtime; `container`
 * throws (ContainerConfigError-like, the worker reports CreateContainerConfigError) for a bad
 * seccomp profile; everything else fails soft and logs.
 */
import type { Logger } from 'pino';
import type { Container, Pod } from '../pod-types.js';
import type { ContainerConfig, PodSandboxConfig, RuntimeBackend } from '../runtime/runtime.js';
import { admitPodSecurity, podSysctls, type PodSecurityConfig, type Verdict } from '../safety/pod-security.js';
import { containerSeccomp, podSeccomp } from '../safety/seccomp.js';
import type { ContainerManager } from './container-manager.js';
import { CpuManagerError, type CpuManager } from './cpu-manager.js';

export interface PodHooks {
  admit(pod: Pod): Verdict;
  sandbox(pod: Pod, config: PodSandboxConfig): PodSandboxConfig;
  preparePod(pod: Pod): Promise<void>;
  container(pod: Pod, c: Container, config: ContainerConfig): ContainerConfig;
  containerStarted(pod: Pod, c: Container, id: string): void;
  podRemoved(pod: Pod): Promise<void>;
}

export interface NodePodHooksOptions {
  readonly security: PodSecurityConfig;
  readonly seccompProfileRoot: string;
  readonly cm?: ContainerManager;
  readonly cpu?: CpuManager;
  readonly runtime: RuntimeBackend;
  readonly reconcilePeriodMs: number;
  readonly log: Logger;
}

export class NodePodHooks implements PodHooks {
  private activePods: () => readonly Pod[] = () => [];
  /** Running containers by id: their pod, name and the cpuset last given to them. */
  private readonly containers = new Map<string, { podUid: string; name: string; cpuset?: string }>();

  constructor(private readonly o: NodePodHooksOptions) {}

  trackPods(list: () => readonly Pod[]): void {
    this.activePods = list;
    this.o.cm?.trackPods(list);
  }

  admit(pod: Pod): Verdict {
    const v = admitPodSecurity(pod, this.o.security);
    if (!v.admit) return v;
    try {
      this.o.cpu?.allocate(pod);
    } catch (e) {
      if (!(e instanceof CpuManagerError)) throw e;
      return { admit: false, reason: 'UnexpectedAdmissionError', message: `Allocate failed due to ${e.message}, which is unexpected` };
    }
    return v;
  }

  sandbox(pod: Pod, config: PodSandboxConfig): PodSandboxConfig {
    const sysctls = Object.fromEntries(podSysctls(pod).map((s) => [s.name, s.value]));
    let seccomp;
    try { seccomp = podSeccomp(pod, this.o.seccompProfileRoot); } catch { seccomp = undefined; } // the containers report it
    const linux = config.linux ?? {};
    return {
      ...config,
      linux: {
        ...linux,
        cgroupParent: this.o.cm?.podCgroupParent(pod) ?? linux.cgroupParent ?? '',
        sysctls: { ...linux.sysctls, ...sysctls },
        securityContext: { ...linux.securityContext, ...(seccomp ? { seccomp } : {}) },
      },
    };
  }

  async preparePod(pod: Pod): Promise<void> {
    await this.o.cm?.ensurePod(pod);
  }

  container(pod: Pod, c: Container, config: ContainerConfig): ContainerConfig {
    const seccomp = containerSeccomp(pod, c, this.o.seccompProfileRoot);
    const cpuset = this.o.cpu?.cpusetFor(pod.metadata?.uid ?? '', c.name);
    const linux = config.linux ?? {};
    return {
      ...config,
      linux: {
        ...linux,
        resources: { ...linux.resources, ...(cpuset !== undefined ? { cpusetCpus: cpuset } : {}) },
        securityContext: { ...linux.securityContext, ...(seccomp ? { seccomp } : {}) },
      },
    };
  }

  containerStarted(pod: Pod, c: Container, id: string): void {
    if (!this.o.cpu?.enabled) return;
    const uid = pod.metadata?.uid ?? '';
    this.containers.set(id, { podUid: uid, name: c.name, cpuset: this.o.cpu.cpusetFor(uid, c.name) });
    // A new exclusive assignment shrinks the pool now, not a period later.
    void this.reconcile().catch((e: Error) => this.o.log.warn({ err: e.message }, 'CPU manager reconcile failed'));
  }

  async podRemoved(pod: Pod): Promise<void> {
    const uid = pod.metadata?.uid ?? '';
    for (const [id, x] of this.containers) if (x.podUid === uid) this.containers.delete(id);
    if (this.o.cpu?.release(uid)) await this.reconcile();
    await this.o.cm?.removePod(pod).catch((e: Error) => this.o.log.warn({ pod: uid, err: e.message }, 'pod cgroup not removed'));
  }

  private reconciling?: Promise<void>;

  /** Brings every tracked container's cpuset in line; releases CPUs of pods no longer active. */
  reconcile(): Promise<void> {
    this.reconciling ??= this.reconcileOnce().finally(() => { this.reconciling = undefined; });
    return this.reconciling;
  }

  private async reconcileOnce(): Promise<void> {
    const cpu = this.o.cpu;
    if (!cpu?.enabled) return;
    const active = new Set(this.activePods().map((p) => p.metadata?.uid ?? ''));
    cpu.releaseStale(active);
    const update = this.o.runtime.updateContainerResources?.bind(this.o.runtime);
    for (const [id, x] of this.containers) {
      if (!active.has(x.podUid)) { this.containers.delete(id); continue; }
      const want = cpu.cpusetFor(x.podUid, x.name);
      if (want === undefined || want === x.cpuset || !update) continue;
      try {
        await update(id, { cpusetCpus: want });
        x.cpuset = want;
      } catch (e) {
        this.o.log.debug({ container: id, err: (e as Error).message }, 'cpuset not updated');
      }
    }
  }

  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      await new Promise<void>((r) => { const t = setTimeout(r, this.o.reconcilePeriodMs); t.unref(); signal.addEventListener('abort', () => { clearTimeout(t); r(); }, { once: true }); });
      if (signal.aborted) break;
      await this.reconcile().catch((e: Error) => this.o.log.warn({ err: e.message }, 'CPU manager reconcile failed'));
      // Pods that finished no longer count in the QoS cgroups; their emptied cgroups go.
      await this.o.cm?.updateQos().catch((e: Error) => this.o.log.debug({ err: e.message }, 'QoS cgroups not updated'));
      await this.o.cm?.sweep().catch(() => undefined);
    }
  }
}

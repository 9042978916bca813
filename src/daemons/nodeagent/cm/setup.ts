/**
 * Builds the node's guards from the options: the cgroup container manager (only for a runtime
 * with real containers: CRI; a fake runtime has no cgroups to write), the CPU manager and the
 * pod security checks, joined into the PodHooks the pod manager and workers call.
 * Option errors become StartupError naming the option.
 */
import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import type { NodeagentConfig } from '../../../flags/nodeagent.js';
import type { HostFacts } from '../host-facts.js';
import type { RuntimeBackend } from '../runtime/runtime.js';
import { StartupError } from '../startup-checks.js';
import { DEFAULT_CGROUP_MOUNT, openCgroupFs } from './cgroup-fs.js';
import { CgroupConfigError, ContainerManager } from './container-manager.js';
import { CpuManager, CpuManagerError, onlineCpus, reservedCpuMilli } from './cpu-manager.js';
import { NodePodHooks } from './pod-hooks.js';

export interface NodeGuardsOptions {
  readonly runtime: RuntimeBackend;
  readonly host: HostFacts;
  readonly log: Logger;
  /** Where the cgroup filesystem is mounted (tests); default /sys/fs/cgroup. */
  readonly cgroupMount?: string;
}

type GuardConfig = Pick<NodeagentConfig,
  'cgroupDriver' | 'cgroupsPerQos' | 'cgroupRoot' | 'enforceNodeAllocatable' | 'systemReserved' | 'coreReserved' |
  'systemReservedCgroup' | 'coreReservedCgroup' | 'nodeagentCgroups' | 'runtimeCgroups' | 'systemCgroups' | 'cpuCfsQuota' |
  'experimentalQosReserved' | 'cpuManagerPolicy' | 'cpuManagerReconcilePeriod' | 'rootDir' | 'allowPrivileged' |
  'hostNetworkSources' | 'hostPidSources' | 'hostIpcSources' | 'experimentalAllowedUnsafeSysctls' | 'seccompProfileRoot'>;

export async function startNodeGuards(config: GuardConfig, o: NodeGuardsOptions): Promise<{ hooks: NodePodHooks; cm?: ContainerManager; cpu?: CpuManager }> {
  try {
    let cm: ContainerManager | undefined;
    if (o.runtime.name === 'cri') {
      const fs = openCgroupFs(o.cgroupMount ?? DEFAULT_CGROUP_MOUNT);
      cm = new ContainerManager({
        fs, driver: config.cgroupDriver as 'cgroupfs' | 'systemd', cgroupsPerQos: config.cgroupsPerQos, cgroupRoot: config.cgroupRoot,
        enforceNodeAllocatable: config.enforceNodeAllocatable, systemReserved: config.systemReserved, coreReserved: config.coreReserved,
        systemReservedCgroup: config.systemReservedCgroup, coreReservedCgroup: config.coreReservedCgroup,
        nodeagentCgroups: config.nodeagentCgroups, runtimeCgroups: config.runtimeCgroups, systemCgroups: config.systemCgroups,
        cpuCfsQuota: config.cpuCfsQuota, qosReserved: config.experimentalQosReserved,
        capacity: { cpuMilli: o.host.cpuCores * 1000, memoryBytes: o.host.memoryBytes }, log: o.log.child({ component: 'cgroups' }),
      });
      await cm.start();
    }
    let online: string | undefined;
    try { online = readFileSync('/sys/devices/system/cpu/online', 'utf8'); } catch { online = undefined; }
    const cpu = new CpuManager({
      policy: config.cpuManagerPolicy as 'none' | 'static', rootDir: config.rootDir, cpus: onlineCpus(o.host.cpuCores, online),
      reservedMilli: reservedCpuMilli(config.systemReserved, config.coreReserved), log: o.log.child({ component: 'cpu-manager' }),
    });
    cpu.start();
    const hooks = new NodePodHooks({
      security: {
        allowPrivileged: config.allowPrivileged, hostNetworkSources: config.hostNetworkSources, hostPidSources: config.hostPidSources,
        hostIpcSources: config.hostIpcSources, allowedUnsafeSysctls: config.experimentalAllowedUnsafeSysctls,
      },
      seccompProfileRoot: config.seccompProfileRoot, ...(cm ? { cm } : {}), cpu, runtime: o.runtime,
      reconcilePeriodMs: Math.max(1000, config.cpuManagerReconcilePeriod), log: o.log.child({ component: 'pod-hooks' }),
    });
    return { hooks, ...(cm ? { cm } : {}), cpu };
  } catch (e) {
    if (e instanceof CgroupConfigError || e instanceof CpuManagerError) throw new StartupError(e.message);
    throw e;
  }
}

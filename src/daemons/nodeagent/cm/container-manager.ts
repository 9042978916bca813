/**
 * The container manager's cgroup side, as Kubernetes' node agent arranges a node:
 *
 *   <cgroup-root>/kubepods              node allocatable: cpu.shares and memory limit of what
 *                                       pods may use (capacity minus --system-reserved and
 *                                       --core-reserved with --enforce-node-allocatable=pods,
 *                                       else capacity)
 *   <cgroup-root>/kubepods/pod<uid>             Guaranteed pods
 *   <cgroup-root>/kubepods/burstable            cpu.shares = the Burstable pods' cpu requests
 *   <cgroup-root>/kubepods/burstable/pod<uid>
 *   <cgroup-root>/kubepods/besteffort           cpu.shares = 2
 *   <cgroup-root>/kubepods/besteffort/pod<uid>
 *
 * (systemd naming with --cgroup-driver=systemd: kubepods.slice/kubepods-burstable.slice/...).
 * Each pod cgroup carries the pod's summed requests and limits (pod-resources.ts) and is the
 * cgroup parent the runtime puts the pod's sandbox and containers under. With
 * --experimental-qos-reserved=memory=P%, the Burstable and BestEffort cgroups get memory limits
 * that keep P % of the higher classes' requests for them. --enforce-node-allocatable with
 * system-reserved / core-reserved limits those existing cgroups to the reserved amounts.
 * --nodeagent-cgroups moves this process into that cgroup, --runtime-cgroups creates the
 * runtime's (it is used for the runtime's figures; a remote runtime's processes are not ours
 * to move), and --system-cgroups (other than "/") moves every non-kernel process still in the
 * root cgroup into it.
 * Without --cgroups-per-qos, pods go directly under --cgroup-root (the runtime's default when
 * empty) and no cgroup is written.
 * Contract: `start` fails with CgroupConfigError naming the option when the node cannot be
 * arranged; pod cgroups are created before the sandbox and removed (when empty) after it;
 * the QoS cgroups are recomputed after every pod change.
 */
import { existsSync } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { parseQuantity } from '../../../util/quantity.js';
import type { Pod } from '../pod-types.js';
import type { CgroupFs, CgroupResources } from './cgroup-fs.js';
import { cgroupPath, parseCgroupName, podCgroupName, qosCgroupName, type CgroupDriver, type CgroupName } from './cgroup-name.js';
import { milliCpuToShares, MIN_SHARES, podAmounts, podCgroupResources, podQos } from './pod-resources.js';

export class CgroupConfigError extends Error {
  override readonly name = 'CgroupConfigError';
}

export interface ContainerManagerConfig {
  readonly fs: CgroupFs;
  readonly driver: CgroupDriver;
  readonly cgroupsPerQos: boolean;
  readonly cgroupRoot: string;
  readonly enforceNodeAllocatable: readonly string[];
  readonly systemReserved: Readonly<Record<string, string>>;
  readonly coreReserved: Readonly<Record<string, string>>;
  readonly systemReservedCgroup: string;
  readonly coreReservedCgroup: string;
  readonly nodeagentCgroups: string;
  readonly runtimeCgroups: string;
  readonly systemCgroups: string;
  readonly cpuCfsQuota: boolean;
  readonly qosReserved: Readonly<Record<string, string>>;
  readonly capacity: { readonly cpuMilli: number; readonly memoryBytes: number };
  readonly log: Logger;
  /** Our own pid (tests move a child instead). */
  readonly pid?: number;
  /** Where /proc is (tests). */
  readonly procRoot?: string;
  /**
   * Whether the runtime creates cgroups through systemd (default: systemd is running, i.e.
   * /run/systemd/system exists). containerd hands a cgroup parent ending in ".slice" to runc as
   * a systemd unit; a runc on cgroupfs would then make "<slice>:cri-containerd:<id>" at the
   * top of the hierarchy, outside the pod cgroup. Without systemd the parent is given as
   * "<slice path>/." so that containerd joins the container id to the path instead.
   */
  readonly runtimeSystemd?: boolean;
  /** Pod cgroups found at start older than this with nothing running are removed; default 1 minute. */
  readonly staleAfterMs?: number;
}

function amount(map: Readonly<Record<string, string>>, key: string, scale = 1): number {
  const v = map[key];
  if (!v) return 0;
  try { return Math.round(parseQuantity(v) * scale); } catch { return 0; }
}

/** memory=50% → 50; undefined when not set. */
export function qosReservedPercent(map: Readonly<Record<string, string>>): number | undefined {
  const v = map.memory;
  if (v === undefined) return undefined;
  const m = /^(\d+)%$/.exec(v.trim());
  if (!m) throw new CgroupConfigError(`--experimental-qos-reserved: memory=${v} is not a percentage (for example memory=50%)`);
  const p = Number(m[1]);
  if (p > 100) throw new CgroupConfigError(`--experimental-qos-reserved: memory=${v} is above 100%`);
  return p;
}

export class ContainerManager {
  readonly root: CgroupName;
  private readonly created = new Set<string>();
  private activePods: () => readonly Pod[] = () => [];
  private qosReserved?: number;

  constructor(private readonly c: ContainerManagerConfig) {
    this.root = parseCgroupName(c.cgroupRoot || '/', c.driver);
  }

  get fs(): CgroupFs { return this.c.fs; }
  private path(name: CgroupName): string { return cgroupPath(name, this.c.driver); }

  /** The pods QoS cgroups are computed from (the agent's admitted, unfinished pods). */
  trackPods(list: () => readonly Pod[]): void { this.activePods = list; }

  private enforced(level: string): boolean { return this.c.enforceNodeAllocatable.includes(level); }

  /** Node allocatable in absolute terms: capacity minus both reservations (no eviction threshold). */
  allocatable(): { cpuMilli: number; memoryBytes: number } {
    const r = [this.c.systemReserved, this.c.coreReserved];
    return {
      cpuMilli: Math.max(0, this.c.capacity.cpuMilli - r.reduce((s, m) => s + amount(m, 'cpu', 1000), 0)),
      memoryBytes: Math.max(0, this.c.capacity.memoryBytes - r.reduce((s, m) => s + amount(m, 'memory'), 0)),
    };
  }

  async start(): Promise<void> {
    const c = this.c;
    const realLevels = c.enforceNodeAllocatable.filter((x) => x !== 'none');
    if (!c.cgroupsPerQos && realLevels.length > 0) {
      throw new CgroupConfigError(`--enforce-node-allocatable=${realLevels.join(',')} needs --cgroups-per-qos=true (or --enforce-node-allocatable=none)`);
    }
    this.qosReserved = qosReservedPercent(c.qosReserved);
    try {
      if (c.cgroupsPerQos) {
        if (c.cgroupRoot && !c.fs.exists(this.path(this.root))) {
          throw new CgroupConfigError(`--cgroup-root ${c.cgroupRoot}: the cgroup does not exist`);
        }
        const limits = this.enforced('pods') ? this.allocatable() : c.capacity;
        await c.fs.ensure(this.path([...this.root, 'kubepods']), { cpuShares: milliCpuToShares(limits.cpuMilli), memoryLimit: limits.memoryBytes });
        await c.fs.ensure(this.path(qosCgroupName(this.root, 'Burstable')), { cpuShares: MIN_SHARES });
        await c.fs.ensure(this.path(qosCgroupName(this.root, 'BestEffort')), { cpuShares: MIN_SHARES });
        await this.removeStalePodCgroups();
        await this.updateQos();
      }
      if (this.enforced('system-reserved')) await this.enforceReserved('--system-reserved-cgroup', c.systemReservedCgroup, c.systemReserved);
      if (this.enforced('core-reserved')) await this.enforceReserved('--core-reserved-cgroup', c.coreReservedCgroup, c.coreReserved);
      if (c.nodeagentCgroups) {
        const p = this.path(parseCgroupName(c.nodeagentCgroups, c.driver));
        await c.fs.ensure(p);
        await c.fs.addProcess(p, c.pid ?? process.pid);
        c.log.info({ cgroup: p }, 'node agent moved into --nodeagent-cgroups');
      }
      if (c.runtimeCgroups) await c.fs.ensure(this.path(parseCgroupName(c.runtimeCgroups, c.driver)));
      if (c.systemCgroups && c.systemCgroups !== '/') await this.moveSystemProcesses(this.path(parseCgroupName(c.systemCgroups, c.driver)));
    } catch (e) {
      if (e instanceof CgroupConfigError) throw e;
      throw new CgroupConfigError(`cgroups: ${(e as Error).message}`);
    }
    c.log.info({ version: c.fs.version, driver: c.driver, root: this.path(this.root), perQos: c.cgroupsPerQos }, 'cgroups arranged');
  }

  private async enforceReserved(option: string, cgroup: string, reserved: Readonly<Record<string, string>>): Promise<void> {
    const p = this.path(parseCgroupName(cgroup, this.c.driver));
    // As Kubernetes: these cgroups belong to the system's own services; we limit, never create them.
    if (!this.c.fs.exists(p)) throw new CgroupConfigError(`${option} ${cgroup}: the cgroup does not exist`);
    const res: { -readonly [K in keyof CgroupResources]: CgroupResources[K] } = {};
    const cpu = amount(reserved, 'cpu', 1000);
    const mem = amount(reserved, 'memory');
    if (cpu > 0) res.cpuShares = milliCpuToShares(cpu);
    if (mem > 0) res.memoryLimit = mem;
    await this.c.fs.update(p, res);
  }

  /** Every process in the root cgroup except init and kernel threads (no command line) moves to `p`. */
  private async moveSystemProcesses(p: string): Promise<void> {
    await this.c.fs.ensure(p);
    const proc = this.c.procRoot ?? '/proc';
    let moved = 0;
    for (const pid of await this.c.fs.processes('/')) {
      if (pid === 1) continue;
      const cmd = await readFile(`${proc}/${pid}/cmdline`).catch(() => Buffer.alloc(0));
      if (cmd.length === 0) continue;
      await this.c.fs.addProcess(p, pid).then(() => { moved++; }, () => undefined);
    }
    this.c.log.info({ cgroup: p, moved }, 'processes of the root cgroup moved into --system-cgroups');
  }

  /** The pod's cgroup below the mount point ('' without --cgroups-per-qos and --cgroup-root). */
  podCgroupPath(pod: Pod): string {
    if (!this.c.cgroupsPerQos) return this.root.length ? this.path(this.root) : '';
    return this.path(podCgroupName(this.root, podQos(pod), pod.metadata?.uid ?? ''));
  }

  /** The cgroup parent handed to the runtime for this pod's sandbox and containers ('' = the runtime's default). */
  podCgroupParent(pod: Pod): string {
    const p = this.podCgroupPath(pod);
    const systemd = this.c.runtimeSystemd ?? existsSync('/run/systemd/system');
    return p.endsWith('.slice') && !systemd ? `${p}/.` : p;
  }

  /** Creates (or updates) the pod's cgroup with its summed requests and limits. */
  async ensurePod(pod: Pod): Promise<void> {
    if (!this.c.cgroupsPerQos) return;
    const p = this.podCgroupPath(pod);
    await this.c.fs.ensure(p, podCgroupResources(pod, this.c.cpuCfsQuota));
    this.created.add(p);
    await this.updateQosSoftly();
  }

  /** A QoS limit the kernel refuses (usage above a new memory limit) must not hold up a pod. */
  private async updateQosSoftly(): Promise<void> {
    await this.updateQos().catch((e: Error) => this.c.log.warn({ err: e.message }, 'QoS cgroups not updated'));
  }

  /** Removes the pod's cgroup; left for a later sweep when something still runs in it. */
  async removePod(pod: Pod): Promise<void> {
    if (!this.c.cgroupsPerQos) return;
    await this.sweep(new Set([this.podCgroupPath(pod)]));
    await this.updateQosSoftly();
  }

  /**
   * Removes pod cgroups this agent created that no active pod owns: only ours, since other
   * agents on the machine may share the kubepods tree. Runtime-created children (a
   * container's leftovers) go first.
   */
  async sweep(only?: ReadonlySet<string>): Promise<void> {
    // `only`: pods whose worker is ending (it counts as active until it has ended).
    const active = new Set(only ? [] : this.activePods().map((p) => this.podCgroupPath(p)));
    for (const p of [...this.created]) {
      if ((only && !only.has(p)) || active.has(p)) continue;
      try {
        await this.c.fs.remove(p);
        this.created.delete(p);
      } catch (e) {
        this.c.log.debug({ cgroup: p, err: (e as Error).message }, 'pod cgroup not removed yet');
      }
    }
  }

  /**
   * At start: pod cgroups nothing runs in any more (their pods ended while no agent watched)
   * go, as Kubernetes cleans orphaned pod cgroups. A cgroup with processes refuses removal and
   * stays; one younger than a minute is left alone (another agent sharing the tree may be
   * about to start its sandbox).
   */
  private async removeStalePodCgroups(): Promise<void> {
    const minAgeMs = this.c.staleAfterMs ?? 60_000;
    for (const qos of ['Guaranteed', 'Burstable', 'BestEffort'] as const) {
      const parent = this.path(qosCgroupName(this.root, qos));
      const dir = this.c.fs.version === 2 ? join(this.c.fs.mountRoot, parent) : join(this.c.fs.mountRoot, 'cpu', parent);
      const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
      for (const e of entries) {
        if (!e.isDirectory() || !(this.c.driver === 'systemd' ? /-pod[\w]+\.slice$/ : /^pod[\w-]+$/).test(e.name)) continue;
        const st = await stat(join(dir, e.name)).catch(() => undefined);
        if (!st || Date.now() - st.ctimeMs < minAgeMs) continue;
        await this.c.fs.remove(`${parent}/${e.name}`).catch(() => undefined);
      }
    }
  }

  /** Burstable shares from its pods' requests; memory limits when --experimental-qos-reserved. */
  async updateQos(): Promise<void> {
    if (!this.c.cgroupsPerQos) return;
    let burstCpu = 0, guarMem = 0, burstMem = 0;
    for (const pod of this.activePods()) {
      const a = podAmounts(pod);
      const q = podQos(pod);
      if (q === 'Burstable') { burstCpu += a.cpuReq; burstMem += a.memReq; }
      if (q === 'Guaranteed') guarMem += a.memReq;
    }
    const burstable: { -readonly [K in keyof CgroupResources]: CgroupResources[K] } = { cpuShares: milliCpuToShares(burstCpu) };
    const besteffort: { -readonly [K in keyof CgroupResources]: CgroupResources[K] } = { cpuShares: MIN_SHARES };
    if (this.qosReserved !== undefined) {
      const alloc = this.allocatable().memoryBytes;
      const bl = Math.max(0, alloc - Math.floor((guarMem * this.qosReserved) / 100));
      burstable.memoryLimit = bl;
      besteffort.memoryLimit = Math.max(0, bl - Math.floor((burstMem * this.qosReserved) / 100));
    }
    await this.c.fs.update(this.path(qosCgroupName(this.root, 'Burstable')), burstable);
    await this.c.fs.update(this.path(qosCgroupName(this.root, 'BestEffort')), besteffort);
  }
}

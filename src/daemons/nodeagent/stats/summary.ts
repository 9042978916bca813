/**
 * The Summary API (stats/v1alpha1, kubelet's /stats/summary): node, pod and container CPU,
 * memory, network, filesystem and volume figures. Containers' CPU and memory come from CRI
 * ListContainerStats where the runtime answers it, completed (usage, rss, page faults) or
 * replaced by their cgroups; a pod's network from /proc/<pid>/net/dev of one of its processes
 * (its network namespace); volumes and logs from `du` kept for --volume-stats-agg-period.
 * CPU rates (usageNanoCores) come from two samples at least a second apart: a housekeeping loop
 * samples every 10 s, so the first scrape already has a rate.
 */
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { PodManager } from '../pod-manager.js';
import type { Pod, PodStatusV1 } from '../pod-types.js';
import { logDirectory } from '../runtime-config.js';
import type { ContainerStatsInfo, RuntimeBackend } from '../runtime/runtime.js';
import { podDir } from '../volumes/volumes.js';
import { CgroupReader, type CgroupFigures } from './cgroup-stats.js';
import { fsFigures, nodeCpuNanoSeconds, nodeMemory, processLimits, readNetDev, type FsFigures, type InterfaceStats } from './host-stats.js';
import { DiskUsageCache, type DiskUsage } from './volume-stats.js';

type Dict = Record<string, unknown>;

export interface CpuStats { time: string; usageNanoCores?: number; usageCoreNanoSeconds?: number }
export interface MemoryStats { time: string; availableBytes?: number; usageBytes?: number; workingSetBytes?: number; rssBytes?: number; pageFaults?: number; majorPageFaults?: number }
export interface ContainerSummary { name: string; startTime?: string; cpu?: CpuStats; memory?: MemoryStats; rootfs?: Dict; logs?: Dict }
export interface PodSummary {
  podRef: { name: string; namespace: string; uid: string };
  startTime?: string;
  containers: ContainerSummary[];
  cpu?: CpuStats;
  memory?: MemoryStats;
  network?: Dict;
  volume?: Dict[];
  'ephemeral-storage'?: Dict;
  process_stats?: { process_count: number };
}
export interface Summary { node: Dict & { nodeName: string; cpu?: CpuStats; memory?: MemoryStats }; pods: PodSummary[] }

export interface StatsProviderOptions {
  readonly nodeName: string;
  readonly runtime: RuntimeBackend;
  readonly pods: PodManager;
  readonly rootDir: string;
  readonly logDir: string;
  /** --volume-stats-agg-period in ms; 0: no volume figures. */
  readonly volumeStatsAggPeriodMs: number;
  readonly startTime: number;
  readonly log: Logger;
  readonly cgroupRoot?: string;
}

interface Sample { t: number; cpu: number }

const iso = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

/** The interface Kubernetes reports as a pod's or node's network (eth0 when there is one). */
function networkStats(time: string, ifaces: InterfaceStats[] | undefined): Dict | undefined {
  if (!ifaces || ifaces.length === 0) return undefined;
  const main = ifaces.find((i) => i.name === 'eth0') ?? ifaces[0];
  return { time, ...main, interfaces: ifaces };
}

function fsStats(time: string, fs: FsFigures | undefined, usage?: DiskUsage): Dict | undefined {
  if (!fs && !usage) return undefined;
  return {
    time, ...(fs ? { availableBytes: fs.availableBytes, capacityBytes: fs.capacityBytes, inodesFree: fs.inodesFree, inodes: fs.inodes } : {}),
    ...(usage ? { usedBytes: usage.usedBytes, inodesUsed: usage.inodesUsed } : {}),
  };
}

const sum = (xs: (number | undefined)[]): number | undefined => (xs.some((x) => x !== undefined) ? xs.reduce<number>((a, x) => a + (x ?? 0), 0) : undefined);
const defined = <T extends object>(o: T): T => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;

export class StatsProvider {
  private readonly cgroups: CgroupReader;
  private readonly disk: DiskUsageCache;
  /** CPU samples by key (node, container id): the reference (≥ 1 s older) and the latest. */
  private readonly samples = new Map<string, { ref?: Sample; last: Sample }>();

  constructor(private readonly o: StatsProviderOptions) {
    this.cgroups = new CgroupReader(o.cgroupRoot);
    this.disk = new DiskUsageCache(o.volumeStatsAggPeriodMs);
  }

  /** Cores in nano units from the CPU counter's growth since the reference sample. */
  private rate(key: string, t: number, cpu: number | undefined): number | undefined {
    if (cpu === undefined) return undefined;
    const s = this.samples.get(key);
    if (!s) { this.samples.set(key, { last: { t, cpu } }); return undefined; }
    if (t - s.last.t >= 1000) s.ref = s.last;
    if (t > s.last.t) s.last = { t, cpu };
    const ref = s.ref;
    if (!ref || t <= ref.t || cpu < ref.cpu) return undefined;
    return Math.round(((cpu - ref.cpu) / (t - ref.t)) * 1e6);
  }

  /** Samples CPU counters every `periodMs` (kubelet's housekeeping) until the signal aborts. */
  async run(signal: AbortSignal, periodMs = 10_000): Promise<void> {
    // Simulated containers have no CPU counters to sample (and simulated nodes are many).
    if (this.o.runtime.name === 'fake') return;
    while (!signal.aborted) {
      await this.summary().catch((e: Error) => this.o.log.debug({ err: e.message }, 'stats sample failed'));
      await new Promise<void>((r) => { const t = setTimeout(r, periodMs); signal.addEventListener('abort', () => { clearTimeout(t); r(); }, { once: true }); });
    }
  }

  private async criStats(): Promise<Map<string, ContainerStatsInfo>> {
    const out = new Map<string, ContainerStatsInfo>();
    if (!this.o.runtime.listContainerStats) return out;
    try {
      for (const s of await this.o.runtime.listContainerStats()) out.set(s.id, s);
    } catch (e) {
      this.o.log.debug({ err: (e as Error).message }, 'ListContainerStats failed; cgroups only');
    }
    return out;
  }

  private async containerCgroup(id: string): Promise<CgroupFigures | undefined> {
    // Simulated containers (the fake runtime) have no cgroups to look for.
    if (this.o.runtime.name === 'fake') return undefined;
    const rel = await this.cgroups.find(id);
    return rel === undefined ? undefined : this.cgroups.read(rel);
  }

  async summary(): Promise<Summary> {
    const now = Date.now();
    const time = iso(now);
    const cri = await this.criStats();
    const imageFs = await this.imageFs(time);
    const logFs = await fsFigures(this.o.logDir);
    const rootFs = await fsFigures(this.o.rootDir);
    const pods: PodSummary[] = [];
    const seen = new Set<string>(['node', 'node/kubelet']);
    const paths = new Set<string>();
    for (const w of this.o.pods.workers.values()) {
      const pod = w.current;
      const p = await this.podSummary(pod, w.lastStatus, (name) => w.containerId(name), { now, time, cri, imageFs: imageFs.fs, logFs, rootFs, seen, paths });
      pods.push(p);
    }
    for (const k of this.samples.keys()) if (!seen.has(k)) this.samples.delete(k);
    this.cgroups.forget(seen);
    this.disk.retain(paths);
    return { node: await this.nodeSummary(now, time, rootFs, imageFs.dict, pods), pods };
  }

  private async podSummary(pod: Pod, status: PodStatusV1 | undefined, idOf: (name: string) => string, c: {
    now: number; time: string; cri: Map<string, ContainerStatsInfo>; imageFs?: FsFigures; logFs?: FsFigures; rootFs?: FsFigures; seen: Set<string>; paths: Set<string>;
  }): Promise<PodSummary> {
    const m = pod.metadata ?? {};
    const uid = m.uid ?? '';
    const containers: ContainerSummary[] = [];
    const pids: number[] = [];
    const ephemeral: (DiskUsage | undefined)[] = [];
    const logDir = logDirectory(this.o.logDir, pod);
    for (const spec of pod.spec?.containers ?? []) {
      const id = idOf(spec.name);
      if (!id) continue;
      c.seen.add(id);
      const started = status?.containerStatuses?.find((x) => x.name === spec.name)?.state?.running?.startedAt;
      const cs = c.cri.get(id);
      const cg = await this.containerCgroup(id);
      pids.push(...(cg?.pids ?? []));
      const cpuTotal = cs?.usageCoreNanoSeconds ?? cg?.usageCoreNanoSeconds;
      const working = cs?.workingSetBytes ?? cg?.workingSetBytes;
      const rootfsUse = cs?.writableLayer ? { usedBytes: cs.writableLayer.usedBytes, inodesUsed: cs.writableLayer.inodesUsed, time: c.now } : undefined;
      const logPath = join(logDir, spec.name);
      c.paths.add(logPath);
      const logs = await this.disk.get(logPath);
      ephemeral.push(rootfsUse, logs);
      containers.push(defined({
        name: spec.name, startTime: started,
        cpu: defined({ time: c.time, usageNanoCores: cs?.usageNanoCores || this.rate(id, c.now, cpuTotal), usageCoreNanoSeconds: cpuTotal }),
        memory: defined({
          time: c.time, workingSetBytes: working, usageBytes: cs?.usageBytes ?? cg?.usageBytes, rssBytes: cs?.rssBytes ?? cg?.rssBytes,
          pageFaults: cs?.pageFaults ?? cg?.pageFaults, majorPageFaults: cs?.majorPageFaults ?? cg?.majorPageFaults,
          availableBytes: cg?.limitBytes !== undefined && working !== undefined ? Math.max(0, cg.limitBytes - working) : undefined,
        }),
        rootfs: fsStats(c.time, c.imageFs, rootfsUse),
        logs: fsStats(c.time, c.logFs, logs),
      }));
    }
    const volumes: Dict[] = [];
    for (const v of pod.spec?.volumes ?? []) {
      const plugin = v.emptyDir || Object.keys(v).length === 1 ? 'kubernetes.io~empty-dir'
        : v.configMap ? 'kubernetes.io~configmap' : v.secret ? 'kubernetes.io~secret' : v.projected ? 'kubernetes.io~projected'
          : v.downwardAPI ? 'kubernetes.io~downward-api' : '';
      if (!plugin) continue;
      const path = join(podDir(this.o.rootDir, uid), 'volumes', plugin, v.name);
      c.paths.add(path);
      const u = await this.disk.get(path);
      if (!u) continue;
      if (plugin === 'kubernetes.io~empty-dir') ephemeral.push(u);
      volumes.push({ ...fsStats(c.time, c.rootFs, u), name: v.name });
    }
    const cpuNs = sum(containers.map((x) => x.cpu?.usageCoreNanoSeconds));
    const podKey = `pod/${uid}`;
    c.seen.add(podKey);
    const pidsAlive = pids.length;
    const net = pidsAlive > 0 && !pod.spec?.hostNetwork ? networkStats(c.time, await readNetDev(pids[0] ?? 0)) : undefined;
    const eph = sum(ephemeral.map((x) => x?.usedBytes));
    return defined({
      podRef: { name: m.name ?? '', namespace: m.namespace ?? '', uid },
      ...(status?.startTime ? { startTime: status.startTime } : {}),
      containers,
      cpu: defined({ time: c.time, usageNanoCores: sum(containers.map((x) => x.cpu?.usageNanoCores)), usageCoreNanoSeconds: cpuNs }),
      memory: defined({
        time: c.time, workingSetBytes: sum(containers.map((x) => x.memory?.workingSetBytes)), usageBytes: sum(containers.map((x) => x.memory?.usageBytes)),
        rssBytes: sum(containers.map((x) => x.memory?.rssBytes)), pageFaults: sum(containers.map((x) => x.memory?.pageFaults)), majorPageFaults: sum(containers.map((x) => x.memory?.majorPageFaults)),
      }),
      network: net,
      volume: volumes.length ? volumes : undefined,
      'ephemeral-storage': eph !== undefined ? fsStats(c.time, c.rootFs, { usedBytes: eph, inodesUsed: sum(ephemeral.map((x) => x?.inodesUsed)) ?? 0, time: c.now }) : undefined,
      process_stats: { process_count: pidsAlive },
    });
  }

  private async imageFs(time: string): Promise<{ fs?: FsFigures; dict?: Dict }> {
    try {
      const [f] = await this.o.runtime.imageFsInfo();
      if (!f) return {};
      const fs = f.mountpoint ? await fsFigures(f.mountpoint) : undefined;
      return { ...(fs ? { fs } : {}), dict: { ...fsStats(time, fs), usedBytes: f.usedBytes, inodesUsed: f.inodesUsed } };
    } catch {
      return {};
    }
  }

  private async nodeSummary(now: number, time: string, rootFs: FsFigures | undefined, imageFs: Dict | undefined, pods: PodSummary[]): Promise<Summary['node']> {
    const cpuNs = await nodeCpuNanoSeconds();
    const mem = await nodeMemory();
    const net = networkStats(time, await readNetDev('self'));
    const self = process.cpuUsage();
    const selfCpu = (self.user + self.system) * 1000;
    const rss = process.memoryUsage().rss;
    const lim = await processLimits();
    const podsCpu = sum(pods.map((p) => p.cpu?.usageCoreNanoSeconds));
    return defined({
      nodeName: this.o.nodeName,
      systemContainers: [
        { name: 'kubelet', startTime: iso(this.o.startTime), cpu: defined({ time, usageNanoCores: this.rate('node/kubelet', now, selfCpu), usageCoreNanoSeconds: selfCpu }), memory: { time, usageBytes: rss, workingSetBytes: rss, rssBytes: rss } },
        {
          name: 'pods', startTime: iso(this.o.startTime),
          cpu: defined({ time, usageNanoCores: sum(pods.map((p) => p.cpu?.usageNanoCores)), usageCoreNanoSeconds: podsCpu }),
          memory: defined({ time, workingSetBytes: sum(pods.map((p) => p.memory?.workingSetBytes)), usageBytes: sum(pods.map((p) => p.memory?.usageBytes)), rssBytes: sum(pods.map((p) => p.memory?.rssBytes)) }),
        },
      ],
      startTime: iso(this.o.startTime),
      cpu: defined({ time, usageNanoCores: this.rate('node', now, cpuNs), usageCoreNanoSeconds: cpuNs }),
      memory: mem ? defined({ time, availableBytes: mem.availableBytes, usageBytes: mem.usageBytes, workingSetBytes: mem.workingSetBytes, rssBytes: mem.rssBytes, pageFaults: mem.pageFaults, majorPageFaults: mem.majorPageFaults }) : undefined,
      network: net,
      fs: rootFs ? { time, availableBytes: rootFs.availableBytes, capacityBytes: rootFs.capacityBytes, usedBytes: rootFs.usedBytes, inodesFree: rootFs.inodesFree, inodes: rootFs.inodes, inodesUsed: rootFs.inodesUsed } : undefined,
      runtime: imageFs ? { imageFs } : undefined,
      rlimit: { time, ...lim },
    });
  }
}

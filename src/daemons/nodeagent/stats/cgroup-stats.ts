/**
 * CPU and memory figures of a container read from its cgroup, v1 (cpuacct, memory controllers)
 * or v2 (unified), for what CRI stats leave out (usage, rss, page faults) or when the runtime
 * answers no stats at all. A container's cgroup is found by its id in the directory names
 * (cgroupfs driver: .../<id>; systemd driver: .../cri-containerd-<id>.scope) and cached.
 */
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface CgroupFigures {
  /** Cumulative CPU time in nanoseconds. */
  readonly usageCoreNanoSeconds?: number;
  readonly usageBytes?: number;
  readonly workingSetBytes?: number;
  readonly rssBytes?: number;
  readonly pageFaults?: number;
  readonly majorPageFaults?: number;
  /** The memory limit, when one is set (undefined: unlimited). */
  readonly limitBytes?: number;
  /** Processes in the cgroup (for /proc/<pid>/net/dev of the pod's network namespace). */
  readonly pids: readonly number[];
}

/** How long a container whose cgroup was not found is not searched for again. */
const MISS_TTL_MS = 60_000;

/** Above this a v1 limit means "no limit" (the kernel's page-rounded maximum). */
const UNLIMITED = 2 ** 62;

export function parseKeyValues(text: string): Map<string, number> {
  const m = new Map<string, number>();
  for (const line of text.split('\n')) {
    const [k, v] = line.trim().split(/\s+/);
    if (k && v !== undefined && /^\d+$/.test(v)) m.set(k, Number(v));
  }
  return m;
}

const readText = (p: string): Promise<string | undefined> => readFile(p, 'utf8').catch(() => undefined);
const readNumber = async (p: string): Promise<number | undefined> => {
  const t = (await readText(p))?.trim();
  return t && /^\d+$/.test(t) ? Number(t) : undefined;
};

export class CgroupReader {
  readonly version: 1 | 2;
  private readonly paths = new Map<string, string>();
  private readonly misses = new Map<string, number>();

  constructor(private readonly root = '/sys/fs/cgroup') {
    this.version = existsSync(join(root, 'cgroup.controllers')) ? 2 : 1;
  }

  /** The directory that is searched for container cgroups (v1: the memory controller). */
  private get base(): string { return this.version === 2 ? this.root : join(this.root, 'memory'); }

  /** The cgroup path of a container relative to a controller's root, or undefined. */
  async find(id: string): Promise<string | undefined> {
    const hit = this.paths.get(id);
    if (hit !== undefined && existsSync(join(this.base, hit))) return hit;
    this.paths.delete(id);
    // A miss walks the whole tree: not again for a while.
    const missed = this.misses.get(id);
    if (missed !== undefined && Date.now() - missed < MISS_TTL_MS) return undefined;
    const found = await this.search(this.base, '', id, 0);
    if (found !== undefined) { this.paths.set(id, found); this.misses.delete(id); } else this.misses.set(id, Date.now());
    return found;
  }

  private async search(abs: string, rel: string, id: string, depth: number): Promise<string | undefined> {
    if (depth > 6) return undefined;
    let entries;
    try { entries = await readdir(abs, { withFileTypes: true }); } catch { return undefined; }
    const dirs = entries.filter((e) => e.isDirectory());
    const direct = dirs.find((e) => e.name === id || e.name.endsWith(`-${id}.scope`) || e.name === `${id}.scope`);
    if (direct) return join(rel, direct.name);
    for (const d of dirs) {
      const r = await this.search(join(abs, d.name), join(rel, d.name), id, depth + 1);
      if (r !== undefined) return r;
    }
    return undefined;
  }

  forget(keep: ReadonlySet<string>): void {
    for (const id of this.paths.keys()) if (!keep.has(id)) this.paths.delete(id);
    for (const id of this.misses.keys()) if (!keep.has(id)) this.misses.delete(id);
  }

  /** Figures of the cgroup at `rel` (relative to the controllers' roots). */
  async read(rel: string): Promise<CgroupFigures> {
    return this.version === 2 ? this.readV2(rel) : this.readV1(rel);
  }

  private async pids(dir: string): Promise<number[]> {
    const t = (await readText(join(dir, 'cgroup.procs'))) ?? '';
    return t.split('\n').filter((x) => /^\d+$/.test(x)).map(Number);
  }

  private async readV1(rel: string): Promise<CgroupFigures> {
    const mem = join(this.root, 'memory', rel);
    const stat = parseKeyValues((await readText(join(mem, 'memory.stat'))) ?? '');
    const usage = await readNumber(join(mem, 'memory.usage_in_bytes'));
    const limit = await readNumber(join(mem, 'memory.limit_in_bytes'));
    const inactive = stat.get('total_inactive_file') ?? stat.get('inactive_file') ?? 0;
    const cpu = (await readNumber(join(this.root, 'cpuacct', rel, 'cpuacct.usage'))) ?? (await readNumber(join(this.root, 'cpu,cpuacct', rel, 'cpuacct.usage')));
    return {
      ...(cpu !== undefined ? { usageCoreNanoSeconds: cpu } : {}),
      ...(usage !== undefined ? { usageBytes: usage, workingSetBytes: Math.max(0, usage - inactive) } : {}),
      ...(stat.has('total_rss') || stat.has('rss') ? { rssBytes: (stat.get('total_rss') ?? stat.get('rss') ?? 0) } : {}),
      ...(stat.has('total_pgfault') ? { pageFaults: stat.get('total_pgfault') } : {}),
      ...(stat.has('total_pgmajfault') ? { majorPageFaults: stat.get('total_pgmajfault') } : {}),
      ...(limit !== undefined && limit < UNLIMITED ? { limitBytes: limit } : {}),
      pids: await this.pids(mem),
    };
  }

  private async readV2(rel: string): Promise<CgroupFigures> {
    const dir = join(this.root, rel);
    const stat = parseKeyValues((await readText(join(dir, 'memory.stat'))) ?? '');
    const cpuStat = parseKeyValues((await readText(join(dir, 'cpu.stat'))) ?? '');
    const usage = await readNumber(join(dir, 'memory.current'));
    const limit = await readNumber(join(dir, 'memory.max')); // "max" reads as undefined
    const usec = cpuStat.get('usage_usec');
    return {
      ...(usec !== undefined ? { usageCoreNanoSeconds: usec * 1000 } : {}),
      ...(usage !== undefined ? { usageBytes: usage, workingSetBytes: Math.max(0, usage - (stat.get('inactive_file') ?? 0)) } : {}),
      ...(stat.has('anon') ? { rssBytes: stat.get('anon') } : {}),
      ...(stat.has('pgfault') ? { pageFaults: stat.get('pgfault') } : {}),
      ...(stat.has('pgmajfault') ? { majorPageFaults: stat.get('pgmajfault') } : {}),
      ...(limit !== undefined ? { limitBytes: limit } : {}),
      pids: await this.pids(dir),
    };
  }
}

/**
 * Writing cgroups through the cgroup filesystem, v1 (one hierarchy per controller, this
 * machine's layout) or v2 (one unified tree). `detectCgroupVersion` decides at start, as
 * Kubernetes does: v2 when the mount root is itself the unified hierarchy
 * (cgroup.controllers at its top); a hybrid layout (v1 controllers, v2 under unified/) is v1.
 *
 * Values use the v1 vocabulary (shares, CFS quota, bytes); the v2 writer converts them to
 * cpu.weight, cpu.max and memory.max as runc does. Unset fields are left as they are; -1
 * means "no limit".
 * Contract: `ensure` creates missing levels (v1: in every controller hierarchy present, with
 * cpuset.cpus/mems copied down so that tasks can join; v2: enabling the controllers in each
 * parent's cgroup.subtree_control) and writes the values; `remove` deletes an empty cgroup and
 * treats one that is already gone as removed; child cgroups a runtime left behind go first.
 * v1 cgroups are made in every hierarchy mounted (as runc does: blkio, devices, freezer and
 * name=systemd too), so that the runtime's own cgroups below ours are removable.
 */
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, readdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface CgroupResources {
  readonly cpuShares?: number;
  /** Microseconds per period; -1 for none. */
  readonly cpuQuota?: number;
  readonly cpuPeriod?: number;
  /** Bytes; -1 for none. */
  readonly memoryLimit?: number;
  /** -1 for none. */
  readonly pidsLimit?: number;
  readonly cpusetCpus?: string;
}

export interface CgroupFs {
  readonly version: 1 | 2;
  readonly mountRoot: string;
  ensure(path: string, res?: CgroupResources): Promise<void>;
  /** Removes the cgroup and its (empty) descendants; fails (EBUSY) while processes remain. */
  update(path: string, res: CgroupResources): Promise<void>;
  remove(path: string): Promise<void>;
  exists(path: string): boolean;
  /** Reads one interface file (e.g. 'cpu.shares' or 'cpu.weight'); undefined when absent. */
  read(path: string, file: string): Promise<string | undefined>;
  /** Moves a process into the cgroup. */
  addProcess(path: string, pid: number): Promise<void>;
  /** Processes directly in the cgroup. */
  processes(path: string): Promise<number[]>;
}

export const DEFAULT_CGROUP_MOUNT = '/sys/fs/cgroup';

export function detectCgroupVersion(mountRoot = DEFAULT_CGROUP_MOUNT): 1 | 2 {
  return existsSync(join(mountRoot, 'cgroup.controllers')) ? 2 : 1;
}

export function openCgroupFs(mountRoot = DEFAULT_CGROUP_MOUNT, version = detectCgroupVersion(mountRoot)): CgroupFs {
  return version === 2 ? new CgroupV2(mountRoot) : new CgroupV1(mountRoot);
}

/** runc's conversion of v1 cpu.shares [2, 262144] to v2 cpu.weight [1, 10000]. */
export function sharesToWeight(shares: number): number {
  if (shares <= 0) return 0;
  return Math.floor(1 + ((shares - 2) * 9999) / 262142);
}

const gone = (e: unknown): boolean => (e as NodeJS.ErrnoException).code === 'ENOENT';

async function readTrim(file: string): Promise<string | undefined> {
  try { return (await readFile(file, 'utf8')).trim(); } catch (e) { if (gone(e)) return undefined; throw e; }
}

/** rmdir of a cgroup directory tree, deepest first (cgroup files cannot be unlinked, and need not be). */
async function rmdirTree(dir: string): Promise<void> {
  let entries;
  try { entries = await readdir(dir, { withFileTypes: true }); } catch (e) { if (gone(e)) return; throw e; }
  for (const d of entries) if (d.isDirectory()) await rmdirTree(join(dir, d.name));
  try { await rmdir(dir); } catch (e) { if (!gone(e)) throw e; }
}

function levels(path: string): string[] {
  const parts = path.split('/').filter(Boolean);
  return parts.map((_, i) => `/${parts.slice(0, i + 1).join('/')}`);
}


class CgroupV1 implements CgroupFs {
  readonly version = 1 as const;
  constructor(readonly mountRoot: string) {}

  /** Every hierarchy mounted under the root (a combined "cpu,cpuacct" and its symlinks are one). */
  private controllers(): string[] {
    try {
      return readdirSync(this.mountRoot, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name);
    } catch (e) { if (gone(e)) return []; throw e; }
  }
  private dir(controller: string, path: string): string { return join(this.mountRoot, controller, path); }

  exists(path: string): boolean {
    const key = ['cpu', 'memory'].filter((c) => existsSync(join(this.mountRoot, c)));
    return (key.length ? key : this.controllers()).every((c) => existsSync(this.dir(c, path)));
  }

  async ensure(path: string, res: CgroupResources = {}): Promise<void> {
    for (const c of this.controllers()) {
      for (const level of levels(path)) {
        const d = this.dir(c, level);
        if (existsSync(d)) continue;
        await mkdir(d, { recursive: true });
        // A new cpuset cgroup starts with no CPUs and no memory nodes: no task could join it.
        if (c === 'cpuset') {
          const parent = join(d, '..');
          for (const f of ['cpuset.cpus', 'cpuset.mems']) {
            const v = await readTrim(join(parent, f));
            if (v) await writeFile(join(d, f), v);
          }
        }
      }
    }
    await this.update(path, res);
  }

  async update(path: string, res: CgroupResources): Promise<void> {
    const w = async (c: string, f: string, v: string | number | undefined): Promise<void> => {
      if (v === undefined || !existsSync(join(this.mountRoot, c))) return;
      await writeFile(join(this.dir(c, path), f), String(v));
    };
    await w('cpu', 'cpu.shares', res.cpuShares);
    await w('cpu', 'cpu.cfs_period_us', res.cpuPeriod);
    await w('cpu', 'cpu.cfs_quota_us', res.cpuQuota);
    await w('memory', 'memory.limit_in_bytes', res.memoryLimit);
    await w('pids', 'pids.max', res.pidsLimit === undefined ? undefined : res.pidsLimit < 0 ? 'max' : res.pidsLimit);
    await w('cpuset', 'cpuset.cpus', res.cpusetCpus);
  }

  async remove(path: string): Promise<void> {
    for (const c of this.controllers()) await rmdirTree(this.dir(c, path));
  }

  async read(path: string, file: string): Promise<string | undefined> {
    const controller = file.split('.')[0] ?? '';
    return readTrim(join(this.dir(controller, path), file));
  }

  async addProcess(path: string, pid: number): Promise<void> {
    for (const c of this.controllers()) await writeFile(join(this.dir(c, path), 'cgroup.procs'), String(pid));
  }

  async processes(path: string): Promise<number[]> {
    const c = existsSync(join(this.mountRoot, 'cpu')) ? 'cpu' : this.controllers()[0] ?? 'cpu';
    const text = await readTrim(join(this.dir(c, path), 'cgroup.procs')) ?? '';
    return text.split('\n').filter(Boolean).map(Number);
  }
}

const V2_CONTROLLERS = ['cpuset', 'cpu', 'memory', 'pids', 'hugetlb'] as const;

class CgroupV2 implements CgroupFs {
  readonly version = 2 as const;
  constructor(readonly mountRoot: string) {}

  private dir(path: string): string { return join(this.mountRoot, path); }

  exists(path: string): boolean { return existsSync(this.dir(path)); }

  private async available(): Promise<string[]> {
    const text = await readTrim(join(this.mountRoot, 'cgroup.controllers')) ?? '';
    const have = new Set(text.split(/\s+/).filter(Boolean));
    return V2_CONTROLLERS.filter((c) => have.has(c));
  }

  async ensure(path: string, res: CgroupResources = {}): Promise<void> {
    const enable = (await this.available()).map((c) => `+${c}`).join(' ');
    let parent = '/';
    for (const level of levels(path)) {
      // Children get a controller only when their parent delegates it.
      if (enable) await writeFile(join(this.dir(parent), 'cgroup.subtree_control'), enable);
      if (!existsSync(this.dir(level))) await mkdir(this.dir(level));
      parent = level;
    }
    await this.update(path, res);
  }

  async update(path: string, res: CgroupResources): Promise<void> {
    const d = this.dir(path);
    if (res.cpuShares !== undefined) await writeFile(join(d, 'cpu.weight'), String(sharesToWeight(res.cpuShares)));
    if (res.cpuQuota !== undefined || res.cpuPeriod !== undefined) {
      const period = res.cpuPeriod ?? 100_000;
      const quota = res.cpuQuota === undefined || res.cpuQuota < 0 ? 'max' : String(res.cpuQuota);
      await writeFile(join(d, 'cpu.max'), `${quota} ${period}`);
    }
    if (res.memoryLimit !== undefined) await writeFile(join(d, 'memory.max'), res.memoryLimit < 0 ? 'max' : String(res.memoryLimit));
    if (res.pidsLimit !== undefined) await writeFile(join(d, 'pids.max'), res.pidsLimit < 0 ? 'max' : String(res.pidsLimit));
    if (res.cpusetCpus !== undefined) await writeFile(join(d, 'cpuset.cpus'), res.cpusetCpus);
  }

  async remove(path: string): Promise<void> { await rmdirTree(this.dir(path)); }

  async read(path: string, file: string): Promise<string | undefined> { return readTrim(join(this.dir(path), file)); }

  async addProcess(path: string, pid: number): Promise<void> { await writeFile(join(this.dir(path), 'cgroup.procs'), String(pid)); }

  async processes(path: string): Promise<number[]> {
    const text = await readTrim(join(this.dir(path), 'cgroup.procs')) ?? '';
    return text.split('\n').filter(Boolean).map(Number);
  }
}

/**
 * Per-pod usage for ranking eviction candidates, read from the host:
 *   disk   = bytes allocated under the pod's volume directory (<root-dir>/pods/<uid>/volumes:
 *            emptyDirs and the like), its log directory (/var/log/pods/...) and its containers'
 *            writable layers (CRI ListContainerStats, where the runtime answers it);
 *   memory = working set (usage - inactive file) of each container's memory cgroup;
 *   pids   = tasks in each container's pids cgroup.
 * Containers' cgroups are found by their id in the cgroup tree (cgroupfs `.../<id>` or systemd
 * `cri-containerd-<id>.scope`), whatever parent the runtime chose. Cgroup v2 is read from the
 * unified tree (memory.current, memory.stat inactive_file, pids.current).
 * Contract: never throws; what cannot be read is left undefined.
 */
import { lstat, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ContainerUsage, PodUsage } from './rank.js';

export interface PodRef {
  readonly uid: string;
  readonly podDir: string;
  readonly logDir: string;
  /** Container name → runtime id of the containers that run now. */
  readonly containers: ReadonlyMap<string, string>;
}

export type PodUsageSource = (pods: readonly PodRef[]) => Promise<Map<string, PodUsage>>;

/** Bytes allocated to the files under `dir` (st_blocks, as du counts), hard links once. */
export async function diskUsage(dir: string): Promise<number> {
  let total = 0;
  const seen = new Set<string>();
  const walk = async (d: string, depth: number): Promise<void> => {
    let entries;
    try { entries = await readdir(d, { withFileTypes: true }); } catch { return; }
    for (const e of entries) {
      const p = join(d, e.name);
      let st;
      try { st = await lstat(p); } catch { continue; }
      const key = `${st.dev}:${st.ino}`;
      if (seen.has(key)) continue;
      seen.add(key);
      total += st.blocks * 512;
      if (e.isDirectory() && depth < 64) await walk(p, depth + 1);
    }
  };
  await walk(dir, 0);
  return total;
}

async function text(path: string): Promise<string | undefined> {
  try { return await readFile(path, 'utf8'); } catch { return undefined; }
}

/** Directory paths by basename under a cgroup hierarchy, a few levels deep. */
async function cgroupDirs(root: string, maxDepth = 6): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const walk = async (d: string, depth: number): Promise<void> => {
    let entries;
    try { entries = await readdir(d, { withFileTypes: true }); } catch { return; }
    for (const e of entries) {
      if (!e.isDirectory()) continue;
      const p = join(d, e.name);
      out.set(e.name, p);
      if (depth < maxDepth) await walk(p, depth + 1);
    }
  };
  await walk(root, 0);
  return out;
}

function findById(dirs: Map<string, string>, id: string): string | undefined {
  return dirs.get(id) ?? dirs.get(`cri-containerd-${id}.scope`) ?? dirs.get(`docker-${id}.scope`);
}

function statField(statText: string | undefined, key: string): number {
  const m = statText ? new RegExp(`^${key} (\\d+)`, 'm').exec(statText) : null;
  return m ? Number(m[1]) : 0;
}

async function containerMemory(dir: string, v2: boolean): Promise<number | undefined> {
  const usage = Number((await text(join(dir, v2 ? 'memory.current' : 'memory.usage_in_bytes')))?.trim() ?? NaN);
  if (!Number.isFinite(usage)) return undefined;
  const stat = await text(join(dir, 'memory.stat'));
  return Math.max(0, usage - statField(stat, v2 ? 'inactive_file' : 'total_inactive_file'));
}

async function containerPids(dir: string, v2: boolean): Promise<number | undefined> {
  const cur = Number((await text(join(dir, 'pids.current')))?.trim() ?? NaN);
  if (Number.isFinite(cur)) return cur;
  const tasks = await text(join(dir, v2 ? 'cgroup.threads' : 'tasks'));
  return tasks === undefined ? undefined : tasks.split('\n').filter(Boolean).length;
}

/** Bytes of each running container's writable layer by container id (empty when unknown). */
export type WritableLayers = () => Promise<ReadonlyMap<string, number>>;

export function hostPodUsage(cgroupRoot = '/sys/fs/cgroup', writableLayers?: WritableLayers): PodUsageSource {
  return async (pods) => {
    const layers = await (writableLayers?.() ?? Promise.resolve(new Map<string, number>())).catch(() => new Map<string, number>());
    const v2 = (await text(join(cgroupRoot, 'cgroup.controllers'))) !== undefined;
    const memDirs = await cgroupDirs(v2 ? cgroupRoot : join(cgroupRoot, 'memory'));
    const pidDirs = v2 ? memDirs : await cgroupDirs(join(cgroupRoot, 'pids'));
    const out = new Map<string, PodUsage>();
    for (const p of pods) {
      const containers: ContainerUsage[] = [];
      let memory: number | undefined;
      let pids: number | undefined;
      for (const [name, id] of p.containers) {
        const md = findById(memDirs, id);
        const m = md ? await containerMemory(md, v2) : undefined;
        const pd = findById(pidDirs, id);
        const n = pd ? await containerPids(pd, v2) : undefined;
        if (m !== undefined) memory = (memory ?? 0) + m;
        if (n !== undefined) pids = (pids ?? 0) + n;
        containers.push({ name, ...(m !== undefined ? { memory: m } : {}) });
      }
      let disk = (await diskUsage(join(p.podDir, 'volumes'))) + (await diskUsage(p.logDir));
      for (const id of p.containers.values()) disk += layers.get(id) ?? 0;
      out.set(p.uid, { disk, containers, ...(memory !== undefined ? { memory } : {}), ...(pids !== undefined ? { pids } : {}) });
    }
    return out;
  };
}

/**
 * The node-level eviction signals measured from the host, as Kubernetes' node agent measures
 * them: memory.available = MemTotal - working set of the root memory cgroup (usage minus
 * inactive file pages; /proc/meminfo's MemAvailable where no v1 root memory cgroup is readable),
 * nodefs from statfs of the root dir, imagefs from statfs of the runtime's image store,
 * pid.available = min(pid_max, threads-max) - tasks on the node (/proc/loadavg).
 * Contract: `measure` never throws; a signal that cannot be read is left out (and so never
 * met), as Kubernetes does with a signal it has no observation for.
 */
import { readFile, statfs } from 'node:fs/promises';
import type { Observations } from './thresholds.js';

export interface HostPaths {
  /** --root-dir: the node filesystem. */
  readonly rootDir: string;
  /** The image store's directory; resolved lazily (e.g. from CRI ImageFsInfo). */
  readonly imageFsDir: () => Promise<string | undefined>;
  readonly procDir?: string;
  readonly cgroupDir?: string;
}

async function num(path: string): Promise<number | undefined> {
  try {
    const n = Number((await readFile(path, 'utf8')).trim());
    return Number.isFinite(n) ? n : undefined;
  } catch { return undefined; }
}

function field(text: string, key: string): number | undefined {
  const m = new RegExp(`^${key}\\s+(\\d+)`, 'm').exec(text);
  return m ? Number(m[1]) : undefined;
}

export async function memoryObservation(proc: string, cgroup: string): Promise<{ available: number; capacity: number } | undefined> {
  let meminfo: string;
  try { meminfo = await readFile(`${proc}/meminfo`, 'utf8'); } catch { return undefined; }
  const kb = (k: string): number | undefined => { const m = new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(meminfo); return m ? Number(m[1]) * 1024 : undefined; };
  const capacity = kb('MemTotal');
  if (capacity === undefined) return undefined;
  const usage = await num(`${cgroup}/memory/memory.usage_in_bytes`);
  if (usage !== undefined) {
    let inactive = 0;
    try { inactive = field(await readFile(`${cgroup}/memory/memory.stat`, 'utf8'), 'total_inactive_file') ?? 0; } catch { /* none */ }
    const workingSet = Math.max(0, usage - inactive);
    return { available: Math.max(0, capacity - workingSet), capacity };
  }
  const avail = kb('MemAvailable');
  return avail === undefined ? undefined : { available: avail, capacity };
}

async function fsObservations(dir: string): Promise<{ bytes: { available: number; capacity: number }; inodes: { available: number; capacity: number } } | undefined> {
  try {
    const s = await statfs(dir);
    return {
      bytes: { available: s.bavail * s.bsize, capacity: s.blocks * s.bsize },
      inodes: { available: s.ffree, capacity: s.files },
    };
  } catch { return undefined; }
}

export async function pidObservation(proc: string): Promise<{ available: number; capacity: number } | undefined> {
  const pidMax = await num(`${proc}/sys/kernel/pid_max`);
  if (pidMax === undefined) return undefined;
  const threadsMax = await num(`${proc}/sys/kernel/threads-max`);
  const capacity = threadsMax !== undefined ? Math.min(pidMax, threadsMax) : pidMax;
  try {
    const m = /\s\d+\/(\d+)\s/.exec(await readFile(`${proc}/loadavg`, 'utf8'));
    if (!m) return undefined;
    return { available: Math.max(0, capacity - Number(m[1])), capacity };
  } catch { return undefined; }
}

/** A measurer of the host's signals (the eviction manager's default source). */
export function hostSignals(p: HostPaths): () => Promise<Observations> {
  const proc = p.procDir ?? '/proc';
  const cgroup = p.cgroupDir ?? '/sys/fs/cgroup';
  return async () => {
    const obs: { -readonly [K in keyof Observations]: Observations[K] } = {};
    const mem = await memoryObservation(proc, cgroup);
    if (mem) obs['memory.available'] = mem;
    const node = await fsObservations(p.rootDir);
    if (node) { obs['nodefs.available'] = node.bytes; obs['nodefs.inodesFree'] = node.inodes; }
    const imageDir = await p.imageFsDir().catch(() => undefined);
    const image = imageDir ? await fsObservations(imageDir) : node;
    if (image) { obs['imagefs.available'] = image.bytes; obs['imagefs.inodesFree'] = image.inodes; }
    const pid = await pidObservation(proc);
    if (pid) obs['pid.available'] = pid;
    return obs;
  };
}

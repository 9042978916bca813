/**
 * Disk usage of directories (a pod's volumes, a container's logs), measured as `du` does
 * (allocated blocks, one inode per entry) and kept for --volume-stats-agg-period: walking a
 * big emptyDir on every scrape would cost more than the figures are worth. A period of 0
 * turns volume figures off, as in Kubernetes.
 */
import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';

export interface DiskUsage { usedBytes: number; inodesUsed: number; time: number }

/** Allocated bytes and entries under `path` (not following symlinks); undefined when absent. */
export async function diskUsage(path: string): Promise<DiskUsage | undefined> {
  let st;
  try { st = await lstat(path); } catch { return undefined; }
  let used = st.blocks * 512;
  let inodes = 1;
  if (st.isDirectory()) {
    let names: string[] = [];
    try { names = await readdir(path); } catch { /* unreadable: count the directory alone */ }
    for (const n of names) {
      const sub = await diskUsage(join(path, n));
      if (sub) { used += sub.usedBytes; inodes += sub.inodesUsed; }
    }
  }
  return { usedBytes: used, inodesUsed: inodes, time: Date.now() };
}

export class DiskUsageCache {
  private readonly entries = new Map<string, { usage?: DiskUsage; measuring?: Promise<void> }>();

  /** `periodMs` 0: never measured (get answers undefined). */
  constructor(private readonly periodMs: number) {}

  get enabled(): boolean { return this.periodMs > 0; }

  /**
   * The last figure for `path`; measures first when there is none yet, and in the background
   * when the one there is older than the period.
   */
  async get(path: string): Promise<DiskUsage | undefined> {
    if (!this.enabled) return undefined;
    let e = this.entries.get(path);
    if (!e) this.entries.set(path, e = {});
    const entry = e;
    const stale = !entry.usage || Date.now() - entry.usage.time >= this.periodMs;
    if (stale && !entry.measuring) {
      entry.measuring = diskUsage(path).then((u) => { if (u) entry.usage = u; else this.entries.delete(path); }).finally(() => { entry.measuring = undefined; });
    }
    if (!entry.usage && entry.measuring) await entry.measuring;
    return entry.usage;
  }

  /** Drops figures of paths no longer asked about. */
  retain(paths: ReadonlySet<string>): void {
    for (const p of this.entries.keys()) if (!paths.has(p)) this.entries.delete(p);
  }
}

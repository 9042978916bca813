/**
 * emptyDir sizeLimit on disk (Kubernetes' local ephemeral storage eviction for emptyDir): the
 * bytes under a disk-backed emptyDir with a sizeLimit are counted on the pod worker's volume
 * refresh; over the limit, the pod is evicted with Kubernetes' message. (A memory-backed
 * emptyDir is a tmpfs of sizeLimit: writes past it fail with ENOSPC instead.)
 */
import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { parseQuantity } from '../../../util/quantity.js';
import type { Dict, Pod } from '../pod-types.js';

const isDict = (v: unknown): v is Dict => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Bytes used under `dir` (allocated blocks, as du counts them; links not followed). */
export async function diskUsage(dir: string): Promise<number> {
  let total = 0;
  const walk = async (p: string): Promise<void> => {
    const st = await lstat(p).catch(() => undefined);
    if (!st) return;
    total += st.blocks * 512;
    if (st.isDirectory()) for (const e of await readdir(p).catch(() => [] as string[])) await walk(join(p, e));
  };
  await walk(dir);
  return total;
}

/** Kubernetes' eviction message for the first disk-backed emptyDir over its sizeLimit, if any. */
export async function emptyDirOverLimit(pod: Pod, paths: ReadonlyMap<string, string>): Promise<string | undefined> {
  for (const v of pod.spec?.volumes ?? []) {
    const ed = v.emptyDir;
    if (!isDict(ed) || ed.medium === 'Memory' || ed.sizeLimit === undefined || ed.sizeLimit === null) continue;
    const dir = paths.get(v.name);
    if (!dir) continue;
    const limit = parseQuantity(String(ed.sizeLimit));
    if (await diskUsage(dir) > limit) return `Usage of EmptyDir volume "${v.name}" exceeds the limit "${String(ed.sizeLimit)}". `;
  }
  return undefined;
}

/**
 * Writes a file-set volume (configMap, secret, downwardAPI, projected) as Kubernetes' atomic
 * writer does, so that a running container always sees one whole version of the volume:
 *
 *   <dir>/..2026_12_07_21_40_01.123456789/<files>   the payload of one version
 *   <dir>/..data -> ..2026_12_07_...                  swapped with one rename(2)
 *   <dir>/<key>  -> ..data/<key>                      what the user sees (top-level names only)
 *
 * A new version is written into a fresh timestamped directory, then `..data` is replaced by a
 * rename of a new symlink over it, then top-level links that no longer belong go, and the old
 * version directory is removed. A payload equal to the current one (same paths, bytes and
 * modes) writes nothing. Each file gets its exact mode (chmod, so the umask does not narrow
 * defaultMode) and, with an fsGroup, that group.
 */
import { randomBytes } from 'node:crypto';
import { chmod, chown, lstat, mkdir, readdir, readFile, readlink, rename, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { dirname, join, normalize } from 'node:path';

export interface VolumeFile {
  readonly path: string;
  readonly data: Buffer;
  /** Overrides the volume's default mode. */
  readonly mode?: number;
}

export class VolumePathError extends Error {
  override readonly name = 'VolumePathError';
}

export const DATA_DIR_NAME = '..data';

/** A relative path that stays inside the volume and does not hide under the writer's `..` names. */
export function safeRelativePath(p: string): string {
  const n = normalize(p);
  if (n === '.' || n.startsWith('..') || n.startsWith('/')) throw new VolumePathError(`volume item path ${JSON.stringify(p)} must be relative and stay inside the volume`);
  return n;
}

async function lstatOrUndefined(p: string): Promise<Awaited<ReturnType<typeof lstat>> | undefined> {
  try { return await lstat(p); } catch { return undefined; }
}

/** Every regular file under `root`, relative to it. */
async function listFiles(root: string): Promise<string[]> {
  try {
    const entries = await readdir(root, { recursive: true, withFileTypes: true });
    return entries.filter((e) => e.isFile()).map((e) => join(e.parentPath ?? e.path, e.name).slice(root.length + 1));
  } catch {
    return [];
  }
}

async function sameAsCurrent(dir: string, payload: ReadonlyMap<string, { data: Buffer; mode: number }>, gid: number | undefined): Promise<boolean> {
  const current = join(dir, DATA_DIR_NAME);
  if (!(await lstatOrUndefined(current))?.isSymbolicLink()) return false;
  const files = await listFiles(join(dir, await readlink(current)));
  if (files.length !== payload.size) return false;
  for (const [path, f] of payload) {
    try {
      const full = join(current, path);
      const st = await stat(full);
      if ((st.mode & 0o7777) !== f.mode || (gid !== undefined && st.gid !== gid)) return false;
      if (!(await readFile(full)).equals(f.data)) return false;
    } catch {
      return false;
    }
  }
  return true;
}

function timestampName(): string {
  const d = new Date();
  const p = (n: number, w = 2): string => String(n).padStart(w, '0');
  return `..${d.getUTCFullYear()}_${p(d.getUTCMonth() + 1)}_${p(d.getUTCDate())}_${p(d.getUTCHours())}_${p(d.getUTCMinutes())}_${p(d.getUTCSeconds())}.${randomBytes(5).toString('hex')}`;
}

/** Points `link` at `target` atomically (a new symlink renamed over the old one). */
async function swapLink(link: string, target: string): Promise<void> {
  const tmp = `${link}_tmp${randomBytes(3).toString('hex')}`;
  await symlink(target, tmp);
  try {
    await rename(tmp, link);
  } catch (e) {
    await rm(tmp, { force: true });
    throw e;
  }
}

/**
 * Writes the volume's files as one new version; returns false when the payload was already
 * there (nothing written). `gid`: the pod's fsGroup, given to every file and directory.
 */
export async function writeVolumeFiles(dir: string, files: readonly VolumeFile[], defaultMode: number, gid?: number): Promise<boolean> {
  const payload = new Map<string, { data: Buffer; mode: number }>();
  for (const f of files) payload.set(safeRelativePath(f.path), { data: f.data, mode: f.mode ?? defaultMode });
  await mkdir(dir, { recursive: true });
  if (await sameAsCurrent(dir, payload, gid)) return false;
  const version = timestampName();
  const vdir = join(dir, version);
  await mkdir(vdir, { mode: 0o755 });
  try {
    for (const [path, f] of payload) {
      const full = join(vdir, path);
      await mkdir(dirname(full), { recursive: true });
      await writeFile(full, f.data, { mode: 0o600 });
      await chmod(full, f.mode);
      if (gid !== undefined) await chown(full, -1, gid);
    }
    await chmod(vdir, 0o755);
    if (gid !== undefined) await chown(vdir, -1, gid);
    await swapLink(join(dir, DATA_DIR_NAME), version);
  } catch (e) {
    await rm(vdir, { recursive: true, force: true });
    throw e;
  }
  const tops = new Set([...payload.keys()].map((p) => p.split('/')[0] as string));
  for (const top of tops) {
    const link = join(dir, top);
    const st = await lstatOrUndefined(link);
    if (st?.isSymbolicLink() && (await readlink(link)) === join(DATA_DIR_NAME, top)) continue;
    // A plain file or directory of the old per-file layout is replaced by the link.
    if (st && !st.isSymbolicLink()) await rm(link, { recursive: true, force: true });
    await swapLink(link, join(DATA_DIR_NAME, top));
  }
  for (const name of await readdir(dir)) {
    if (name === DATA_DIR_NAME || name === version) continue;
    const full = join(dir, name);
    if (name.startsWith('..')) {
      // Old versions; a container still reading one keeps its open files.
      await rm(full, { recursive: true, force: true });
    } else if (!tops.has(name) && (await lstatOrUndefined(full))?.isSymbolicLink()) {
      await rm(full, { force: true });
    }
  }
  return true;
}

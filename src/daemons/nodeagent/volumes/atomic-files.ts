/**
 * Writes a volume's files so that a container reading them never sees a half-written file:
 * each file goes to a temporary name in its own directory, gets its exact mode (chmod, so the
 * process umask does not narrow defaultMode), and is renamed over the old one. The volume
 * directory itself stays (it may be bind-mounted into running containers), so this is
 * per-file atomicity, not Kubernetes' whole-directory `..data` symlink swap: two files
 * refreshed together may be seen one old, one new for a moment.
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join, normalize } from 'node:path';

export interface VolumeFile {
  readonly path: string;
  readonly data: Buffer;
  /** Overrides the volume's default mode. */
  readonly mode?: number;
}

export class VolumePathError extends Error {
  override readonly name = 'VolumePathError';
}

/** A relative path that stays inside the volume. */
export function safeRelativePath(p: string): string {
  const n = normalize(p);
  if (n === '.' || n.startsWith('..') || n.startsWith('/')) throw new VolumePathError(`volume item path ${JSON.stringify(p)} must be relative and stay inside the volume`);
  return n;
}

export async function writeFileAtomic(path: string, data: Buffer, mode: number): Promise<void> {
  const dir = dirname(path);
  await mkdir(dir, { recursive: true });
  const tmp = join(dir, `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    await writeFile(tmp, data, { mode: 0o600 });
    await chmod(tmp, mode);
    await rename(tmp, path);
  } catch (e) {
    await rm(tmp, { force: true }).catch(() => undefined);
    throw e;
  }
}

/** Writes every file of a volume (each atomically) with its mode or `defaultMode`. */
export async function writeVolumeFiles(dir: string, files: readonly VolumeFile[], defaultMode: number): Promise<void> {
  await mkdir(dir, { recursive: true });
  for (const f of files) await writeFileAtomic(join(dir, safeRelativePath(f.path)), f.data, f.mode ?? defaultMode);
}

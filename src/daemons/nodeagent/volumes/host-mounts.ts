/**
 * Mounts the node agent makes on the host itself (not the container bind mounts, which the
 * runtime makes from the CRI mounts): tmpfs for emptyDir `medium: Memory` and NFS through the
 * host's mount helper. Every mount lives under the pod's directory, so tearing a pod down
 * unmounts whatever is under that directory (deepest first) before removing it. mount(8) runs
 * with a timeout: a server that does not answer fails the mount (an event, a retry), it never
 * hangs the pod's worker.
 */
import { execFile } from 'node:child_process';
import { access, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const MOUNT_TIMEOUT_MS = 60_000;

export class MountError extends Error {
  override readonly name = 'MountError';
}

/**
 * How mounts are made, set once at start from the node agent's options:
 * --experimental-mounter-path (the mount binary; empty: `mount` from PATH) and
 * --experimental-check-node-capabilities-before-mount (a volume type's mount helper must be
 * there before mounting, else the mount fails at once naming it, as Kubernetes' CanMount).
 */
export interface MounterOptions {
  readonly path: string;
  readonly checkHelpers: boolean;
  /** Where mount helpers (mount.nfs) are looked for. */
  readonly helperDirs?: readonly string[];
}

let mounter: MounterOptions = { path: '', checkHelpers: false };

export function configureMounter(o: MounterOptions): void {
  mounter = o;
}

const HELPER_DIRS = ['/sbin', '/usr/sbin', '/bin', '/usr/bin'];

/** Refuses a mount whose helper is missing (with the capability check on). */
async function requireHelper(name: string): Promise<void> {
  if (!mounter.checkHelpers) return;
  for (const dir of mounter.helperDirs ?? HELPER_DIRS) {
    try { await access(join(dir, name)); return; } catch { /* next */ }
  }
  throw new MountError(`Required binary ${name} is missing`);
}

async function mountCmd(args: string[]): Promise<void> {
  const bin = mounter.path || 'mount';
  try {
    await run(bin, args, { timeout: MOUNT_TIMEOUT_MS });
  } catch (e) {
    const err = e as Error & { stderr?: string; killed?: boolean };
    const why = err.killed ? `timed out after ${MOUNT_TIMEOUT_MS / 1000}s` : (err.stderr?.trim() || err.message);
    throw new MountError(`mount failed: exit status 32\nMounting command: ${bin}\nMounting arguments: ${args.join(' ')}\nOutput: ${why}`);
  }
}

/** Decodes mountinfo's octal escapes (\040 for a space). */
function unescape(p: string): string {
  return p.replace(/\\([0-7]{3})/g, (_m, o: string) => String.fromCharCode(parseInt(o, 8)));
}

/** Mount points of this process's mount namespace. */
export async function mountPoints(): Promise<string[]> {
  const text = await readFile('/proc/self/mountinfo', 'utf8').catch(() => '');
  return text.split('\n').filter(Boolean).map((l) => unescape(l.split(' ')[4] ?? ''));
}

export async function isMountPoint(dir: string): Promise<boolean> {
  return (await mountPoints()).includes(dir);
}

/** A tmpfs at `dir` (a memory-backed emptyDir), of at most `sizeBytes` when given. */
export async function mountTmpfs(dir: string, sizeBytes?: number): Promise<void> {
  if (await isMountPoint(dir)) return;
  await mountCmd(['-t', 'tmpfs', '-o', sizeBytes ? `size=${sizeBytes}` : 'defaults', 'tmpfs', dir]);
}

/** server:path at `dir` with the host's NFS mount helper. */
export async function mountNfs(server: string, path: string, dir: string, readOnly: boolean, options: readonly string[]): Promise<void> {
  if (await isMountPoint(dir)) return;
  await requireHelper('mount.nfs');
  const opts = [...options, ...(readOnly ? ['ro'] : [])];
  await mountCmd(['-t', 'nfs', ...(opts.length ? ['-o', opts.join(',')] : []), `${server}:${path}`, dir]);
}

/** Mount points at or under `dir`, deepest first. */
export async function mountsUnder(dir: string): Promise<string[]> {
  const prefix = dir.endsWith('/') ? dir : `${dir}/`;
  return (await mountPoints()).filter((m) => m === dir || m.startsWith(prefix)).sort((a, b) => b.length - a.length);
}

/** Unmounts every mount at or under `dir`, deepest first; a busy one is detached lazily. */
export async function unmountUnder(dir: string): Promise<void> {
  const under = await mountsUnder(dir);
  for (const m of under) {
    try {
      await run('umount', [m], { timeout: MOUNT_TIMEOUT_MS });
    } catch {
      await run('umount', ['-l', m], { timeout: MOUNT_TIMEOUT_MS }).catch(() => undefined);
    }
  }
}

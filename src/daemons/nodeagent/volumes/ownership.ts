/**
 * The pod's fsGroup on a volume it may write to (emptyDir, local volumes), as Kubernetes'
 * SetVolumeOwnership: every file and directory gets the group, group read/write (and group
 * execute where the owner has it), and directories the setgid bit so new files inherit the
 * group. fsGroupChangePolicy OnRootMismatch skips the walk when the volume's root already has
 * the group and the bits.
 */
import { chmod, chown, lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Pod } from '../pod-types.js';

/** The pod's fsGroup and its change policy, when set. */
export function podFsGroup(pod: Pod): { gid: number; onRootMismatch: boolean } | undefined {
  const sc = pod.spec?.securityContext;
  const gid = sc?.fsGroup;
  if (typeof gid !== 'number') return undefined;
  return { gid, onRootMismatch: sc?.fsGroupChangePolicy === 'OnRootMismatch' };
}

async function fix(path: string, gid: number): Promise<void> {
  const st = await lstat(path);
  if (st.isSymbolicLink()) return;
  if (st.gid !== gid) await chown(path, -1, gid);
  let mode = st.mode & 0o7777;
  mode |= 0o060;
  if (st.isDirectory()) mode |= 0o2010;
  else if (mode & 0o100) mode |= 0o010;
  if (mode !== (st.mode & 0o7777)) await chmod(path, mode);
  if (st.isDirectory()) for (const e of await readdir(path)) await fix(join(path, e), gid);
}

export async function applyFsGroup(dir: string, pod: Pod): Promise<void> {
  const fs = podFsGroup(pod);
  if (!fs) return;
  if (fs.onRootMismatch) {
    const st = await lstat(dir);
    if (st.gid === fs.gid && (st.mode & 0o2070) === 0o2070) return;
  }
  await fix(dir, fs.gid);
}

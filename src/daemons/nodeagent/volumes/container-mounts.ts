/**
 * A container's CRI mounts from its volumeMounts and the pod's prepared volumes:
 *  - readOnly when the mount or the volume (a read-only claim or source) says so;
 *  - subPath, or subPathExpr expanded against the container's environment ($(VAR) only): a
 *    relative path without `..` that must stay inside the volume once symlinks are resolved
 *    (a symlink pointing out of the volume is refused, as Kubernetes refuses it); a missing
 *    subPath directory is created. The resolved path is mounted, so a subPath into a
 *    configMap/secret volume keeps the version it started with (it does not follow updates);
 *  - mountPropagation: None → private, HostToContainer, Bidirectional (privileged only, as the
 *    API validates).
 */
import { mkdir, realpath } from 'node:fs/promises';
import { isAbsolute, join, normalize, sep } from 'node:path';
import { expandVars } from '../env.js';
import type { Container } from '../pod-types.js';
import type { Device, Mount } from '../runtime/runtime.js';

/** Volume name → host path, plus which volumes are read-only for every container. */
export class VolumePaths extends Map<string, string> {
  readonly readOnly = new Set<string>();
  /** Claims of volumeMode Block: volume name → the host's device node (not in the map itself). */
  readonly blockDevices = new Map<string, string>();
  /** configMap/secret volumes of immutable objects: written once, not refreshed. */
  readonly immutable = new Set<string>();
}

export class SubPathError extends Error {
  override readonly name = 'SubPathError';
}

function checkRelative(sub: string, what: string): string {
  const n = normalize(sub);
  if (isAbsolute(sub) || n === '..' || n.startsWith(`..${sep}`) || n.split(sep).includes('..')) {
    throw new SubPathError(`${what} ${JSON.stringify(sub)} must be a relative path without '..'`);
  }
  return n;
}

/** The host path of a subPath inside `volume`, created when missing, checked to stay inside it. */
export async function resolveSubPath(volume: string, sub: string, what = 'subPath'): Promise<string> {
  const rel = checkRelative(sub, what);
  const full = join(volume, rel);
  await mkdir(full, { recursive: true, mode: 0o755 }).catch((e: NodeJS.ErrnoException) => { if (e.code !== 'EEXIST') throw e; });
  const [root, real] = await Promise.all([realpath(volume), realpath(full)]);
  if (real !== root && !real.startsWith(root.endsWith(sep) ? root : root + sep)) {
    throw new SubPathError(`${what} ${JSON.stringify(sub)}: the path ${real} is not within the volume ${root}`);
  }
  return real;
}

/**
 * The container's volumeDevices as CRI devices: each names a Block claim of the pod; a Block
 * volume cannot be mounted as a file system (as Kubernetes refuses it).
 */
export function containerDevices(c: Container, paths: ReadonlyMap<string, string>): Device[] {
  const block = paths instanceof VolumePaths ? paths.blockDevices : new Map<string, string>();
  for (const vm of c.volumeMounts ?? []) {
    if (block.has(vm.name)) throw new SubPathError(`volumeMount ${vm.name}: the volume is a block device (volumeMode Block): use volumeDevices`);
  }
  return (c.volumeDevices ?? []).map((vd) => {
    const host = block.get(vd.name);
    if (host === undefined) throw new SubPathError(`volumeDevice ${vd.name} names no block volume of the pod`);
    return { containerPath: vd.devicePath, hostPath: host, permissions: 'mrw' };
  });
}

export async function containerMounts(c: Container, paths: ReadonlyMap<string, string>, env: ReadonlyMap<string, string>): Promise<Mount[]> {
  const ro = paths instanceof VolumePaths ? paths.readOnly : new Set<string>();
  const out: Mount[] = [];
  for (const vm of c.volumeMounts ?? []) {
    const host = paths.get(vm.name);
    if (host === undefined) throw new SubPathError(`volumeMount ${vm.name} names no volume of the pod`);
    let hostPath = host;
    if (vm.subPath) hostPath = await resolveSubPath(host, vm.subPath);
    else if (vm.subPathExpr) hostPath = await resolveSubPath(host, expandVars(vm.subPathExpr, env), 'subPathExpr');
    out.push({
      containerPath: vm.mountPath, hostPath, readonly: vm.readOnly === true || ro.has(vm.name),
      propagation: vm.mountPropagation === 'Bidirectional' ? 'bidirectional' : vm.mountPropagation === 'HostToContainer' ? 'host-to-container' : 'private',
    });
  }
  return out;
}

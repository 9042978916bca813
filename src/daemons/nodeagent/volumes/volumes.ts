/**
 * Pod volumes on the node, under <root-dir>/pods/<uid>/volumes/<plugin>/<name>:
 *  - emptyDir: a directory, or with `medium: Memory` a tmpfs (of sizeLimit when given);
 *  - hostPath: the host path itself (DirectoryOrCreate/FileOrCreate create it);
 *  - persistentVolumeClaim: the bound volume (claims.ts), hostPath, local, nfs or csi;
 *  - nfs inline: mounted with the host's helper (host-mounts.ts);
 *  - the file-set volumes configMap, secret, downwardAPI and projected, written with the
 *    atomic writer (atomic-files.ts: a `..data` symlink swap) and kept up to date by
 *    `refreshVolumes`, which the pod worker calls on its syncs (immutable config maps and
 *    secrets are read once, source-objects.ts; the refresh also finishes volume expansions
 *    on the node, expansion.ts). Projected volumes go to `ctx.projected` (projected.ts:
 *    service-account tokens refreshed at 80 % of their lifetime).
 * The pod's fsGroup is given to emptyDir, local volumes and the file-set volumes' files.
 */
import { existsSync } from 'node:fs';
import { chmod, mkdir, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Logger } from 'pino';
import { parseQuantity } from '../../../util/quantity.js';
import { podFieldValue, type ObjectReader, type PodFieldContext } from '../env.js';
import type { Dict, Pod } from '../pod-types.js';
import { VolumePathError, writeVolumeFiles } from './atomic-files.js';
import { ClaimError, localPathOf, resolveClaim, type ClaimReader } from './claims.js';
import { VolumePaths } from './container-mounts.js';
import type { CsiVolumes } from './csi-node.js';
import { mountNfs, mountsUnder, mountTmpfs, unmountUnder } from './host-mounts.js';
import type { SourceObjects } from './source-objects.js';
import { finishExpansions } from './expansion.js';
import { applyFsGroup, podFsGroup } from './ownership.js';

/** Sets up one projected volume in `dir` (and keeps it fresh); see projected.ts. */
export interface ProjectedVolumeHandler {
  setUp(pod: Pod, source: Dict, dir: string, ctx: VolumeContext): Promise<void>;
}

export interface VolumeContext extends PodFieldContext {
  readonly rootDir: string;
  readonly reader: ObjectReader;
  readonly log: Logger;
  readonly projected: ProjectedVolumeHandler;
  /** Claims and volumes (none when standalone: claims then fail to mount). */
  readonly claims?: ClaimReader;
  /** Config maps and secrets read whole (immutability, exact bytes); without it `reader` is used. */
  readonly sources?: SourceObjects;
  /** CSI node services by driver name (csi-node.ts). */
  readonly csi?: CsiVolumes;
}

export class VolumeError extends Error {
  override readonly name = 'VolumeError';
}

export interface FileEntry { path: string; data: Buffer; mode?: number }

function isDict(v: unknown): v is Dict { return typeof v === 'object' && v !== null && !Array.isArray(v); }

export function podDir(rootDir: string, uid: string): string {
  return join(rootDir, 'pods', uid);
}

function mapItems(data: Record<string, Buffer>, items: unknown, optional: boolean, what: string): FileEntry[] {
  if (!Array.isArray(items) || items.length === 0) return Object.entries(data).map(([k, v]) => ({ path: k, data: v }));
  const out: FileEntry[] = [];
  for (const it of items) {
    if (!isDict(it)) continue;
    const key = String(it.key);
    const v = data[key];
    if (v === undefined) { if (optional) continue; throw new VolumeError(`configmap/secret ${what} has no key ${key}`); }
    out.push({ path: String(it.path ?? key), data: v, ...(typeof it.mode === 'number' ? { mode: it.mode } : {}) });
  }
  return out;
}

export async function objectFiles(kind: 'configMap' | 'secret', src: Dict, pod: Pod, ctx: VolumeContext, immutable?: () => void): Promise<FileEntry[]> {
  const ns = pod.metadata?.namespace ?? 'default';
  const name = String(kind === 'secret' ? (src.secretName ?? src.name) : src.name);
  const optional = src.optional === true;
  let data: Record<string, Buffer> | undefined;
  if (ctx.sources) {
    const o = await ctx.sources.get(kind, ns, name);
    if (o?.immutable) immutable?.();
    data = o?.data;
  } else {
    const raw = kind === 'configMap' ? await ctx.reader.configMap(ns, name) : await ctx.reader.secret(ns, name);
    if (raw) { data = {}; for (const [k, v] of Object.entries(raw)) data[k] = Buffer.from(v); }
  }
  if (!data) {
    if (optional) return [];
    throw new VolumeError(`${kind === 'configMap' ? 'configmap' : 'secret'} "${name}" not found`);
  }
  return mapItems(data, src.items, optional, name);
}

export function downwardFiles(src: Dict, pod: Pod, ctx: VolumeContext): FileEntry[] {
  const out: FileEntry[] = [];
  for (const it of Array.isArray(src.items) ? src.items : []) {
    if (!isDict(it)) continue;
    const fr = it.fieldRef;
    if (isDict(fr)) out.push({ path: String(it.path), data: Buffer.from(podFieldValue(pod, String(fr.fieldPath), ctx)), ...(typeof it.mode === 'number' ? { mode: it.mode } : {}) });
  }
  return out;
}

/** Writes the files as one new version of the volume; true when something changed. */
async function writeFileSet(dir: string, files: FileEntry[], defaultMode: number, pod: Pod): Promise<boolean> {
  try {
    return await writeVolumeFiles(dir, files, defaultMode, podFsGroup(pod)?.gid);
  } catch (e) {
    if (e instanceof VolumePathError) throw new VolumeError(e.message);
    throw e;
  }
}

const mode = (src: unknown): number => (isDict(src) && typeof src.defaultMode === 'number' ? src.defaultMode : 0o644);

function volumeBase(rootDir: string, pod: Pod): string {
  return join(podDir(rootDir, pod.metadata?.uid ?? ''), 'volumes');
}

async function hostPathDir(p: string, type: string): Promise<void> {
  if (type === 'DirectoryOrCreate') await mkdir(p, { recursive: true });
  else if (type === 'LocalPath' && !existsSync(p)) { await mkdir(p, { recursive: true }); await chmod(p, 0o777); }
  else if (type === 'FileOrCreate') { await mkdir(dirname(p), { recursive: true }); await writeFile(p, '', { flag: 'a' }); }
}

/** A claim's bound volume: its host path (mounted first when it is nfs or csi). */
async function setUpClaim(pod: Pod, name: string, source: Dict, base: string, ctx: VolumeContext, out: VolumePaths): Promise<void> {
  let bound;
  try {
    bound = await resolveClaim(pod, source, ctx.claims);
  } catch (e) {
    if (e instanceof ClaimError) throw new VolumeError(e.message);
    throw e;
  }
  if (bound.readOnly) out.readOnly.add(name);
  if (bound.spec.volumeMode === 'Block') {
    // A local volume of volumeMode Block: its path is a device node, handed to containers as a
    // device (volumeDevices), never mounted, chowned or created.
    const dev = String((bound.spec.local as Dict | undefined)?.path ?? '');
    const st = await stat(dev).catch(() => undefined);
    if (!st?.isBlockDevice()) throw new VolumeError(`volume ${bound.volume.metadata?.name ?? ''}: ${dev} is not a block device`);
    out.blockDevices.set(name, dev);
    return;
  }
  const local = localPathOf(bound);
  if (local) {
    await hostPathDir(local.path, local.type);
    if (local.local) await applyFsGroup(local.path, pod);
    out.set(name, local.path);
    return;
  }
  const spec = bound.spec;
  const pvName = bound.volume.metadata?.name ?? '';
  if (isDict(spec.nfs)) {
    const d = join(base, 'kubernetes.io~nfs', name);
    await mkdir(d, { recursive: true });
    await mountNfs(String(spec.nfs.server), String(spec.nfs.path), d, bound.readOnly, (spec.mountOptions as string[] | undefined) ?? []);
    out.set(name, d);
    return;
  }
  if (isDict(spec.csi)) {
    if (!ctx.csi) throw new VolumeError(`volume ${pvName}: no CSI drivers are registered on this node`);
    const d = join(base, 'kubernetes.io~csi', name, 'mount');
    await ctx.csi.setUp(pod, bound.volume, d, bound.readOnly);
    out.set(name, d);
    return;
  }
  throw new VolumeError(`volume ${pvName}: this persistent volume type is not supported by the node agent`);
}

/** Prepares every volume of the pod; returns volume name → host path (and the read-only ones). */
export async function setUpVolumes(pod: Pod, ctx: VolumeContext): Promise<VolumePaths> {
  const base = volumeBase(ctx.rootDir, pod);
  const out = new VolumePaths();
  for (const v of pod.spec?.volumes ?? []) {
    const dirFor = (plugin: string): string => join(base, plugin, v.name);
    if (isDict(v.hostPath)) {
      const p = String(v.hostPath.path);
      await hostPathDir(p, String(v.hostPath.type ?? ''));
      out.set(v.name, p);
    } else if (isDict(v.persistentVolumeClaim)) {
      await setUpClaim(pod, v.name, v.persistentVolumeClaim, base, ctx, out);
    } else if (isDict(v.nfs)) {
      const d = dirFor('kubernetes.io~nfs');
      await mkdir(d, { recursive: true });
      await mountNfs(String(v.nfs.server), String(v.nfs.path), d, v.nfs.readOnly === true, []);
      if (v.nfs.readOnly === true) out.readOnly.add(v.name);
      out.set(v.name, d);
    } else if (isDict(v.configMap) || isDict(v.secret) || isDict(v.downwardAPI)) {
      const d = dirFor(fileSetPlugin(v));
      await writeFileSet(d, await fileSetFiles(v, pod, ctx, out), mode(v.configMap ?? v.secret ?? v.downwardAPI), pod);
      out.readOnly.add(v.name);
      out.set(v.name, d);
    } else if (isDict(v.projected)) {
      const d = dirFor('kubernetes.io~projected');
      await ctx.projected.setUp(pod, v.projected, d, ctx);
      out.readOnly.add(v.name);
      out.set(v.name, d);
    } else if (isDict(v.emptyDir) || Object.keys(v).length === 1) {
      const d = dirFor('kubernetes.io~empty-dir');
      await mkdir(d, { recursive: true, mode: 0o777 });
      const ed = isDict(v.emptyDir) ? v.emptyDir : {};
      if (ed.medium === 'Memory') {
        const limit = typeof ed.sizeLimit === 'string' || typeof ed.sizeLimit === 'number' ? parseQuantity(String(ed.sizeLimit)) : undefined;
        await mountTmpfs(d, limit);
      }
      await applyFsGroup(d, pod);
      out.set(v.name, d);
    } else {
      throw new VolumeError(`volume ${v.name}: this volume type is not supported by the node agent yet`);
    }
  }
  return out;
}

function fileSetPlugin(v: Dict): string {
  if (isDict(v.configMap)) return 'kubernetes.io~configmap';
  if (isDict(v.secret)) return 'kubernetes.io~secret';
  return 'kubernetes.io~downward-api';
}

async function fileSetFiles(v: Dict, pod: Pod, ctx: VolumeContext, paths?: VolumePaths): Promise<FileEntry[]> {
  const immutable = (): void => { paths?.immutable.add(v.name as string); };
  if (isDict(v.configMap)) return objectFiles('configMap', v.configMap, pod, ctx, immutable);
  if (isDict(v.secret)) return objectFiles('secret', v.secret, pod, ctx, immutable);
  return downwardFiles(v.downwardAPI as Dict, pod, ctx);
}

/** True when a projected volume has a token source (its own refresher keeps it current). */
function hasTokenSource(src: Dict): boolean {
  return (Array.isArray(src.sources) ? src.sources : []).some((s) => isDict(s) && isDict(s.serviceAccountToken));
}

/**
 * Brings the file-set volumes up to date with their sources (Kubernetes' periodic remount of
 * configMap, secret, downwardAPI and projected volumes). Returns the names of the volumes
 * that changed.
 */
export async function refreshVolumes(pod: Pod, paths: ReadonlyMap<string, string>, ctx: VolumeContext): Promise<string[]> {
  const changed: string[] = [];
  for (const v of pod.spec?.volumes ?? []) {
    const d = paths.get(v.name);
    if (!d || (paths instanceof VolumePaths && paths.immutable.has(v.name))) continue;
    if (isDict(v.configMap) || isDict(v.secret) || isDict(v.downwardAPI)) {
      if (await writeFileSet(d, await fileSetFiles(v, pod, ctx), mode(v.configMap ?? v.secret ?? v.downwardAPI), pod)) changed.push(v.name);
    } else if (isDict(v.projected) && !hasTokenSource(v.projected)) {
      await ctx.projected.setUp(pod, v.projected, d, ctx);
    }
  }
  for (const claim of await finishExpansions(pod, paths, ctx)) changed.push(`claim ${claim} expanded`);
  return changed;
}

/** Removes everything the pod had on the node: CSI volumes unpublished, host mounts undone, then the directories. */
export async function tearDownPodDir(rootDir: string, uid: string, csi?: CsiVolumes): Promise<void> {
  const dir = podDir(rootDir, uid);
  if (csi) await csi.tearDownPod(uid, join(dir, 'volumes', 'kubernetes.io~csi'));
  await unmountUnder(dir);
  // Never remove through a mount that is still there (an NFS share's files would go with it).
  const left = await mountsUnder(dir);
  if (left.length) throw new VolumeError(`cannot remove ${dir}: still mounted: ${left.join(', ')}`);
  await rm(dir, { recursive: true, force: true });
}

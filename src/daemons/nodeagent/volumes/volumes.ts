/**
 * Pod volumes on the node, under <root-dir>/pods/<uid>/volumes/<plugin>/<name>:
 * emptyDir (a directory), hostPath (the host path itself; DirectoryOrCreate/FileOrCreate
 * create it), and the file-set volumes configMap, secret, downwardAPI and projected (files
 * written once when the pod starts, each atomically with its exact mode; a later change of the
 * source object is not propagated yet). Projected volumes go to `ctx.projected` (projected.ts:
 * service-account tokens refreshed at 80 % of their lifetime).
 */
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Logger } from 'pino';
import { podFieldValue, type ObjectReader, type PodFieldContext } from '../env.js';
import type { Dict, Pod } from '../pod-types.js';
import { VolumePathError, writeVolumeFiles } from './atomic-files.js';

/** Sets up one projected volume in `dir` (and keeps it fresh); see projected.ts. */
export interface ProjectedVolumeHandler {
  setUp(pod: Pod, source: Dict, dir: string, ctx: VolumeContext): Promise<void>;
}

export interface VolumeContext extends PodFieldContext {
  readonly rootDir: string;
  readonly reader: ObjectReader;
  readonly log: Logger;
  readonly projected: ProjectedVolumeHandler;
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

export async function objectFiles(kind: 'configMap' | 'secret', src: Dict, pod: Pod, ctx: VolumeContext): Promise<FileEntry[]> {
  const ns = pod.metadata?.namespace ?? 'default';
  const name = String(kind === 'secret' ? (src.secretName ?? src.name) : src.name);
  const optional = src.optional === true;
  const raw = kind === 'configMap' ? await ctx.reader.configMap(ns, name) : await ctx.reader.secret(ns, name);
  if (!raw) {
    if (optional) return [];
    throw new VolumeError(`${kind === 'configMap' ? 'configmap' : 'secret'} "${name}" not found`);
  }
  const data: Record<string, Buffer> = {};
  for (const [k, v] of Object.entries(raw)) data[k] = Buffer.from(v);
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

/** Writes the files (each atomically) into the directory, which stays: it may be bind-mounted into running containers. */
async function writeFileSet(dir: string, files: FileEntry[], defaultMode: number): Promise<void> {
  try {
    await writeVolumeFiles(dir, files, defaultMode);
  } catch (e) {
    if (e instanceof VolumePathError) throw new VolumeError(e.message);
    throw e;
  }
}

/** Prepares every volume of the pod; returns volume name → host path. */
export async function setUpVolumes(pod: Pod, ctx: VolumeContext): Promise<Map<string, string>> {
  const uid = pod.metadata?.uid ?? '';
  const base = join(podDir(ctx.rootDir, uid), 'volumes');
  const out = new Map<string, string>();
  for (const v of pod.spec?.volumes ?? []) {
    const dirFor = (plugin: string): string => join(base, plugin, v.name);
    const mode = (src: unknown): number => (isDict(src) && typeof src.defaultMode === 'number' ? src.defaultMode : 0o644);
    if (isDict(v.hostPath)) {
      const p = String(v.hostPath.path);
      const type = String(v.hostPath.type ?? '');
      if (type === 'DirectoryOrCreate') await mkdir(p, { recursive: true });
      else if (type === 'FileOrCreate') { await mkdir(dirname(p), { recursive: true }); await writeFile(p, '', { flag: 'a' }); }
      out.set(v.name, p);
    } else if (isDict(v.configMap)) {
      const d = dirFor('kubernetes.io~configmap');
      await writeFileSet(d, await objectFiles('configMap', v.configMap, pod, ctx), mode(v.configMap));
      out.set(v.name, d);
    } else if (isDict(v.secret)) {
      const d = dirFor('kubernetes.io~secret');
      await writeFileSet(d, await objectFiles('secret', v.secret, pod, ctx), mode(v.secret));
      out.set(v.name, d);
    } else if (isDict(v.downwardAPI)) {
      const d = dirFor('kubernetes.io~downward-api');
      await writeFileSet(d, downwardFiles(v.downwardAPI, pod, ctx), mode(v.downwardAPI));
      out.set(v.name, d);
    } else if (isDict(v.projected)) {
      const d = dirFor('kubernetes.io~projected');
      await ctx.projected.setUp(pod, v.projected, d, ctx);
      out.set(v.name, d);
    } else if (isDict(v.emptyDir) || Object.keys(v).length === 1) {
      const d = dirFor('kubernetes.io~empty-dir');
      await mkdir(d, { recursive: true, mode: 0o777 });
      out.set(v.name, d);
    } else {
      throw new VolumeError(`volume ${v.name}: this volume type is not supported by the node agent yet`);
    }
  }
  return out;
}

/** Removes everything the pod had on the node (volumes and per-pod directories). */
export async function tearDownPodDir(rootDir: string, uid: string): Promise<void> {
  await rm(podDir(rootDir, uid), { recursive: true, force: true });
}

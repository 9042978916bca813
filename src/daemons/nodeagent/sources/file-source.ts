/**
 * --pod-manifest-path: a directory of manifest files (or one file), re-read every
 * --file-check-frequency. Names starting with '.' are ignored; a bad file is logged and skipped
 * (its pods are kept out, the others still run).
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { PodSet } from '../pod-set.js';
import type { Pod } from '../pod-types.js';
import { parseManifestText, staticPodFrom } from './static-pod.js';
import { abortableSleep } from '../../../util/abort.js';

export interface FileSourceOptions {
  readonly path: string;
  readonly nodeName: string;
  readonly periodMs: number;
  readonly podSet: PodSet;
  readonly log: Logger;
}

async function manifestFiles(path: string): Promise<string[]> {
  let st;
  try { st = await stat(path); } catch { return []; }
  if (!st.isDirectory()) return [path];
  const names = (await readdir(path)).filter((n) => !n.startsWith('.')).sort();
  const out: string[] = [];
  for (const n of names) {
    const p = join(path, n);
    try { if ((await stat(p)).isFile()) out.push(p); } catch { /* raced with a delete */ }
  }
  return out;
}

/** One pass over the path: the pods it holds now. */
export async function readManifestPath(path: string, nodeName: string, log: Logger): Promise<Pod[]> {
  const pods: Pod[] = [];
  const seen = new Set<string>();
  for (const f of await manifestFiles(path)) {
    try {
      for (const m of parseManifestText(await readFile(f, 'utf8'), f)) {
        const pod = staticPodFrom(m, 'file', nodeName, f);
        const key = `${pod.metadata?.namespace}/${pod.metadata?.name}`;
        if (seen.has(key)) { log.warn({ file: f, pod: key }, 'duplicate static pod name; ignored'); continue; }
        seen.add(key);
        pods.push(pod);
      }
    } catch (e) {
      log.warn({ file: f, err: (e as Error).message }, 'could not use manifest file');
    }
  }
  return pods;
}

export async function runFileSource(o: FileSourceOptions, signal: AbortSignal): Promise<void> {
  while (!signal.aborted) {
    try {
      o.podSet.replace('file', await readManifestPath(o.path, o.nodeName, o.log));
    } catch (e) {
      o.log.warn({ err: (e as Error).message }, 'reading --pod-manifest-path failed');
    }
    await abortableSleep(o.periodMs, signal);
  }
}

/**
 * Air-gapped nodes, as k3s offers them: image archives (docker-save or OCI-layout .tar files)
 * dropped in <root-dir>/images/ are imported into the runtime at start,
 * so that pods can use them with no registry. CRI has no import call: containerd's `ctr`
 * imports into the CRI namespace (k8s.io) over the same socket as --container-runtime-endpoint.
 * An archive already imported (same size and mtime, noted in images/.imported) is skipped.
 * Contract: never throws; a failed archive is logged and the others still imported.
 */
import { spawn } from 'node:child_process';
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';

const ARCHIVE = /\.tar$/;

export interface ImportResult { readonly imported: string[]; readonly skipped: string[]; readonly failed: string[] }

/** The containerd socket of a unix:// CRI endpoint, or undefined for another kind. */
export function socketOf(endpoint: string): string | undefined {
  if (endpoint.startsWith('unix://')) return endpoint.slice('unix://'.length);
  if (endpoint.startsWith('/')) return endpoint;
  return undefined;
}

function run(cmd: string, args: string[], input?: NodeJS.ReadableStream): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(cmd, args, { stdio: [input ? 'pipe' : 'ignore', 'ignore', 'pipe'] });
    let stderr = '';
    p.stderr?.on('data', (b: Buffer) => { stderr += b.toString(); });
    p.on('error', (e) => resolve({ code: -1, stderr: e.message }));
    p.on('close', (code) => resolve({ code: code ?? -1, stderr: stderr.trim() }));
    if (input && p.stdin) input.pipe(p.stdin);
  });
}

export async function importImageArchives(dir: string, endpoint: string, log: Logger, ctr = 'ctr'): Promise<ImportResult> {
  const out: ImportResult = { imported: [], skipped: [], failed: [] };
  let names: string[];
  try { names = (await readdir(dir)).filter((n) => ARCHIVE.test(n)).sort(); } catch { return out; }
  if (names.length === 0) return out;
  const socket = socketOf(endpoint);
  if (!socket) {
    log.warn({ dir, endpoint }, 'image archives found but the runtime endpoint is not a local containerd socket; not imported');
    return { ...out, failed: names };
  }
  const stampFile = join(dir, '.imported');
  let stamps: Record<string, string> = {};
  try { stamps = JSON.parse(await readFile(stampFile, 'utf8')) as Record<string, string>; } catch { /* first time */ }
  for (const name of names) {
    const path = join(dir, name);
    const st = await stat(path).catch(() => undefined);
    if (!st) continue;
    const stamp = `${st.size}:${st.mtimeMs}`;
    if (stamps[name] === stamp) { out.skipped.push(name); continue; }
    const t0 = Date.now();
    const r = await run(ctr, ['-a', socket, '-n', 'k8s.io', 'images', 'import', path]);
    if (r.code === 0) {
      stamps[name] = stamp;
      out.imported.push(name);
      log.info({ archive: path, ms: Date.now() - t0 }, 'image archive imported');
    } else {
      out.failed.push(name);
      log.warn({ archive: path, err: r.stderr }, 'image archive import failed');
    }
  }
  await writeFile(stampFile, JSON.stringify(stamps)).catch(() => undefined);
  return out;
}

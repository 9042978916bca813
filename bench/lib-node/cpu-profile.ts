/**
 * Summarises V8 CPU profiles (`node --cpu-prof` .cpuprofile files): self time by function and
 * by source file, busiest first, with idle and GC shown as their own rows, so a bench can say
 * where a daemon's CPU went without opening a profiler.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';

interface ProfileNode { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }
interface Profile { nodes: ProfileNode[]; samples?: number[]; timeDeltas?: number[]; startTime: number; endTime: number }

export interface ProfileSummary {
  file: string;
  totalMs: number;
  idleMs: number;
  byFunction: Array<[string, number]>;
  byFile: Array<[string, number]>;
}

function shortUrl(url: string): string {
  if (!url) return '(native)';
  const path = url.startsWith('file://') ? url.slice('file://'.length) : url;
  const nm = path.lastIndexOf('/node_modules/');
  if (nm >= 0) return path.slice(nm + 1);
  return path.startsWith('/') ? relative(process.cwd(), path) : path;
}

export function summariseProfile(file: string, p: Profile): ProfileSummary {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  const samples = p.samples ?? [];
  const deltas = p.timeDeltas ?? [];
  // timeDeltas[i] is the time before sample i; charge it to the sample that follows.
  for (let i = 0; i < samples.length; i++) {
    const id = samples[i] as number;
    self.set(id, (self.get(id) ?? 0) + Math.max(0, deltas[i + 1] ?? 0) / 1000);
  }
  const fn = new Map<string, number>();
  const files = new Map<string, number>();
  let idleMs = 0;
  let totalMs = 0;
  for (const [id, t] of self) {
    const n = byId.get(id);
    if (!n) continue;
    totalMs += t;
    const name = n.callFrame.functionName || '(anonymous)';
    if (name === '(idle)') { idleMs += t; continue; }
    const where = shortUrl(n.callFrame.url);
    const key = n.callFrame.url ? `${name} ${where}:${n.callFrame.lineNumber + 1}` : name;
    fn.set(key, (fn.get(key) ?? 0) + t);
    const fileKey = n.callFrame.url ? where : name;
    files.set(fileKey, (files.get(fileKey) ?? 0) + t);
  }
  const sorted = (m: Map<string, number>): Array<[string, number]> => [...m].sort((a, b) => b[1] - a[1]);
  return { file, totalMs, idleMs, byFunction: sorted(fn), byFile: sorted(files) };
}

/** Prints a summary of every .cpuprofile in `dir` (top `top` rows each). */
export async function summariseProfiles(dir: string, top: number): Promise<void> {
  const names = (await readdir(dir).catch(() => [] as string[])).filter((n) => n.endsWith('.cpuprofile')).sort();
  if (!names.length) { console.log(`no .cpuprofile in ${dir}`); return; }
  for (const name of names) {
    const s = summariseProfile(name, JSON.parse(await readFile(join(dir, name), 'utf8')) as Profile);
    const busy = s.totalMs - s.idleMs;
    console.log(`\nprofile ${join(dir, name)}: ${(s.totalMs / 1000).toFixed(1)} s sampled, ${(busy / 1000).toFixed(2)} s busy`);
    console.log('  self time by file:');
    for (const [k, t] of s.byFile.slice(0, top)) console.log(`    ${(t / 1000).toFixed(3).padStart(8)} s  ${((100 * t) / Math.max(1, busy)).toFixed(1).padStart(5)}%  ${k}`);
    console.log('  self time by function:');
    for (const [k, t] of s.byFunction.slice(0, top)) console.log(`    ${(t / 1000).toFixed(3).padStart(8)} s  ${((100 * t) / Math.max(1, busy)).toFixed(1).padStart(5)}%  ${k}`);
  }
}

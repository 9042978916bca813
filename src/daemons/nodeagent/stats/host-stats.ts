/**
 * The node's own figures from /proc and statfs: CPU time (/proc/stat), memory (/proc/meminfo,
 * working set as Kubernetes counts it: usage minus inactive file pages), network interfaces
 * (/proc/<pid>/net/dev: the host's, or a pod's network namespace through one of its
 * processes), filesystem capacity and process limits.
 */
import { readdir, readFile, statfs } from 'node:fs/promises';
import { cpus } from 'node:os';

export interface InterfaceStats { name: string; rxBytes: number; rxErrors: number; txBytes: number; txErrors: number }

/** Interfaces cAdvisor leaves out of a network's figures: loopback and the host ends of pod links. */
const IGNORED = /^(lo|veth|docker|nerdctl|ifb)/;

/** /proc/net/dev: one entry per interface but loopback and pod links. */
export function parseNetDev(text: string): InterfaceStats[] {
  const out: InterfaceStats[] = [];
  for (const line of text.split('\n').slice(2)) {
    const m = /^\s*([^:]+):\s*(.*)$/.exec(line);
    if (!m) continue;
    const name = (m[1] ?? '').trim();
    const f = (m[2] ?? '').trim().split(/\s+/).map(Number);
    if (IGNORED.test(name) || f.length < 16) continue;
    out.push({ name, rxBytes: f[0] ?? 0, rxErrors: f[2] ?? 0, txBytes: f[8] ?? 0, txErrors: f[10] ?? 0 });
  }
  return out;
}

export async function readNetDev(pid: number | 'self'): Promise<InterfaceStats[] | undefined> {
  try { return parseNetDev(await readFile(`/proc/${pid}/net/dev`, 'utf8')); } catch { return undefined; }
}

/** Cumulative non-idle CPU time of the node in nanoseconds (/proc/stat's cpu line, USER_HZ ticks). */
export function parseProcStatCpu(text: string, ticksPerSecond = 100): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith('cpu '));
  if (!line) return undefined;
  const f = line.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal (guest counted inside user already)
  const busy = (f[0] ?? 0) + (f[1] ?? 0) + (f[2] ?? 0) + (f[5] ?? 0) + (f[6] ?? 0) + (f[7] ?? 0);
  return Math.round((busy / ticksPerSecond) * 1e9);
}

export async function nodeCpuNanoSeconds(): Promise<number | undefined> {
  try { return parseProcStatCpu(await readFile('/proc/stat', 'utf8')); } catch { return undefined; }
}

export interface NodeMemory { capacityBytes: number; usageBytes: number; workingSetBytes: number; availableBytes: number; rssBytes: number; pageFaults?: number; majorPageFaults?: number }

export function parseMeminfo(text: string): NodeMemory {
  const kb = new Map<string, number>();
  for (const l of text.split('\n')) {
    const m = /^(\S+):\s+(\d+)/.exec(l);
    if (m) kb.set(m[1] ?? '', Number(m[2]) * 1024);
  }
  const total = kb.get('MemTotal') ?? 0;
  const usage = Math.max(0, total - (kb.get('MemFree') ?? 0));
  const workingSet = Math.max(0, usage - (kb.get('Inactive(file)') ?? 0));
  return { capacityBytes: total, usageBytes: usage, workingSetBytes: workingSet, availableBytes: Math.max(0, total - workingSet), rssBytes: kb.get('AnonPages') ?? 0 };
}

export async function nodeMemory(): Promise<NodeMemory | undefined> {
  try {
    const mem = parseMeminfo(await readFile('/proc/meminfo', 'utf8'));
    const vm = await readFile('/proc/vmstat', 'utf8').catch(() => '');
    const get = (k: string): number | undefined => { const m = new RegExp(`^${k} (\\d+)$`, 'm').exec(vm); return m ? Number(m[1]) : undefined; };
    const pf = get('pgfault');
    const mf = get('pgmajfault');
    return { ...mem, ...(pf !== undefined ? { pageFaults: pf } : {}), ...(mf !== undefined ? { majorPageFaults: mf } : {}) };
  } catch { return undefined; }
}

export interface FsFigures { availableBytes: number; capacityBytes: number; usedBytes: number; inodesFree: number; inodes: number; inodesUsed: number }

export async function fsFigures(path: string): Promise<FsFigures | undefined> {
  try {
    const s = await statfs(path);
    const capacity = s.blocks * s.bsize;
    return {
      availableBytes: s.bavail * s.bsize, capacityBytes: capacity, usedBytes: (s.blocks - s.bfree) * s.bsize,
      inodesFree: s.ffree, inodes: s.files, inodesUsed: s.files - s.ffree,
    };
  } catch { return undefined; }
}

/** The Summary API's rlimit: the node's process limit and processes now. */
export async function processLimits(): Promise<{ maxpid?: number; curproc?: number }> {
  const max = await readFile('/proc/sys/kernel/pid_max', 'utf8').then((t) => Number(t.trim())).catch(() => undefined);
  const cur = await readdir('/proc').then((l) => l.filter((n) => /^\d+$/.test(n)).length).catch(() => undefined);
  return { ...(max !== undefined ? { maxpid: max } : {}), ...(cur !== undefined ? { curproc: cur } : {}) };
}

export const cpuCount = (): number => Math.max(1, cpus().length);

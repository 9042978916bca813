/**
 * CPU steal on this machine, from /proc/stat: the share of CPU time the hypervisor gave to
 * other guests while our vCPUs wanted to run. A row measured while steal was high ran on a
 * slower machine than its neighbours, so the benches print it next to their figures.
 */
import { readFileSync } from 'node:fs';

export interface CpuTicks {
  steal: number;
  total: number;
}

/** Machine-wide ticks so far (all CPUs); undefined where /proc/stat is missing (not Linux). */
export function cpuTicks(): CpuTicks | undefined {
  let line: string;
  try {
    line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!;
  } catch {
    return undefined;
  }
  // "cpu  user nice system idle iowait irq softirq steal guest guest_nice"
  const f = line.trim().split(/\s+/).slice(1, 9).map(Number);
  if (f.length < 8 || f.some((n) => !Number.isFinite(n))) return undefined;
  return { steal: f[7]!, total: f.reduce((a, b) => a + b, 0) };
}

/** Percent of all CPU time stolen between two samples; undefined if either is missing. */
export function stealPercent(from: CpuTicks | undefined, to: CpuTicks | undefined): number | undefined {
  if (!from || !to || to.total <= from.total) return undefined;
  return (100 * (to.steal - from.steal)) / (to.total - from.total);
}

/** "steal 3.1%" for a row's note, or '' when unknown. */
export function stealNote(pct: number | undefined): string {
  return pct === undefined ? '' : `steal ${pct.toFixed(1)}%`;
}

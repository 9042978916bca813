/**
 * One line about how busy the machine is, for bench output: load average and, on Linux with
 * PSI, the share of the last 60 s in which some runnable task waited for a CPU. Benchmarks run
 * on shared machines; a high figure means the numbers next to it measure contention too.
 */
import { readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';

export function machineLoad(): string {
  let psi = '';
  try {
    const m = /^some avg10=[\d.]+ avg60=([\d.]+)/m.exec(readFileSync('/proc/pressure/cpu', 'utf8'));
    if (m) psi = `, CPU pressure ${Number(m[1]).toFixed(0)}% (PSI some avg60)`;
  } catch { /* no PSI here */ }
  return `${cpus().length} CPUs, load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}${psi}`;
}

/** Total µs in which some task waited for a CPU (PSI), to diff over a window; undefined without PSI. */
export function cpuStallMicros(): number | undefined {
  try {
    const m = /^some .*total=(\d+)/m.exec(readFileSync('/proc/pressure/cpu', 'utf8'));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

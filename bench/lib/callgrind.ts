/**
 * Instruction counts from valgrind's callgrind (Ir: instructions executed), for benchmarks whose
 * figure must not depend on what else the machine runs: CPU steal and frequency change seconds,
 * not instructions. The server runs under `valgrind --tool=callgrind --separate-threads=yes`;
 * the bench zeroes the counters (`callgrind_control --zero`) before a phase and dumps them
 * (`--dump=<phase>`) after it. Each dump writes one file per thread, named
 * `<out>.<part>-<thread>`, whose header names the trigger (`desc: Trigger: dump <phase>`), the
 * thread (`thread: N`, 1 is the main thread) and the total (`summary: <Ir>`).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { closeSync, openSync, readdirSync, readSync } from 'node:fs';
import { join } from 'node:path';

/** The valgrind options the server runs with (`out` is the output file prefix). */
export function callgrindWrapper(out: string): string[] {
  return ['valgrind', '--tool=callgrind', '--separate-threads=yes', '--dump-line=no', '--compress-strings=no', `--callgrind-out-file=${out}`];
}

/** True when valgrind and callgrind_control can run here. */
export function haveCallgrind(): boolean {
  return spawnSync('valgrind', ['--version']).status === 0 && spawnSync('callgrind_control', ['-h']).error === undefined;
}

/** Sends a command to a process running under callgrind: ['--zero'] or ['--dump=<phase>']. */
export function callgrindControl(pid: number, command: string): void {
  execFileSync('callgrind_control', [command, String(pid)], { stdio: 'ignore' });
}

export interface DumpTotals {
  /** Instructions of thread 1 (the main thread). */
  main: number;
  /** Instructions of every thread. */
  all: number;
}

/** The phase name, thread number and total of one callgrind output file (undefined when it has no summary). */
export function parseCallgrindHeader(text: string): { phase: string | undefined; thread: number; total: number } | undefined {
  const summary = /^(?:summary|totals): (\d+)/m.exec(text);
  if (!summary) return undefined;
  const trigger = /^desc: Trigger: dump (.*)$/m.exec(text);
  const thread = /^thread: (\d+)$/m.exec(text);
  return { phase: trigger?.[1]?.trim(), thread: thread ? Number(thread[1]) : 1, total: Number(summary[1]) };
}

/** The first 4 KiB of a file: the header, which ends before the first cost line. */
function readHead(file: string): string {
  const fd = openSync(file, 'r');
  try {
    const buf = Buffer.alloc(4096);
    return buf.toString('utf8', 0, readSync(fd, buf, 0, buf.length, 0));
  } finally {
    closeSync(fd);
  }
}

/** Totals per dumped phase, from the output files in `dir` whose names start with `prefix`. */
export function readDumps(dir: string, prefix: string): Map<string, DumpTotals> {
  const out = new Map<string, DumpTotals>();
  for (const f of readdirSync(dir)) {
    if (!f.startsWith(prefix)) continue;
    const h = parseCallgrindHeader(readHead(join(dir, f)));
    if (!h || h.phase === undefined) continue;
    const t = out.get(h.phase) ?? { main: 0, all: 0 };
    t.all += h.total;
    if (h.thread === 1) t.main += h.total;
    out.set(h.phase, t);
  }
  return out;
}

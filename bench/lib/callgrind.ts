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
import { closeSync, openSync, readdirSync, readFileSync, readSync } from 'node:fs';
import { join } from 'node:path';

/** The valgrind options the server runs with (`out` is the output file prefix). */
export function callgrindWrapper(out: string): string[] {
  return ['valgrind', '--tool=callgrind', '--separate-threads=yes', '--dump-line=no', '--compress-strings=no', `--callgrind-out-file=${out}`];
}

/** True when valgrind and callgrind_control can run here. */
export function haveCallgrind(): boolean {
  return spawnSync('valgrind', ['--version']).status === 0 && spawnSync('callgrind_control', ['-h']).error === undefined;
}

/**
 * Sends a command to a process running under callgrind: '--zero' or '--dump=<phase>'. The
 * process carries it out on its own time; a command sent before it did may replace it, so after
 * a dump wait for its files (waitForDump) before the next command.
 */
export function callgrindControl(pid: number, command: string): void {
  execFileSync('callgrind_control', [command, String(pid)], { stdio: 'ignore' });
}

/** Waits until the dump named `phase` has been written to `dir` (files starting with `prefix`). */
export async function waitForDump(dir: string, prefix: string, phase: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    for (const f of readdirSync(dir)) {
      if (f.startsWith(prefix) && parseCallgrindHeader(readHead(join(dir, f)))?.phase === phase) return;
    }
    if (Date.now() > deadline) throw new Error(`callgrind did not write the dump ${phase} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export interface DumpTotals {
  /** Instructions of thread 1 (the main thread). */
  main: number;
  /** Of `main`, those spent collecting garbage (see gcInstructions). */
  mainGc: number;
  /** Instructions of every thread. */
  all: number;
}

/**
 * V8's entry points for garbage collection on the thread that runs JavaScript: a collection
 * (scavenge, or mark-compact's pause) and a step of incremental marking.
 */
const GC_ENTRY = /^v8::internal::(?:Heap::CollectGarbage|IncrementalMarking::(?:Step|AdvanceOnAllocation))\(/;

/**
 * The instructions a thread's dump (uncompressed names) spent inside GC_ENTRY functions: the
 * inclusive costs of calls into them from functions that are not themselves entry points. How
 * many collections fall into a window is up to the collector, so a figure without them is the
 * steadier measure of the work requests do.
 */
export function gcInstructions(text: string): number {
  let fn = '';
  let callee = '';
  let afterCalls = false;
  let total = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith('fn=')) { fn = line.slice(3); continue; }
    if (line.startsWith('cfn=')) { callee = line.slice(4); continue; }
    if (line.startsWith('calls=')) { afterCalls = true; continue; }
    if (afterCalls && /^[0-9+*-]/.test(line)) {
      afterCalls = false;
      if (GC_ENTRY.test(callee) && !GC_ENTRY.test(fn)) total += Number(line.split(' ')[1] ?? 0);
    }
  }
  return total;
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
    const t = out.get(h.phase) ?? { main: 0, mainGc: 0, all: 0 };
    t.all += h.total;
    if (h.thread === 1) {
      t.main += h.total;
      t.mainGc += gcInstructions(readFileSync(join(dir, f), 'utf8'));
    }
    out.set(h.phase, t);
  }
  return out;
}

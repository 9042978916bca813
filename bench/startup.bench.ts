// Start-up time of the multi-call program: median wall time of `bin/corectl --version` and
// `bin/corectl apiserver --help` (target < 150 ms), next to a bare `node -e 0` for scale.
// Usage: node dist/bench/startup.bench.js [runs]
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { quantile } from './lib/closed-loop.js';

const runs = Math.max(3, Number(process.argv[2] ?? 15) || 15);
const launcher = join(process.cwd(), 'bin', 'corectl');

function timeOnce(cmd: string, args: string[]): number {
  const start = process.hrtime.bigint();
  const r = spawnSync(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${String(r.status)}: ${r.stderr.toString()}`);
  return ms;
}

function summary(samples: number[]): { median: number; min: number; p90: number } {
  samples.sort((a, b) => a - b);
  const at = (q: number): number => quantile(samples, q);
  return { median: at(0.5), min: samples[0] ?? NaN, p90: at(0.9) };
}

function print(label: string, samples: number[]): number {
  const s = summary(samples);
  console.log(`${label.padEnd(40)} median ${s.median.toFixed(1)} ms   min ${s.min.toFixed(1)} ms   p90 ${s.p90.toFixed(1)} ms   (${samples.length} runs)`);
  return s.median;
}

/** Time spent in our code only: import of cli.js plus main(), measured inside a fresh node. */
function inProcess(label: string, argv: string[]): number {
  const cli = pathToFileURL(join(process.cwd(), 'dist', 'src', 'cli.js')).href;
  const script = `const t0 = performance.now(); const { main } = await import(${JSON.stringify(cli)});` +
    `process.stdout.write = () => true; await main(${JSON.stringify(['node', ...argv])});` +
    `process.stderr.write(String(performance.now() - t0));`;
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'ignore', 'pipe'] });
    samples.push(Number(r.stderr.toString()));
  }
  return print(label, samples);
}

/** Children's user+sys CPU per run, from bash's `times`; undefined without bash. */
function cpuPerRun(cmd: string, args: string[]): number | undefined {
  const quoted = [cmd, ...args].map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(' ');
  const r = spawnSync('bash', ['-c', `for i in $(seq ${runs}); do ${quoted} >/dev/null 2>&1; done; times`], { encoding: 'utf8' });
  const lines = (r.stdout ?? '').trim().split('\n');
  const m = /(\d+)m([\d.]+)s\s+(\d+)m([\d.]+)s/.exec(lines[1] ?? '');
  if (r.status !== 0 || !m) return undefined;
  const secs = Number(m[1]) * 60 + Number(m[2]) + Number(m[3]) * 60 + Number(m[4]);
  return (secs * 1000) / runs;
}

function measure(label: string, cmd: string, args: string[]): number {
  timeOnce(cmd, args); // warm the file cache
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) samples.push(timeOnce(cmd, args));
  return print(label, samples);
}

console.log(`node ${process.version}, ${runs} runs each; wall time of the whole process`);
const base = measure('node -e 0 (baseline)', process.execPath, ['-e', '0']);
const version = measure('bin/corectl --version', launcher, ['--version']);
const help = measure('bin/corectl apiserver --help', launcher, ['apiserver', '--help']);
measure('bin/nodeagent --version', join(process.cwd(), 'bin', 'nodeagent'), ['--version']);
console.log(`above the baseline: --version ${(version - base).toFixed(1)} ms, apiserver --help ${(help - base).toFixed(1)} ms`);
console.log('CPU time (user+sys) per run, less sensitive to a busy machine than wall time:');
const cpuBase = cpuPerRun(process.execPath, ['-e', '0']);
const cpuVersion = cpuPerRun(launcher, ['--version']);
const cpuHelp = cpuPerRun(launcher, ['apiserver', '--help']);
if (cpuBase !== undefined && cpuVersion !== undefined && cpuHelp !== undefined) {
  console.log(`  node -e 0 ${cpuBase.toFixed(1)} ms, corectl --version ${cpuVersion.toFixed(1)} ms, corectl apiserver --help ${cpuHelp.toFixed(1)} ms`);
}
console.log('time in our code (import cli.js + main), inside a fresh node:');
inProcess('  corectl --version', ['corectl', '--version']);
inProcess('  corectl apiserver --help', ['corectl', 'apiserver', '--help']);
inProcess('  corectl nodeagent --help', ['corectl', 'nodeagent', '--help']);

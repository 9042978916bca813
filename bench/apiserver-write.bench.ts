/**
 * The API server's write path alone, for profiling and before/after comparisons: a `corectl
 * apiserver` child (LevelDB, durable, TLS+HTTP/2, client-certificate auth as in
 * bench/apiserver.bench.ts) under configmap create at 1 and 50 streams, update (PUT) at 1 and 50,
 * and merge PATCH at 50. Prints one line per row and a final table.
 * Run: node dist/bench/apiserver-write.bench.js   (about 20 s with the default 3 s rows).
 * Environment: WRITEBENCH_ROW_MS (row length), WRITEBENCH_PIN=0 (no taskset pinning),
 * WRITEBENCH_CPU_PROF=<dir> (the child runs with --cpu-prof into <dir>), WRITEBENCH_CLI=<path to
 * a compiled src/cli.js> (compare another build, e.g. a baseline tree), WRITEBENCH_ONLY=<regex> (rows
 * whose "name xN" match, e.g. 'x1$'), WRITEBENCH_NODE_ARGS (extra node options for the child, e.g.
 * '--max-semi-space-size=64'), WRITEBENCH_TIDS=1 (CPU per thread id, not per thread name),
 * WRITEBENCH_UA=<user agent> (e.g. 'kubectl/v1.33.0': managedFields are then recorded per write).
 */
import { readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type * as http2 from 'node:http2';
import { canPin, freePort, makePki, pinSelf, procStat, spawnReady, type BenchPki, type Child } from './lib/children.js';
import { closeSessions, openSessions, percentile, runLoad, send, type LoadResult } from './lib/h2-load.js';
import { stealNote } from './lib/steal.js';
import { scrapeServer, serverNote } from './lib/request-latency.js';
import { apiserverArgs, configMapBody, createBenchNamespace } from './lib/apiserver-child.js';

const ROW_MS = Number(process.env['WRITEBENCH_ROW_MS'] ?? 3000);
const PROF_DIR = process.env['WRITEBENCH_CPU_PROF'];
const CLI = process.env['WRITEBENCH_CLI'] ? resolve(process.env['WRITEBENCH_CLI']) : fileURLToPath(new URL('../src/cli.js', import.meta.url));
/** WRITEBENCH_ONLY=<regex>: run only rows whose "name xN" matches (creates still fill the update set). */
const ONLY = process.env['WRITEBENCH_ONLY'] ? new RegExp(process.env['WRITEBENCH_ONLY']) : undefined;
/** WRITEBENCH_UA=<user agent>: sent with every write, so managedFields are recorded as for kubectl. */
const UA: Record<string, string> = process.env['WRITEBENCH_UA'] ? { 'user-agent': process.env['WRITEBENCH_UA'] } : {};
const JSON_CT = { 'content-type': 'application/json', accept: 'application/json', ...UA };
const MERGE_CT = { 'content-type': 'application/merge-patch+json', accept: 'application/json', ...UA };

const rvOf = (b: Buffer): string => /"resourceVersion":"(\d+)"/.exec(b.toString())?.[1] ?? '';

interface Row { name: string; conc: number; perSec: number; p50: number; p99: number; cpuUs: number; errors: string; steal: string; gc: string }
const rows: Row[] = [];

/** CPU seconds (user + system, or one of them) the child has used so far (NaN where there is none). */
let childPid = 0;
function childCpu(which: 'both' | 'user' | 'sys' = 'both'): number {
  const t = procStat(childPid);
  if (!t) return Number.NaN;
  return which === 'user' ? t.user : which === 'sys' ? t.sys : t.user + t.sys;
}

/** CPU seconds per thread name (main thread, libuv pool, V8 workers, LevelDB's compaction thread). */
function threadCpu(): Map<string, number> {
  const m = new Map<string, number>();
  let tids: string[] = [];
  try { tids = readdirSync(`/proc/${childPid}/task`); } catch { /* the child is gone */ }
  for (const tid of tids) {
    const t = procStat(childPid, tid);
    if (!t) continue;
    const name = t.name + (tid === String(childPid) ? ' (main)' : process.env['WRITEBENCH_TIDS'] ? ` ${tid}` : '');
    m.set(name, (m.get(name) ?? 0) + t.user + t.sys);
  }
  return m;
}

/** Runs one load row and records it with the server CPU it cost per request (robust to a busy machine). */
async function row(name: string, verb: string, conc: number, load: () => Promise<LoadResult>): Promise<void> {
  if (ONLY && !ONLY.test(`${name} x${conc}`)) return;
  const server0 = scrapeSession ? await scrapeServer(scrapeSession, verb, 'configmaps') : undefined;
  const c0 = childCpu();
  const s0 = childCpu('sys');
  const t0 = threadCpu();
  const r = await load();
  const t1 = threadCpu();
  const gc = server0 && scrapeSession ? serverNote(server0, await scrapeServer(scrapeSession, verb, 'configmaps'), 25) : '';
  const per = [...t1].map(([k, v]) => `${k} ${(((v - (t0.get(k) ?? 0)) * 1e6) / Math.max(1, r.ops)).toFixed(0)}`).join(', ');
  process.stderr.write(`  (µs/op by thread: ${per})\n`);
  const cpuUs = ((childCpu() - c0) * 1e6) / Math.max(1, r.ops);
  const sysUs = ((childCpu('sys') - s0) * 1e6) / Math.max(1, r.ops);
  process.stderr.write(`  (system part ${sysUs.toFixed(0)} µs/op)\n`);
  const x = { name, conc, perSec: r.ops / r.seconds, p50: percentile(r.lat, 50), p99: percentile(r.lat, 99), cpuUs, errors: r.errors ? `${r.errors} errors (${r.firstError ?? ''})`.slice(0, 100) : '', steal: stealNote(r.stealPct), gc };
  rows.push(x);
  process.stderr.write(`${name} x${conc}: ${x.perSec.toFixed(0)}/s p50 ${x.p50.toFixed(2)} p99 ${x.p99.toFixed(2)} cpu ${cpuUs.toFixed(0)} µs/op ${x.errors}\n`);
}

async function startApiserver(dir: string, pki: BenchPki, cpu: number | undefined): Promise<{ child: Child; url: string }> {
  const port = await freePort();
  const prof = PROF_DIR ? ['--cpu-prof', `--cpu-prof-dir=${resolve(PROF_DIR)}`] : [];
  const url = `https://127.0.0.1:${port}`;
  const args = apiserverArgs(CLI, dir, pki, port, [...prof, ...(process.env['WRITEBENCH_NODE_ARGS']?.split(' ').filter(Boolean) ?? [])]);
  return { child: await spawnReady(args, cpu, url, pki.client, '/healthz'), url };
}

/** Where row() reads the server's GC histogram (set once the sessions are open). */
let scrapeSession: http2.ClientHttp2Session | undefined;

async function bench(sessions: http2.ClientHttp2Session[]): Promise<void> {
  scrapeSession = sessions[0];
  const path = '/api/v1/namespaces/bench/configmaps';
  const rv = new Map<string, string>();
  await runLoad({
    // 2 000 objects: enough that 50 concurrent updates rarely hit the same name (no conflicts).
    sessions, concurrency: 50, durationMs: 60_000, maxOps: 2000, request: (i) => ({ path, method: 'POST', headers: JSON_CT, body: configMapBody(`warm-${i}`, 'bench', {}) }),
    onResponse: (i, res) => { rv.set(`warm-${i}`, rvOf(res.body)); },
  });
  for (const conc of [1, 50]) {
    await row('create configmap', 'POST', conc, () => runLoad({
      sessions, concurrency: conc, durationMs: ROW_MS,
      request: (i) => ({ path, method: 'POST', headers: JSON_CT, body: configMapBody(`cm-${conc}-${i}`, 'bench', { i: String(i) }) }),
      onResponse: (i, res) => { rv.set(`cm-${conc}-${i}`, rvOf(res.body)); },
    }));
  }
  const names = [...rv.keys()].slice(-2000);
  for (const conc of [1, 50]) {
    await row('update configmap (PUT)', 'PUT', conc, () => runLoad({
      sessions, concurrency: conc, durationMs: ROW_MS,
      request: (i) => {
        const n = names[i % names.length]!;
        // A value no earlier row wrote, so no update is a no-op.
        return { path: `${path}/${n}`, method: 'PUT', headers: JSON_CT, body: configMapBody(n, 'bench', { i: `put${conc}-${i}` }, rv.get(n)) };
      },
      onResponse: (i, res) => { rv.set(names[i % names.length]!, rvOf(res.body)); },
    }));
  }
  await row('merge patch configmap', 'PATCH', 50, () => runLoad({
    sessions, concurrency: 50, durationMs: ROW_MS,
    request: (i) => ({ path: `${path}/${names[i % names.length]!}`, method: 'PATCH', headers: MERGE_CT, body: JSON.stringify({ data: { i: `patch-${i}` } }) }),
  }));
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-writebench-'));
  const pinned = process.env['WRITEBENCH_PIN'] !== '0' && canPin(availableParallelism());
  if (pinned) pinSelf(1);
  const pki = await makePki(dir);
  let api: { child: Child; url: string } | undefined;
  try {
    api = await startApiserver(dir, pki, pinned ? 0 : undefined);
    childPid = api.child.proc.pid ?? 0;
    const sessions = await openSessions(api.url, pki.client, 2);
    await createBenchNamespace(sessions[0]!, 'bench');
    const idle0 = childCpu();
    await new Promise((r) => setTimeout(r, 2000));
    process.stderr.write(`idle server CPU: ${((childCpu() - idle0) / 2 * 100).toFixed(1)} % of a core\n`);
    await bench(sessions);
    closeSessions(sessions);
  } finally {
    if (process.env['WRITEBENCH_STDERR']) process.stderr.write(`--- server stderr (tail) ---\n${api?.child.stderrTail() ?? ''}\n`);
    await api?.child.stop();
    await rm(dir, { recursive: true, force: true });
  }
  console.log(`apiserver write path (${pinned ? 'server pinned to CPU 0' : 'not pinned'}; ${ROW_MS} ms rows; cli ${CLI})`);
  for (const r of rows) {
    console.log(`  ${r.name.padEnd(26)} x${String(r.conc).padEnd(3)} ${r.perSec.toFixed(0).padStart(7)}/s  p50 ${r.p50.toFixed(2).padStart(6)} ms  p99 ${r.p99.toFixed(2).padStart(7)} ms  server CPU ${r.cpuUs.toFixed(0).padStart(5)} µs/op  ${[r.steal, r.gc, r.errors].filter(Boolean).join('  ')}`);
  }
}

await main();

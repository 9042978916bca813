/**
 * What audit costs the read path: three `corectl apiserver` children (LevelDB, TLS+HTTP/2,
 * client certificates) alike but for audit: off, Metadata level to a json log file in batch
 * mode, and the same in blocking mode (every stage of every request: RequestReceived and
 * ResponseComplete). GET of one configmap at 50 streams, the three servers interleaved in short
 * rounds so a slow second of the machine hits all alike. The issue's bar: batch mode keeps
 * ≥ 80 % of the throughput with audit off; blocking mode's share is printed beside it.
 * Run: node dist/bench/apiserver-audit.bench.js   (about 25 s).
 * Environment: AUDITBENCH_ROW_MS (each server's time per round, default 1500), AUDITBENCH_ROUNDS
 * (default 4), AUDITBENCH_PIN=0 (no taskset pinning), AUDITBENCH_CLI=<path to a compiled
 * src/cli.js> (measure another build, e.g. a baseline tree), AUDITBENCH_CPU_PROF=<dir> (V8 CPU
 * profiles of the three servers there, one file per server: where the audit's time goes).
 */
import { mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type * as http2 from 'node:http2';
import { canPin, freePort, makePki, pinSelf, procStat, spawnReady, type BenchPki, type Child } from './lib/children.js';
import { closeSessions, interleave, mergeLoads, openSessions, percentile, runLoad, send, type LoadResult } from './lib/h2-load.js';
import { apiserverArgs, configMapBody, createBenchNamespace } from './lib/apiserver-child.js';

const ROW_MS = Number(process.env['AUDITBENCH_ROW_MS'] ?? 1500);
const ROUNDS = Number(process.env['AUDITBENCH_ROUNDS'] ?? 4);
const CLI = process.env['AUDITBENCH_CLI'] ? resolve(process.env['AUDITBENCH_CLI']) : fileURLToPath(new URL('../src/cli.js', import.meta.url));
const PROF_DIR = process.env['AUDITBENCH_CPU_PROF'];
const JSON_CT = { 'content-type': 'application/json', accept: 'application/json' };
const POLICY = 'apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n';

interface Server { label: string; child: Child; sessions: http2.ClientHttp2Session[]; log?: string }

function cpuOf(child: Child, which: 'both' | 'sys' = 'both'): number {
  const t = child.proc.pid === undefined ? undefined : procStat(child.proc.pid);
  return t ? (which === 'sys' ? t.sys : t.user + t.sys) : Number.NaN;
}

async function start(label: string, base: string, pki: BenchPki, cpu: number | undefined, audit: string[] | undefined): Promise<Server> {
  const dir = join(base, label);
  await mkdir(dir, { recursive: true });
  const port = await freePort();
  const url = `https://127.0.0.1:${port}`;
  const extra: string[] = [];
  let log: string | undefined;
  if (audit) {
    await writeFile(join(dir, 'policy.yaml'), POLICY);
    log = join(dir, 'audit.log');
    extra.push(`--audit-policy-file=${join(dir, 'policy.yaml')}`, `--audit-log-path=${log}`, ...audit);
  }
  const prof = PROF_DIR ? ['--cpu-prof', `--cpu-prof-dir=${resolve(PROF_DIR)}`, `--cpu-prof-name=audit-${label}.cpuprofile`] : [];
  const child = await spawnReady([...apiserverArgs(CLI, dir, pki, port, prof), ...extra], cpu, url, pki.client, '/healthz');
  const sessions = await openSessions(url, pki.client, 2);
  await createBenchNamespace(sessions[0]!, 'bench');
  const made = await runLoad({
    sessions, concurrency: 20, durationMs: 30_000, maxOps: 200,
    request: (i) => ({ path: '/api/v1/namespaces/bench/configmaps', method: 'POST', headers: JSON_CT, body: configMapBody(`cm-${i}`, 'bench', { i: String(i) }) }),
  });
  if (made.errors) throw new Error(`${label}: ${made.errors} creates failed: ${made.firstError ?? ''}`);
  return { label, child, sessions, ...(log ? { log } : {}) };
}

/** Audit events made and events lost (dropped by a full batch buffer or failed writes), from the server's /metrics. */
async function auditCounts(s: Server): Promise<{ events: number; errors: number }> {
  const r = await send(s.sessions[0]!, { path: '/metrics', headers: { accept: 'text/plain' } });
  const text = r.body.toString();
  const sum = (name: string): number => {
    let n = 0;
    for (const line of text.split('\n')) if (line.startsWith(name)) n += Number(line.slice(line.lastIndexOf(' ') + 1)) || 0;
    return n;
  };
  return { events: sum('apiserver_audit_event_total'), errors: sum('apiserver_audit_error_total') };
}

async function main(): Promise<void> {
  const base = await mkdtemp(join(tmpdir(), 'corectl-auditbench-'));
  const pinned = process.env['AUDITBENCH_PIN'] !== '0' && canPin(availableParallelism());
  const cpu = pinned ? 0 : undefined;
  if (pinned) pinSelf(1);
  const pki = await makePki(base);
  const servers: Server[] = [];
  try {
    servers.push(await start('off', base, pki, cpu, undefined));
    servers.push(await start('batch', base, pki, cpu, ['--audit-log-mode=batch']));
    servers.push(await start('blocking', base, pki, cpu, ['--audit-log-mode=blocking']));
    const path = (i: number): string => `/api/v1/namespaces/bench/configmaps/cm-${i % 200}`;
    for (const s of servers) await runLoad({ sessions: s.sessions, concurrency: 50, durationMs: 700, request: (i) => ({ path: path(i), headers: JSON_CT }) });
    const cpu0 = servers.map((s) => cpuOf(s.child));
    const sys0 = servers.map((s) => cpuOf(s.child, 'sys'));
    const results: LoadResult[] = await interleave(ROUNDS,
      servers.map((s) => () => runLoad({ sessions: s.sessions, concurrency: 50, durationMs: ROW_MS, request: (i) => ({ path: path(i), headers: JSON_CT }) })),
      mergeLoads);
    const rate = results.map((r) => r.ops / r.seconds);
    const cpuPer = servers.map((s, i) => (1e6 * (cpuOf(s.child) - cpu0[i]!)) / results[i]!.ops);
    const sysPer = servers.map((s, i) => (1e6 * (cpuOf(s.child, 'sys') - sys0[i]!)) / results[i]!.ops);
    console.log(`apiserver GET with audit (Metadata level, json log, every stage; ${pinned ? 'servers pinned to CPU 0' : 'not pinned'}; ${ROUNDS} interleaved rounds of ${ROW_MS} ms)`);
    for (let i = 0; i < servers.length; i++) {
      const s = servers[i]!;
      const r = results[i]!;
      const share = i === 0 ? '' : ` = ${(100 * rate[i]! / rate[0]!).toFixed(1)}% of audit off`;
      const size = s.log ? `; log ${((await stat(s.log)).size / 1048576).toFixed(1)} MiB` : '';
      // A batch buffer that drops events would flatter the throughput: the bench says so.
      const counts = s.log ? await auditCounts(s).catch((e: Error) => e) : undefined;
      const lost = counts instanceof Error ? `; events not counted (${counts.message})` : counts ? `; ${counts.events} events, ${counts.errors} lost` : '';
      console.log(`  GET x50 audit ${s.label}: ${rate[i]!.toFixed(0)}/s${share}; p50 ${percentile(r.lat, 50).toFixed(2)} p99 ${percentile(r.lat, 99).toFixed(2)} ms; server CPU ${cpuPer[i]!.toFixed(1)} µs per request (system ${sysPer[i]!.toFixed(1)})${r.errors ? `; ${r.errors} errors` : ''}${size}${lost}`);
    }
    const batchShare = rate[1]! / rate[0]!;
    console.log(`  batch mode keeps ${(100 * batchShare).toFixed(1)}% of the throughput (bar: ≥ 80%): ${batchShare >= 0.8 ? 'met' : 'NOT met'}; blocking mode ${(100 * rate[2]! / rate[0]!).toFixed(1)}%`);
    // Steadier than throughput when other work loads the machine: what a saturated server keeps, from its CPU per request.
    console.log(`  by server CPU per request (a saturated server's share): batch ${(100 * cpuPer[0]! / cpuPer[1]!).toFixed(1)}%, blocking ${(100 * cpuPer[0]! / cpuPer[2]!).toFixed(1)}%`);
  } finally {
    for (const s of servers) { closeSessions(s.sessions); await s.child.stop(); }
    await rm(base, { recursive: true, force: true });
  }
}

await main();

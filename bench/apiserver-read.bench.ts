/**
 * The API server's read path alone, for profiling and before/after comparisons: a `corectl
 * apiserver` child (LevelDB, TLS+HTTP/2, client-certificate auth as in bench/apiserver.bench.ts)
 * and bare node:http2 servers in the same run. Rows: bare GET and configmap GET at 50 streams
 * (alternated), the same two from h2load when it is installed (bench/lib/h2load.ts), GET at
 * 1 stream, whole LISTs of N pods (JSON and protobuf; 1 % of the pods patched before each list,
 * timed to the response headers and to the last byte, the first list on its own:
 * bench/lib/list-load.ts) and limit=500 pages, and watch delivery lag for W watchers × 100 creates/s against
 * a bare fan-out server (bench/fixtures/bare-watch-server.ts) and the API server. Each row also
 * gives the servers' CPU time per operation (from /proc), which is steadier than throughput when
 * other work loads the machine.
 * Run: node dist/bench/apiserver-read.bench.js   (about 40 s with the defaults).
 * Environment: READBENCH_ROW_MS (GET row length, default 3000), READBENCH_PODS (default 10000),
 * READBENCH_WATCHERS (default 1000; 0 skips the watch row), READBENCH_PIN=0 (no taskset pinning),
 * READBENCH_CPU_PROF=<dir> (the apiserver child runs with --cpu-prof into <dir>),
 * READBENCH_CLI=<path to a compiled src/cli.js> (compare another build, e.g. a baseline tree),
 * READBENCH_ONLY=get,list,watch (a subset of the rows),
 * READBENCH_APISERVER_ARGS='--opt=v ...' (more API server options, e.g. other authenticators).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type * as http2 from 'node:http2';
import { canPin, freePort, makePki, pinSelf, procStat, spawnReady, type BenchPki, type Child } from './lib/children.js';
import { closeSessions, openSessions, percentile, runLoad, send } from './lib/h2-load.js';
import { cpuTicks, stealNote, stealPercent } from './lib/steal.js';
import { openWatchersInWorker } from './lib/watch-worker.js';
import { measureLists, pagePasses } from './lib/list-load.js';
import { apiserverArgs, configMapBody, createBenchNamespace, podBody } from './lib/apiserver-child.js';
import { h2loadAvailable, runH2load } from './lib/h2load.js';
import { latencyNote, scrapeLatency } from './lib/request-latency.js';
import { clientGc, gcNote, scrapeGc } from './lib/gc-metrics.js';

const ROW_MS = Number(process.env['READBENCH_ROW_MS'] ?? 3000);
const PODS = Number(process.env['READBENCH_PODS'] ?? 10_000);
/** Whole LISTs after the first, per encoding (1 % of the pods patched before each). */
const LISTS = 20;
/** Passes over all pods in limit=500 pages (as bench/apiserver.bench.ts). */
const PAGE_PASSES = 25;
const WATCHERS = Number(process.env['READBENCH_WATCHERS'] ?? 1000);
const PROF_DIR = process.env['READBENCH_CPU_PROF'];
const ONLY = new Set((process.env['READBENCH_ONLY'] ?? 'get,list,watch').split(','));
const EXTRA_ARGS = (process.env['READBENCH_APISERVER_ARGS'] ?? '').split(/\s+/).filter(Boolean);
const CLI = process.env['READBENCH_CLI'] ? resolve(process.env['READBENCH_CLI']) : fileURLToPath(new URL('../src/cli.js', import.meta.url));
const JSON_CT = { 'content-type': 'application/json', accept: 'application/json' };

/** CPU seconds (user + system) a child has used so far (NaN where unavailable). */
function cpuOf(child: Child): number {
  const t = child.proc.pid === undefined ? undefined : procStat(child.proc.pid);
  return t ? t.user + t.sys : Number.NaN;
}

let apiChild: Child | undefined;
/** Runs `fn` and returns the CPU seconds `child` spent meanwhile. */
async function cpuDuring<T>(child: Child | undefined, fn: () => Promise<T>): Promise<[T, number]> {
  const c0 = child ? cpuOf(child) : Number.NaN;
  const r = await fn();
  return [r, child ? cpuOf(child) - c0 : Number.NaN];
}

const lines: string[] = [];
/** Each line ends with the CPU steal since the previous line: the window its figures come from. */
let ticksAtLastLine = cpuTicks();
function out(s: string): void {
  const now = cpuTicks();
  const steal = stealNote(stealPercent(ticksAtLastLine, now));
  ticksAtLastLine = now;
  if (steal) s = `${s} [${steal}]`;
  lines.push(s);
  process.stderr.write(`${s}\n`);
}
const f = (n: number): string => n.toFixed(2);

/** The bearer token the h2load rows use (h2load has no client certificates). */
const BENCH_TOKEN = 'read-bench-token';

async function benchGet(api: http2.ClientHttp2Session[], bare: http2.ClientHttp2Session[], bareChild: Child, urls: { bare: string; api: string; clientCpu: number | undefined }): Promise<void> {
  const path = '/api/v1/namespaces/bench/configmaps';
  const names: string[] = [];
  await runLoad({
    sessions: api, concurrency: 50, durationMs: 60_000, maxOps: 2000,
    request: (i) => ({ path, method: 'POST', headers: JSON_CT, body: configMapBody(`cm-${i}`, 'bench', { i: String(i) }) }),
    onResponse: (i) => { names.push(`cm-${i}`); },
  });
  const warm = (s: http2.ClientHttp2Session[], p: (i: number) => string): Promise<unknown> => runLoad({ sessions: s, concurrency: 50, durationMs: 500, request: (i) => ({ path: p(i) }) });
  await warm(bare, () => '/x');
  await warm(api, (i) => `${path}/${names[i % names.length]}`);
  // Alternate bare and apiserver rows so a burst of load from other work hits both alike.
  let bareOps = 0;
  let apiOps = 0;
  let bareN = 0;
  let apiN = 0;
  let bareCpu = 0;
  let apiCpu = 0;
  const apiLat: number[] = [];
  for (let round = 0; round < 2; round++) {
    const [b, bc] = await cpuDuring(bareChild, () => runLoad({ sessions: bare, concurrency: 50, durationMs: ROW_MS / 2, request: () => ({ path: '/api/v1/namespaces/bench/configmaps/x' }) }));
    bareOps += b.ops / b.seconds / 2;
    bareN += b.ops;
    bareCpu += bc;
    const [a, ac] = await cpuDuring(apiChild, () => runLoad({ sessions: api, concurrency: 50, durationMs: ROW_MS / 2, request: (i) => ({ path: `${path}/${names[i % names.length]}`, headers: JSON_CT }) }));
    apiOps += a.ops / a.seconds / 2;
    apiN += a.ops;
    apiCpu += ac;
    for (const x of a.lat) apiLat.push(x);
    if (a.errors) out(`  get errors: ${a.errors} ${a.firstError ?? ''}`);
  }
  const l = Float64Array.from(apiLat);
  const us = (cpu: number, n: number): string => (1e6 * cpu / n).toFixed(1);
  out(`GET x50: bare ${bareOps.toFixed(0)}/s, apiserver ${apiOps.toFixed(0)}/s = ${(100 * apiOps / bareOps).toFixed(1)}%; p50 ${f(percentile(l, 50))} p99 ${f(percentile(l, 99))} ms; server CPU per request: bare ${us(bareCpu, bareN)} µs, apiserver ${us(apiCpu, apiN)} µs (= ${(100 * (bareCpu / bareN) / (apiCpu / apiN)).toFixed(1)}% of bare's rate per core)`);
  if (h2loadAvailable()) {
    // The same GETs from h2load (a C client: the servers, not the client, are the limit).
    const hb = await cpuDuring(bareChild, async () => runH2load(`${urls.bare}/api/v1/namespaces/bench/configmaps/x`, { streams: 50, seconds: 3, cpu: urls.clientCpu }));
    const served0 = await scrapeLatency(api[0]!, 'GET', 'configmaps');
    const ha = await cpuDuring(apiChild, async () => runH2load(`${urls.api}${path}/${names[0]}`, { streams: 50, seconds: 3, cpu: urls.clientCpu, headers: { authorization: `Bearer ${BENCH_TOKEN}`, accept: 'application/json' } }));
    const served1 = await scrapeLatency(api[0]!, 'GET', 'configmaps');
    const [b, bc] = hb;
    const [a, ac] = ha;
    if (a.ok !== a.total) out(`  h2load: ${a.total - a.ok} of ${a.total} apiserver GETs were not 2xx`);
    // h2load's -D counts the measured seconds only; CPU is over the warm-up second too.
    out(`GET x50 (h2load, bearer token): bare ${b.rps.toFixed(0)}/s, apiserver ${a.rps.toFixed(0)}/s = ${(100 * a.rps / b.rps).toFixed(1)}%; apiserver p50 ${f(percentile(a.lat, 50))} p99 ${f(percentile(a.lat, 99))} ms (bare p99 ${f(percentile(b.lat, 99))} ms); ${latencyNote(served0, served1, 5)}; server CPU per request: bare ${(1e6 * bc / (b.rps * 4)).toFixed(1)} µs, apiserver ${(1e6 * ac / (a.rps * 4)).toFixed(1)} µs`);
    // At an offered 5 000 GETs/s (the rate of the Kubernetes figure the issue quotes: p99
    // 12–20 ms for cached GETs at 5k QPS): latency with the server below saturation.
    const r5 = await runH2load(`${urls.api}${path}/${names[0]}`, { streams: 50, seconds: 3, rps: 5000, cpu: urls.clientCpu, headers: { authorization: `Bearer ${BENCH_TOKEN}`, accept: 'application/json' } });
    const served5 = await scrapeLatency(api[0]!, 'GET', 'configmaps');
    const b5 = await runH2load(`${urls.bare}/api/v1/namespaces/bench/configmaps/x`, { streams: 50, seconds: 3, rps: 5000, cpu: urls.clientCpu });
    out(`GET at 5000/s offered (h2load --rps, up to 50 streams): apiserver ${r5.rps.toFixed(0)}/s p50 ${f(percentile(r5.lat, 50))} p99 ${f(percentile(r5.lat, 99))} ms (${latencyNote(served1, served5, 5)}); bare p50 ${f(percentile(b5.lat, 50))} p99 ${f(percentile(b5.lat, 99))} ms`);
  } else {
    out('GET x50 (h2load): h2load not installed (Debian nghttp2-client), row skipped');
  }
  const one = await runLoad({ sessions: api, concurrency: 1, durationMs: ROW_MS / 2, request: (i) => ({ path: `${path}/${names[i % names.length]}`, headers: JSON_CT }) });
  out(`GET x1: apiserver ${(one.ops / one.seconds).toFixed(0)}/s p50 ${f(percentile(one.lat, 50))} p99 ${f(percentile(one.lat, 99))} ms`);
}

async function benchList(api: http2.ClientHttp2Session[]): Promise<void> {
  const r = await runLoad({
    sessions: api, concurrency: 64, durationMs: 120_000, maxOps: PODS,
    request: (i) => ({ path: '/api/v1/namespaces/bench/pods', method: 'POST', headers: JSON_CT, body: podBody(`pod-${String(i).padStart(6, '0')}`) }),
  });
  if (r.errors) out(`  pod create errors: ${r.errors} ${r.firstError ?? ''}`);
  const s = api[0]!;
  const names = Array.from({ length: r.ops }, (_, i) => `pod-${String(i).padStart(6, '0')}`);
  for (const [label, accept] of [['JSON', 'application/json'], ['protobuf', 'application/vnd.kubernetes.protobuf']] as const) {
    const m0 = await scrapeLatency(s, 'LIST', 'pods'); // the server's own LIST durations
    const child = apiChild;
    const l = await measureLists({ sessions: api, path: '/api/v1/namespaces/bench/pods', accept, lists: LISTS, names, ...(child ? { cpu: () => cpuOf(child) } : {}) });
    const m1 = await scrapeLatency(s, 'LIST', 'pods');
    const serverMs = (1000 * (m1.sum - m0.sum)) / Math.max(1, m1.count - m0.count);
    out(`LIST ${r.ops} pods (${label}, whole; ${l.churn} pods patched before each of ${LISTS} lists): server time (to headers) p50 ${f(percentile(l.headers, 50))} p99 ${f(percentile(l.headers, 99))} ms; ` +
      `to the last byte p50 ${f(percentile(l.total, 50))} p99 ${f(percentile(l.total, 99))} ms, ${(l.bytes / 1048576).toFixed(1)} MiB; ` +
      `server's own mean ${f(serverMs)} ms, server CPU ${f(l.listCpuMs)} ms per later list; first list ${f(l.first.headersMs)} / ${f(l.first.totalMs)} ms`);
  }
  const pc0 = apiChild ? cpuOf(apiChild) : Number.NaN;
  const gc0 = await scrapeGc(s);
  const lat0 = await scrapeLatency(s, 'LIST', 'pods');
  const client0 = clientGc();
  // Each page's position in its pass tells the first pages' cost from the rest.
  const { ms: pages, pos: pagePos } = await pagePasses(s, '/api/v1/namespaces/bench/pods', { limit: 500, passes: PAGE_PASSES });
  const pl = Float64Array.from(pages);
  const pcpu = apiChild ? (1000 * (cpuOf(apiChild) - pc0)) / pl.length : Number.NaN;
  const gc = [latencyNote(lat0, await scrapeLatency(s, 'LIST', 'pods'), 5), gcNote(gc0, await scrapeGc(s)), gcNote(client0, clientGc()).replace(/^GC /, 'client GC ')].filter(Boolean).join('; ');
  const slowest = pages.map((ms, i) => [ms, pagePos[i]!] as const).sort((a, b) => b[0] - a[0]).slice(0, 5).map(([ms, pos]) => `${f(ms)} (page ${pos})`).join(', ');
  out(`LIST limit=500 pages: ${pl.length} pages over ${PAGE_PASSES} passes p50 ${f(percentile(pl, 50))} p99 ${f(percentile(pl, 99))} ms; server CPU ${f(pcpu)} ms per page; slowest ${slowest}; ${gc}`);
}

/** Watch fan-out lag from the write's ack to each receipt; `label` names the server in the output line. */
async function benchWatch(label: string, child: Child | undefined, url: string, tls: BenchPki['client'], ns: string, watchers: number, perSec: number, seconds: number): Promise<void> {
  const total = perSec * seconds;
  const writer = (await openSessions(url, tls, 1))[0]!;
  // The watchers run in a worker thread with a heap of their own (bench/lib/watch-worker.ts).
  const fleet = await openWatchersInWorker(url, tls, `/api/v1/namespaces/${ns}/configmaps?watch=1`, watchers, total, Math.ceil(watchers / 250));
  try {
    const ackAt = new Float64Array(total);
    const writes: Promise<void>[] = [];
    const c0 = child ? cpuOf(child) : Number.NaN;
    let errors = 0;
    const start = performance.now();
    for (let k = 0; k < total; k++) {
      const wait = start + (k * 1000) / perSec - performance.now();
      if (wait > 1) await new Promise((r) => setTimeout(r, wait));
      writes.push(send(writer, { path: `/api/v1/namespaces/${ns}/configmaps`, method: 'POST', headers: JSON_CT, body: configMapBody(`w-${k}`, ns, { seq: String(k) }) })
        .then((res) => { ackAt[k] = performance.now(); if (res.status !== 201) errors++; }, () => { errors++; }));
    }
    await Promise.all(writes);
    const want = watchers * total;
    const deadline = performance.now() + 15_000;
    while (fleet.receipts.count < want && performance.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    const cpu = child ? cpuOf(child) - c0 : Number.NaN;
    const lag: number[] = [];
    for (let i = 0; i < fleet.receipts.count; i++) {
      const k = fleet.receipts.seq[i]!;
      if (k >= 0 && k < total && ackAt[k]! > 0) lag.push(fleet.receipts.at[i]! - ackAt[k]!);
    }
    const a = Float64Array.from(lag);
    out(`WATCH ${label} ${watchers} × ${perSec}/s: ${fleet.receipts.count}/${want} received, lag from ack p50 ${f(percentile(a, 50))} p99 ${f(percentile(a, 99))} ms; server CPU ${f(1e6 * cpu / Math.max(1, fleet.receipts.count))} µs per delivery${errors ? `, ${errors} write errors` : ''}`);
  } finally {
    await fleet.close();
    closeSessions([writer]);
  }
}

async function bareWatch(pki: BenchPki, cpu: number | undefined): Promise<void> {
  const port = await freePort();
  const url = `https://127.0.0.1:${port}`;
  const script = fileURLToPath(new URL('./fixtures/bare-watch-server.js', import.meta.url));
  const child = await spawnReady([script, String(port), pki.certFile, pki.keyFile], cpu, url, { ca: pki.client.ca } as BenchPki['client'], '/healthz');
  try {
    await benchWatch('bare', child, url, { ca: pki.client.ca } as BenchPki['client'], 'bare', WATCHERS, 100, 5);
  } finally {
    await child.stop();
  }
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-readbench-'));
  const pinned = process.env['READBENCH_PIN'] !== '0' && canPin(availableParallelism());
  const cpu = pinned ? 0 : undefined;
  if (pinned) pinSelf(1);
  const pki = await makePki(dir);
  let bare: Child | undefined;
  let api: Child | undefined;
  try {
    const barePort = await freePort();
    const bareUrl = `https://127.0.0.1:${barePort}`;
    if (ONLY.has('get')) {
      const script = fileURLToPath(new URL('./fixtures/bare-h2-server.js', import.meta.url));
      bare = await spawnReady([script, String(barePort), pki.certFile, pki.keyFile], cpu, bareUrl, { ca: pki.client.ca } as BenchPki['client'], '/');
    }
    const port = await freePort();
    const url = `https://127.0.0.1:${port}`;
    const prof = PROF_DIR ? ['--cpu-prof', `--cpu-prof-dir=${resolve(PROF_DIR)}`] : [];
    const tokens = join(dir, 'tokens.csv');
    await writeFile(tokens, `${BENCH_TOKEN},bench-admin,bench-admin,"system:masters"\n`);
    api = await spawnReady([...apiserverArgs(CLI, dir, pki, port, prof), `--token-auth-file=${tokens}`, ...EXTRA_ARGS], cpu, url, pki.client, '/healthz');
    apiChild = api;
    const sessions = await openSessions(url, pki.client, 2);
    for (const ns of ['bench', `watch-${WATCHERS}`]) {
      await createBenchNamespace(sessions[0]!, ns);
    }
    if (bare) {
      const bs = await openSessions(bareUrl, { ca: pki.client.ca }, 1);
      await benchGet(sessions, bs, bare, { bare: bareUrl, api: url, clientCpu: pinned ? 1 : undefined });
      closeSessions(bs);
      await bare.stop();
      bare = undefined;
    }
    if (ONLY.has('list')) await benchList(sessions);
    if (ONLY.has('watch') && WATCHERS > 0) {
      await bareWatch(pki, cpu);
      await benchWatch('apiserver', apiChild, url, pki.client, `watch-${WATCHERS}`, WATCHERS, 100, 5);
    }
    closeSessions(sessions);
  } finally {
    await bare?.stop();
    await api?.stop();
    await rm(dir, { recursive: true, force: true });
  }
  console.log(`apiserver read path (${pinned ? 'servers pinned to CPU 0' : 'not pinned'}; cli ${CLI})`);
  for (const l of lines) console.log(`  ${l}`);
}

await main();

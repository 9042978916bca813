/**
 * Issue 6's benchmark: time from creating a 1000-replica Deployment to 1000 pods bound
 * (spec.nodeName set), with the API server, controller manager and scheduler each running as a
 * `corectl <daemon>` child process on loopback, 100 Ready nodes (created up front, no node
 * agent), `--leader-elect=false`.
 *
 * Two runs, each on a fresh API server:
 *  (a) reference client defaults for the controller manager and scheduler (--core-api-qps=20
 *      --core-api-burst=30): aim ≤ 60 s; the client-rate floor is ≈ 49 s ((1000 − 30)/20);
 *  (b) client limits lifted (--core-api-qps=-1, unlimited): aim ≤ 5 s.
 * Each run times out after RUN_TIMEOUT_MS and then reports "not reached" with the count so far.
 * Also prints API requests per pod from the API server's apiserver_request_total counter
 * (snapshot just before the Deployment is created and once all pods are bound), with the top
 * verb/resource rows.
 *
 * Run: node dist/bench/deployment.bench.js [a|b|c|...]   (default ab; ~1.5–2.5 min in total;
 *      c = (b) with the API server's in-flight limits off, a diagnostic)
 *      BENCH_DEBUG=1 shows the daemons' logs; BENCH_PROFILE_DIR=<dir> writes the API server's
 *      V8 CPU profile (.cpuprofile) there.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { KubeObject } from '../src/api/resources/types.js';
import { loadCoreconfig } from '../src/client/coreconfig.js';
import { RestClient, type ResourceRef } from '../src/client/rest-client.js';
import { Http2Transport, readBody } from '../src/client/transport.js';
import { cpuSeconds, createBenchPki, freePort, httpStatus, spawnDaemon, until, type Daemon } from './lib-cluster/processes.js';
import { diffCounts, groupCounts, scrapeRequestTotals } from './lib-cluster/request-metrics.js';

const NODE_COUNT = 100;
const REPLICAS = 1000;
const RUN_TIMEOUT_MS = 150_000;
const NODES: ResourceRef = { group: '', version: 'v1', resource: 'nodes' };
const PODS: ResourceRef = { group: '', version: 'v1', resource: 'pods', namespace: 'default' };
const DEPLOYMENTS: ResourceRef = { group: 'apps', version: 'v1', resource: 'deployments', namespace: 'default' };
// This file is <dist>/bench/deployment.bench.js; the daemons run from the same <dist>.
const CLI = fileURLToPath(new URL('../src/cli.js', import.meta.url));
const verbose = Boolean(process.env['BENCH_DEBUG']);
// Diagnostic: BENCH_PROFILE_DIR=/some/dir writes a V8 CPU profile of each API server run there.
const profileDir = process.env['BENCH_PROFILE_DIR'] || undefined;

interface RunSpec { label: string; clientArgs: string[]; apiserverArgs?: string[]; aimS: number }

interface RunResult {
  label: string;
  reached: boolean;
  seconds: number;
  bound: number;
  created: number;
  firstBoundS: number | undefined;
  halfBoundS: number | undefined;
  requests: Array<[string, number]>;
  aimS: number;
  /** CPU seconds each process used during the measured window. */
  cpu: Array<[string, number | undefined]>;
  /** Event objects stored by the end, by "component reason": [objects, sum of their counts]. */
  events: Array<[string, number, number]>;
}

function nodeObject(i: number): { obj: KubeObject; status: unknown } {
  const name = `bench-node-${String(i).padStart(3, '0')}`;
  const capacity = { cpu: '32', memory: '64Gi', pods: '110', 'ephemeral-storage': '100Gi' };
  return {
    obj: { apiVersion: 'v1', kind: 'Node', metadata: { name, labels: { 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux' } }, spec: {} },
    status: {
      capacity, allocatable: capacity,
      conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'bench node', lastHeartbeatTime: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z') }],
      addresses: [{ type: 'InternalIP', address: `10.0.${Math.floor(i / 250)}.${(i % 250) + 1}` }, { type: 'Hostname', address: name }],
      nodeInfo: { kubeletVersion: 'v1.33.0', operatingSystem: 'linux', architecture: 'amd64' },
    },
  };
}

function deployment(): KubeObject {
  const labels = { app: 'bench' };
  return {
    apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'bench', namespace: 'default' },
    spec: {
      replicas: REPLICAS, selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          terminationGracePeriodSeconds: 0,
          containers: [{ name: 'sleep', image: 'busybox:1.36', command: ['sleep', '3600'], resources: { requests: { cpu: '10m', memory: '16Mi' } } }],
        },
      },
    },
  } as KubeObject;
}

async function inBatches<T>(items: T[], width: number, f: (x: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < items.length) await f(items[next++] as T);
  }));
}

/** Follows pods with a watch from `rv`, counting those with spec.nodeName, until `want` or abort. */
async function followBinding(client: RestClient, rv: string, want: number, signal: AbortSignal, t0: () => number | undefined,
  progress: { created: Set<string>; bound: Set<string>; firstBoundAt?: number; halfBoundAt?: number }): Promise<number | undefined> {
  let resourceVersion = rv;
  let backoff = 100;
  while (!signal.aborted) {
    try {
      const events = await client.watch(PODS, { resourceVersion, allowWatchBookmarks: true, signal });
      for await (const ev of events) {
        const p = ev.object as KubeObject & { spec?: { nodeName?: string } };
        if (p.metadata?.resourceVersion) resourceVersion = p.metadata.resourceVersion;
        const name = p.metadata?.name ?? '';
        if (ev.type === 'BOOKMARK' || !name) continue;
        if (ev.type === 'DELETED') { progress.created.delete(name); progress.bound.delete(name); continue; }
        progress.created.add(name);
        if (p.spec?.nodeName && !progress.bound.has(name)) {
          progress.bound.add(name);
          const start = t0();
          if (start !== undefined) {
            if (progress.bound.size === 1) progress.firstBoundAt = performance.now() - start;
            if (progress.bound.size === want / 2) progress.halfBoundAt = performance.now() - start;
          }
          if (progress.bound.size >= want) return performance.now();
        }
      }
      // The server ended the stream (e.g. its watch timeout): resume from the last version seen.
      backoff = 100;
      await new Promise((r) => setTimeout(r, 50));
    } catch (e) {
      if (signal.aborted) break;
      if (verbose) console.error('watch failed, re-listing:', (e as Error).message);
      await new Promise((r) => setTimeout(r, backoff));
      backoff = Math.min(backoff * 2, 2000);
      // Start over from a fresh list (covers 410 Gone and a dropped stream).
      const list = await client.list(PODS, {}).catch(() => undefined);
      if (list) {
        resourceVersion = list.metadata?.resourceVersion ?? resourceVersion;
        progress.created.clear(); progress.bound.clear();
        for (const p of list.items as Array<KubeObject & { spec?: { nodeName?: string } }>) {
          progress.created.add(p.metadata?.name ?? '');
          if (p.spec?.nodeName) progress.bound.add(p.metadata?.name ?? '');
        }
        if (progress.bound.size >= want) return performance.now();
      }
    }
  }
  return undefined;
}

/** Events in `default` grouped by reporting component and reason (who spends requests on events). */
async function eventsBySource(client: RestClient): Promise<Array<[string, number, number]>> {
  const list = await client.list({ group: '', version: 'v1', resource: 'events', namespace: 'default' }, {});
  const m = new Map<string, [number, number]>();
  for (const e of list.items as Array<KubeObject & { source?: { component?: string }; reportingComponent?: string; reason?: string; count?: number }>) {
    const key = `${e.source?.component || e.reportingComponent || '?'} ${e.reason ?? '?'}`;
    const cur = m.get(key) ?? [0, 0];
    m.set(key, [cur[0] + 1, cur[1] + (e.count ?? 1)]);
  }
  return [...m].map(([k, [n, c]]): [string, number, number] => [k, n, c]).sort((a, b) => b[1] - a[1]);
}

async function runOnce(spec: RunSpec): Promise<RunResult> {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-bench-deploy-'));
  const daemons: Daemon[] = [];
  let client: RestClient | undefined;
  let transport: Http2Transport | undefined;
  let stopTimers: (() => void) | undefined;
  try {
    const pki = await createBenchPki(dir);
    const apiPort = await freePort();
    const server = `https://127.0.0.1:${apiPort}`;
    const [adminCfg, cmCfg, schedCfg] = await Promise.all([
      pki.coreconfig('bench-admin', server), pki.coreconfig('system:kube-controller-manager', server), pki.coreconfig('system:kube-scheduler', server),
    ]);
    const api = spawnDaemon(CLI, 'apiserver', [
      '--bind-address=127.0.0.1', `--secure-port=${apiPort}`, `--tls-cert-file=${pki.servingCertFile}`, `--tls-private-key-file=${pki.servingKeyFile}`,
      `--client-ca-file=${pki.caFile}`, `--data-dir=${join(dir, 'data')}`, `--cert-dir=${join(dir, 'certs')}`,
      ...(spec.apiserverArgs ?? []),
    ], { verbose, ...(profileDir ? { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] } : {}) });
    daemons.push(api);
    const conn = await loadCoreconfig({ path: adminCfg });
    transport = new Http2Transport(conn, { pingIntervalMs: 0 });
    const tr = transport;
    await until('apiserver /readyz', async () => {
      const res = await tr.request({ method: 'GET', path: '/readyz', signal: AbortSignal.timeout(2000) });
      await readBody(res.body);
      return res.status === 200 ? true : undefined;
    }, 30_000, daemons);
    client = new RestClient({ connection: conn, qps: 0, contentType: 'application/json' });
    const c = client;
    await until('namespace default', async () => (await c.get({ group: '', version: 'v1', resource: 'namespaces' }, 'default')) ? true : undefined, 30_000, daemons);

    const tNodes = performance.now();
    await inBatches(Array.from({ length: NODE_COUNT }, (_, i) => i), 16, async (i) => {
      const { obj, status } = nodeObject(i);
      await c.create(NODES, obj);
      await c.patch(NODES, obj.metadata?.name ?? '', 'merge', { status }, { subresource: 'status' });
    });
    const nodesS = (performance.now() - tNodes) / 1000;

    const cmPort = await freePort();
    const schedPort = await freePort();
    const common = ['--leader-elect=false', '--secure-port=0', ...spec.clientArgs];
    const cm = spawnDaemon(CLI, 'controller-manager', [`--coreconfig=${cmCfg}`, '--address=127.0.0.1', `--port=${cmPort}`, ...common], { verbose });
    const sched = spawnDaemon(CLI, 'scheduler', [`--coreconfig=${schedCfg}`, '--bind-address=127.0.0.1', `--port=${schedPort}`, ...common], { verbose });
    daemons.push(cm, sched);
    const tUp = performance.now();
    await until('controller-manager /healthz', async () => (await httpStatus(cmPort, '/healthz')) === 200 ? true : undefined, 30_000, daemons);
    await until('scheduler /readyz', async () => (await httpStatus(schedPort, '/readyz')) === 200 ? true : undefined, 30_000, daemons);
    // Pods need their namespace's `default` service account (ServiceAccount admission), which
    // the controller manager's serviceaccount controller makes: wait for it, as a cluster has it.
    await until('serviceaccount default/default', async () => (await c.get({ group: '', version: 'v1', resource: 'serviceaccounts', namespace: 'default' }, 'default').catch(() => undefined)) ? true : undefined, 30_000, daemons);
    const upS = (performance.now() - tUp) / 1000;
    console.log(`  [${spec.label}] setup: ${NODE_COUNT} nodes in ${nodesS.toFixed(1)} s; controller manager + scheduler ready in ${upS.toFixed(1)} s`);

    const initial = await c.list(PODS, {});
    const before = await scrapeRequestTotals(tr);
    const ac = new AbortController();
    const timer = setTimeout(() => ac.abort(), RUN_TIMEOUT_MS);
    const progress: { created: Set<string>; bound: Set<string>; firstBoundAt?: number; halfBoundAt?: number } = { created: new Set(), bound: new Set() };
    let t0: number | undefined;
    const done = followBinding(c, initial.metadata?.resourceVersion ?? '0', REPLICAS, ac.signal, () => t0, progress);
    // Progress line every 10 s so a slow run shows where it stands; a daemon that died ends the run.
    let died: string | undefined;
    const ticker = setInterval(() => {
      const dead = daemons.find((d) => d.child.exitCode !== null || d.child.signalCode !== null);
      if (dead && !died) { died = `${dead.name} exited (${dead.child.exitCode ?? dead.child.signalCode})\n${dead.stderr()}`; ac.abort(); }
      if (t0 !== undefined) console.log(`  [${spec.label}] ${((performance.now() - t0) / 1000).toFixed(0)} s: ${progress.created.size} pods created, ${progress.bound.size} bound`);
    }, 10_000);
    stopTimers = () => { clearTimeout(timer); clearInterval(ticker); ac.abort(); };
    const cpuBefore = await Promise.all(daemons.map((d) => cpuSeconds(d.child.pid)));
    const benchCpuBefore = process.cpuUsage();
    t0 = performance.now();
    await c.create(DEPLOYMENTS, deployment());
    const end = await done;
    clearTimeout(timer);
    clearInterval(ticker);
    if (died) throw new Error(died);
    const seconds = ((end ?? performance.now()) - t0) / 1000;
    const cpuAfter = await Promise.all(daemons.map((d) => cpuSeconds(d.child.pid)));
    const benchCpu = process.cpuUsage(benchCpuBefore);
    const after = await scrapeRequestTotals(tr);
    ac.abort();
    const events = await eventsBySource(c).catch(() => []);
    const cpu: Array<[string, number | undefined]> = daemons.map((d, i) => {
      const a = cpuAfter[i];
      const b = cpuBefore[i];
      return [d.name, a !== undefined && b !== undefined ? a - b : undefined];
    });
    cpu.push(['bench (watch)', (benchCpu.user + benchCpu.system) / 1e6]);
    return {
      label: spec.label, reached: end !== undefined, seconds, bound: progress.bound.size, created: progress.created.size,
      firstBoundS: progress.firstBoundAt !== undefined ? progress.firstBoundAt / 1000 : undefined,
      halfBoundS: progress.halfBoundAt !== undefined ? progress.halfBoundAt / 1000 : undefined,
      requests: diffCounts(before, after), aimS: spec.aimS, cpu, events,
    };
  } finally {
    stopTimers?.();
    client?.close();
    transport?.close();
    for (const d of [...daemons].reverse()) await d.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

function report(r: RunResult): void {
  const total = r.requests.reduce((s, [, n]) => s + n, 0);
  const rate = r.bound / r.seconds;
  const head = r.reached
    ? `${r.seconds.toFixed(2)} s to ${REPLICAS} pods bound (${rate.toFixed(0)} pods/s; aim ≤ ${r.aimS} s: ${r.seconds <= r.aimS ? 'met' : 'MISSED'})`
    : `not reached within ${(RUN_TIMEOUT_MS / 1000).toFixed(0)} s: ${r.created} created, ${r.bound} bound`;
  console.log(`${r.label}: ${head}`);
  console.log(`  first pod bound at ${r.firstBoundS?.toFixed(2) ?? '-'} s, half at ${r.halfBoundS?.toFixed(2) ?? '-'} s`);
  console.log(`  CPU used in the window (s): ${r.cpu.map(([n, v]) => `${n} ${v === undefined ? '?' : v.toFixed(1)}`).join(', ')} (wall ${r.seconds.toFixed(1)})`);
  console.log(`  API requests during the run: ${total} (${(total / REPLICAS).toFixed(2)} per pod); top rows:`);
  for (const [k, n] of groupCounts(r.requests, (v, res) => `${v} ${res}`).slice(0, 10)) {
    console.log(`    ${k.padEnd(44)} ${String(n).padStart(6)}  ${(n / REPLICAS).toFixed(2).padStart(6)}/pod`);
  }
  if (r.events.length > 0) console.log(`  events stored (objects / summed count): ${r.events.slice(0, 6).map(([k, n, c]) => `${k} ${n}/${c}`).join(', ')}`);
  const failed = groupCounts(r.requests.filter(([k]) => !/ 2\d\d$/.test(k)), (v, res, code) => `${v} ${res} ${code}`);
  if (failed.length > 0) console.log(`  non-2xx answers: ${failed.map(([k, n]) => `${k} ×${n}`).join(', ')}`);
}

const which = process.argv[2] ?? 'ab';
const runs: RunSpec[] = [];
if (which.includes('a')) runs.push({ label: '(a) client 20 qps / 30 burst (reference)', clientArgs: ['--core-api-qps=20', '--core-api-burst=30'], aimS: 60 });
if (which.includes('b')) runs.push({ label: '(b) client limits lifted (qps -1)', clientArgs: ['--core-api-qps=-1', '--core-api-burst=30'], aimS: 5 });
// Diagnostic only (not in the default set): (b) plus the API server's in-flight limits off, to show
// how much of (b) goes to 429 + Retry-After: 1 round trips.
if (which.includes('c')) runs.push({ label: '(c) = (b) + apiserver in-flight limits off', clientArgs: ['--core-api-qps=-1', '--core-api-burst=30'], apiserverArgs: ['--max-requests-inflight=0', '--max-mutating-requests-inflight=0'], aimS: 5 });
console.log(`Machine: ${cpus().length} CPUs, load average ${loadavg().map((x) => x.toFixed(1)).join(' ')} (figures vary with other work on the machine)`);
console.log(`Deployment of ${REPLICAS} replicas on ${NODE_COUNT} nodes: create -> all pods have spec.nodeName (apiserver, controller-manager, scheduler as child processes; ${CLI})`);
for (const spec of runs) {
  try {
    report(await runOnce(spec));
  } catch (e) {
    console.log(`${spec.label}: failed: ${(e as Error).message}`);
    process.exitCode = 1;
  }
}

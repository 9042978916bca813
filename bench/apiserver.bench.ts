/**
 * The full API server over TLS+HTTP/2 (a `corectl apiserver` child process, LevelDB storage, client
 * certificate auth) next to a bare node:http2 TLS server (bench/fixtures/bare-h2-server.ts) in the
 * same run, and, for creates, the minimal create server of perf-anchors.md §2g (JSON parse and
 * stringify, LevelDB with group commit: bench/fixtures/minimal-create-server.ts), whose rate the
 * anchors' create aim is half of. Rows: bare GET/POST; minimal creates; configmap
 * create/get/update at 1 and 50 streams; creates (one generateName body) and GETs at 1 and 50
 * streams from h2load as well (bench/lib/h2load.ts), when it is installed; create and list 10 000 pods
 * (whole lists with 1 % of the pods patched before each, timed to the response headers (server
 * time) and to the last byte, the first list on its own: bench/lib/list-load.ts; and limit=500
 * pages, alone, from h2load as well, and with a write to another resource before each); watch delivery lag for 100 (and 1 000) watchers; heap per 1 000 pods from /metrics. A configmap row and its baselines take turns in three slices
 * (this VM's speed changes within seconds; see interleave in bench/lib/h2-load.ts), so their
 * ratio compares like with like. Each configmap row notes the share of its requests the server
 * itself timed within the aim's bound and its GC pauses (bench/lib/request-latency.ts), and this
 * load client's own GC pauses (bench/lib/gc-metrics.ts); each write row notes the disk's syncs in
 * its own slices (a probe appending and fdatasyncing next to the servers' data:
 * bench/lib/disk-probe.ts), as this VM's disk sometimes holds every sync for 100–300 ms. Servers are pinned to CPU 0 and this
 * client to CPU 1 when taskset exists. Aims are from /work/shared/research/perf-anchors.md ("Proposed targets").
 * Run: node dist/bench/apiserver.bench.js   (about 2 minutes). APIBENCH_PIN=0 disables pinning
 * (useful when other work also pins to CPU 0); APIBENCH_ROW_MS sets the length of each load row.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type * as http2 from 'node:http2';
import { canPin, freePort, makePki, pinSelf, spawnNode, spawnReady, waitReady, type Child } from './lib/children.js';
import { closeSessions, interleave, mergeLoads, openSessions, percentile, runLoad, send, type LoadResult } from './lib/h2-load.js';
import { openWatchersInWorker } from './lib/watch-worker.js';
import { measureLists, pagePasses } from './lib/list-load.js';
import { memoryAfterGc, type GcMemory } from './lib/inspect-memory.js';
import { addGcDelta, clientGc, gcNote, scrapeGc, type GcTally } from './lib/gc-metrics.js';
import { scrapeServer, serverNote } from './lib/request-latency.js';
import { cpuTicks, stealNote, stealPercent } from './lib/steal.js';
import { probeNow, startDiskProbe, type DiskProbe, type Slice } from './lib/disk-probe.js';
import { h2loadAvailable, mergeH2load, okRate, runH2load, type H2loadResult } from './lib/h2load.js';
import { apiserverArgs, configMapBody, configMapGenerateBody, createBenchNamespace, podBody } from './lib/apiserver-child.js';

const ROW_MS = Number(process.env['APIBENCH_ROW_MS'] ?? 3000);
/** Slices a row and its baselines take turns in (withBaselines). */
const ROUNDS = 3;
const PODS = 10_000;
/** Whole LISTs after the first (1 % of the pods patched before each). */
const LISTS = 20;
/** Passes over all pods in limit=500 pages: 500 pages, so a p99 is not just the slowest page. */
const PAGE_PASSES = 25;
const JSON_CT = { 'content-type': 'application/json', accept: 'application/json' };
/** The collection every configmap row writes and reads (the bare server answers any path). */
const CONFIGMAPS = '/api/v1/namespaces/bench/configmaps';
const T0 = performance.now();

interface Row { name: string; conc: string; opsPerSec?: number; p50?: number; p99?: number; ratio?: string; aim?: string; note?: string }
const rows: Row[] = [];
/** Synced appends next to the servers' data (bench/lib/disk-probe.ts): write rows note the disk's stalls. */
let disk: DiskProbe | undefined;
const diskNote = (slices: readonly Slice[] | undefined): string => (disk && slices ? disk.note(slices) : '');
const joinNotes = (...n: (string | undefined)[]): string => n.filter(Boolean).join('; ');
const log = (s: string): void => { process.stderr.write(`[apibench ${((performance.now() - T0) / 1000).toFixed(1)}s] ${s}\n`); };

function loadRow(name: string, conc: number, r: LoadResult & { notes?: string }, extra: Partial<Row> = {}): Row {
  const row: Row = {
    name, conc: String(conc), opsPerSec: r.ops / r.seconds, p50: percentile(r.lat, 50), p99: percentile(r.lat, 99), ...extra,
  };
  if (r.errors > 0) row.note = `${r.errors} errors (${r.firstError ?? ''})`.slice(0, 120);
  if (r.notes) row.note = row.note ? `${row.note}; ${r.notes}` : r.notes;
  const steal = stealNote(r.stealPct);
  if (steal) row.note = row.note ? `${row.note}; ${steal}` : steal;
  rows.push(row);
  log(`${name} x${conc}: ${row.opsPerSec!.toFixed(0)}/s p50 ${row.p50!.toFixed(2)} p99 ${row.p99!.toFixed(2)}${row.note ? ' ' + row.note : ''}`);
  return row;
}

const rvOf = (b: Buffer): string => /"resourceVersion":"(\d+)"/.exec(b.toString())?.[1] ?? '';

async function metric(s: http2.ClientHttp2Session, name: string): Promise<number> {
  const r = await send(s, { path: '/metrics' });
  const m = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+]+)$`, 'm').exec(r.body.toString());
  return m ? Number(m[1]) : Number.NaN;
}

/**
 * Runs an apiserver load interleaved with its baselines (ROUNDS slices of ROW_MS / ROUNDS each:
 * see interleave) and notes, for `verb` on configmaps, the share of requests the server itself
 * timed within `boundMs`, the server's GC pauses (the baselines' slices leave it idle) and this
 * load client's own GC pauses in the apiserver's slices. Returns the baselines' results, then
 * the apiserver's.
 */
async function withBaselines(s: http2.ClientHttp2Session, verb: string, boundMs: number, baselines: readonly ((ms: number) => Promise<LoadResult>)[],
  api: (ms: number) => Promise<LoadResult>): Promise<{ baselines: (LoadResult & { notes: string })[]; api: LoadResult & { notes: string } }> {
  const ms = ROW_MS / ROUNDS;
  const a = await scrapeServer(s, verb, 'configmaps');
  let client: GcTally = new Map();
  const slices: Slice[][] = [];
  const results = await interleave(ROUNDS, [...baselines.map((b) => () => b(ms)), async () => {
    const before = clientGc();
    const r = await api(ms);
    client = addGcDelta(client, before, clientGc());
    return r;
  }], mergeLoads, slices);
  // Reads touch no disk: only write rows note it.
  const disks = results.map((_, i) => (verb === 'GET' ? '' : diskNote(slices[i])));
  const notes = joinNotes(serverNote(a, await scrapeServer(s, verb, 'configmaps'), boundMs), gcNote(new Map(), client).replace(/^GC /, 'client GC '), disks.pop());
  const r = results.pop()!;
  return { baselines: results.map((b, i) => ({ ...b, notes: disks[i]! })), api: { ...r, notes } };
}

interface Baseline { child: Child; url: string; sessions: http2.ClientHttp2Session[] }

/** A baseline server (bench/fixtures/<script>) as a child process on `cpu`, warmed up with GETs of `/`. */
async function startBaseline(script: string, extraArgs: string[], pki: Awaited<ReturnType<typeof makePki>>, cpu: number | undefined): Promise<Baseline> {
  const port = await freePort();
  const file = fileURLToPath(new URL(`./fixtures/${script}`, import.meta.url));
  const child = spawnNode([file, String(port), pki.certFile, pki.keyFile, ...extraArgs], cpu);
  const url = `https://127.0.0.1:${port}`;
  try {
    await waitReady(url, { ca: pki.client.ca }, '/', child);
    const sessions = await openSessions(url, { ca: pki.client.ca }, 1);
    await runLoad({ sessions, concurrency: 50, durationMs: 500, request: () => ({ path: '/' }) }); // warm-up
    return { child, url, sessions };
  } catch (e) {
    await child.stop();
    throw e;
  }
}

async function stopBaseline(b: Baseline | undefined): Promise<void> {
  if (!b) return;
  closeSessions(b.sessions);
  await b.child.stop();
}

const BARE_POST = configMapBody('echo', 'bench', {});
/** GETs or POST echoes on the bare server for `ms`. */
function bareLoad(sessions: http2.ClientHttp2Session[], verb: 'GET' | 'POST', conc: number, ms: number): Promise<LoadResult> {
  return runLoad({
    sessions, concurrency: conc, durationMs: ms,
    request: () => (verb === 'GET' ? { path: `${CONFIGMAPS}/x` } : { path: '/x', method: 'POST', headers: JSON_CT, body: BARE_POST }),
  });
}

/** Names no earlier slice used, for creates spread over several slices. */
let createSeq = 0;

/** Durable configmap creates on the minimal create server (the composite ceiling) for `ms`. */
async function minimalLoad(sessions: http2.ClientHttp2Session[], conc: number, ms: number): Promise<LoadResult> {
  const r = await runLoad({
    sessions, concurrency: conc, durationMs: ms,
    request: () => ({ path: CONFIGMAPS, method: 'POST', headers: JSON_CT, body: configMapBody(`cm-m-${createSeq++}`, 'bench', { i: String(createSeq) }) }),
  });
  if (r.errors > 0) throw new Error(`minimal create server: ${r.errors} errors (${r.firstError ?? ''})`);
  return r;
}

interface Api { child: Child; url: string; inspectPort: number }

/** The bearer token of the h2load rows. */
const BENCH_TOKEN = 'api-bench-token';

/** Where the h2load rows send their requests, from which CPU, and the create body they POST. */
interface H2loadTargets { bare: string; minimal: string; api: string; cpu: number | undefined; body: string }

/** A create row's ratios to the bare POST echo and the minimal create server, and its aim. */
function createAims(streams: number, rate: number, bare: number, minimal: number): Partial<Row> {
  return {
    ratio: `${(100 * rate / bare).toFixed(1)}% of POST, ${(100 * rate / minimal).toFixed(1)}% of minimal`,
    aim: streams === 50 ? '≥ 4 500/s (50% of minimal), p99 ≤ 25 ms' : 'p50 ≤ 1 ms',
  };
}

/** A GET row's ratio to the bare GET, and its aim. */
function getAims(streams: number, rate: number, bare: number): Partial<Row> {
  return { ratio: `${(100 * rate / bare).toFixed(1)}% of GET`, aim: streams === 50 ? '≥ 40% of bare, p99 ≤ 5 ms' : 'p50 ≤ 0.25 ms' };
}

function h2loadRow(name: string, streams: number, r: H2loadResult, ticks: ReturnType<typeof cpuTicks>, extra: Partial<Row> = {}): number {
  const rate = okRate(r);
  const notes = [extra.note, r.ok !== r.total ? `${r.total - r.ok} of ${r.total} not 2xx` : '', stealNote(stealPercent(ticks, cpuTicks()))].filter(Boolean);
  rows.push({ name, conc: String(streams), opsPerSec: rate, p50: percentile(r.lat, 50), p99: percentile(r.lat, 99), ...extra, note: notes.join('; ') });
  log(`${name} x${streams}: ${rate.toFixed(0)}/s p50 ${percentile(r.lat, 50).toFixed(2)} p99 ${percentile(r.lat, 99).toFixed(2)}`);
  return rate;
}

/** One h2load target: a URL, with a body to POST or none (GET), and extra headers. */
interface H2loadTarget { url: string; data?: string; headers?: Record<string, string> }

/**
 * h2load against `targets` with `streams` in flight, taking turns ROUNDS times (interleave, as
 * withBaselines does); each target's runs merged. The server notes of `verb` cover the turns (only the API
 * server's own requests are in its /metrics).
 */
async function h2loadTurns(h: H2loadTargets, scrape: http2.ClientHttp2Session, verb: string, boundMs: number, streams: number,
  targets: readonly H2loadTarget[]): Promise<{ results: H2loadResult[]; note: string; disk: string[] }> {
  const seconds = ROW_MS / 1000 / ROUNDS;
  const a = await scrapeServer(scrape, verb, 'configmaps');
  const slices: Slice[][] = [];
  const results = await interleave(ROUNDS, targets.map((t) => () => runH2load(t.url, {
    streams, seconds, warmUpSeconds: 0.2, cpu: h.cpu, ...(t.data ? { data: t.data } : {}), headers: { 'content-type': 'application/json', accept: 'application/json', ...t.headers },
  })), mergeH2load, slices);
  const disk = results.map((_, i) => (verb === 'GET' ? '' : diskNote(slices[i])));
  return { results, note: serverNote(a, await scrapeServer(scrape, verb, 'configmaps'), boundMs), disk };
}

/**
 * Creates and GETs from h2load (a C client, so the servers and not this Node client set the
 * pace and the tail) at 1 and 50 streams: creates POST one body with generateName to the bare
 * server (echo), the minimal create server and the API server; GETs read `name` from the API
 * server and the bare server's GET answer.
 */
async function h2loadRows(h: H2loadTargets, scrape: http2.ClientHttp2Session, name: string): Promise<void> {
  const token = { authorization: `Bearer ${BENCH_TOKEN}` };
  for (const streams of [1, 50]) {
    const ticks = cpuTicks();
    const { results: [bare, minimal, api], note, disk: [bareDisk, minimalDisk, apiDisk] } = await h2loadTurns(h, scrape, 'POST', 25, streams, [
      { url: `${h.bare}${CONFIGMAPS}`, data: h.body }, { url: `${h.minimal}${CONFIGMAPS}`, data: h.body }, { url: `${h.api}${CONFIGMAPS}`, data: h.body, headers: token },
    ]);
    const bareRate = h2loadRow('bare h2 POST echo 1 KiB (h2load)', streams, bare!, ticks, { note: bareDisk! });
    const minimalRate = h2loadRow('minimal create server (h2load, generateName)', streams, minimal!, ticks, { note: minimalDisk! });
    h2loadRow('apiserver create configmap (h2load, generateName)', streams, api!, ticks, { ...createAims(streams, okRate(api!), bareRate, minimalRate), note: joinNotes(note, apiDisk) });
  }
  for (const streams of [1, 50]) {
    const ticks = cpuTicks();
    const { results: [bare, api], note } = await h2loadTurns(h, scrape, 'GET', 5, streams, [
      { url: `${h.bare}${CONFIGMAPS}/x` }, { url: `${h.api}${CONFIGMAPS}/${name}`, headers: token },
    ]);
    const bareRate = h2loadRow('bare h2 GET 1 KiB (h2load)', streams, bare!, ticks);
    h2loadRow('apiserver get configmap (h2load)', streams, api!, ticks, { ...getAims(streams, okRate(api!), bareRate), note });
  }
}

async function startApiserver(dir: string, pki: Awaited<ReturnType<typeof makePki>>, cpu: number | undefined): Promise<Api> {
  const port = await freePort();
  // The inspector stays off until SIGUSR1 (memory row); it is only used to force a GC.
  const inspectPort = await freePort();
  const cli = fileURLToPath(new URL('../src/cli.js', import.meta.url));
  const url = `https://127.0.0.1:${port}`;
  // h2load has no client certificates: its rows authenticate with a bearer token.
  const tokens = join(dir, 'tokens.csv');
  await writeFile(tokens, `${BENCH_TOKEN},bench-admin,bench-admin,"system:masters"\n`);
  const args = [...apiserverArgs(cli, dir, pki, port, [`--inspect-port=127.0.0.1:${inspectPort}`]), `--token-auth-file=${tokens}`];
  const child = await spawnReady(args, cpu, url, pki.client, '/healthz');
  return { child, url, inspectPort };
}

/**
 * Configmap create, GET and update rows. Each create and GET row takes turns with its baselines
 * (the bare server; for creates also the minimal create server: withBaselines), so load from
 * other work and the VM's changing speed hit them alike.
 */
async function benchConfigmaps(sessions: http2.ClientHttp2Session[], bare: http2.ClientHttp2Session[], minimal: http2.ClientHttp2Session[], h2: H2loadTargets | undefined): Promise<void> {
  const base = new Map<string, number>();
  const rv = new Map<string, string>();
  const create = (conc: number) => (ms: number): Promise<LoadResult> => {
    const names: string[] = [];
    return runLoad({
      sessions, concurrency: conc, durationMs: ms,
      request: (i) => {
        const name = names[i] = `cm-${createSeq++}`;
        return { path: CONFIGMAPS, method: 'POST', headers: JSON_CT, body: configMapBody(name, 'bench', { i: String(i) }) };
      },
      onResponse: (i, res) => { rv.set(names[i]!, rvOf(res.body)); },
    });
  };
  await runLoad({ sessions, concurrency: 50, durationMs: 500, request: (i) => ({ path: CONFIGMAPS, method: 'POST', headers: JSON_CT, body: configMapBody(`warm-${i}`, 'bench', {}) }) });
  for (const conc of [1, 50]) {
    const { baselines: [post, ceiling], api: r } = await withBaselines(sessions[0]!, 'POST', 25,
      [(ms) => bareLoad(bare, 'POST', conc, ms), (ms) => minimalLoad(minimal, conc, ms)], create(conc));
    base.set(`post${conc}`, loadRow('bare h2 POST echo 1 KiB', conc, post!).opsPerSec!);
    const ceilingRate = loadRow('minimal create server (composite ceiling)', conc, ceiling!).opsPerSec!;
    loadRow('apiserver create configmap', conc, r, createAims(conc, r.ops / r.seconds, base.get(`post${conc}`)!, ceilingRate));
  }
  const names = [...rv.keys()].slice(0, 2000);
  if (h2) await h2loadRows(h2, sessions[0]!, names[0]!);
  for (const conc of [1, 50]) {
    const { baselines: [get], api: r } = await withBaselines(sessions[0]!, 'GET', 5, [(ms) => bareLoad(bare, 'GET', conc, ms)],
      (ms) => runLoad({ sessions, concurrency: conc, durationMs: ms, request: (i) => ({ path: `${CONFIGMAPS}/${names[i % names.length]}`, headers: JSON_CT }) }));
    base.set(`get${conc}`, loadRow('bare h2 GET 1 KiB', conc, get!).opsPerSec!);
    loadRow('apiserver get configmap', conc, r, getAims(conc, r.ops / r.seconds, base.get(`get${conc}`)!));
  }
  for (const conc of [1, 50]) {
    let k = 0;
    const { api: r } = await withBaselines(sessions[0]!, 'PUT', 25, [], (ms) => {
      const updated: string[] = [];
      return runLoad({
        sessions, concurrency: conc, durationMs: ms,
        request: (i) => {
          const n = updated[i] = names[k++ % names.length]!;
          // A value no earlier row wrote, so no update is a no-op.
          return { path: `${CONFIGMAPS}/${n}`, method: 'PUT', headers: JSON_CT, body: configMapBody(n, 'bench', { i: `put${conc}-${k}` }, rv.get(n)) };
        },
        onResponse: (i, res) => { rv.set(updated[i]!, rvOf(res.body)); },
      });
    });
    loadRow('apiserver update configmap (PUT)', conc, r, {
      ratio: `${(100 * (r.ops / r.seconds) / base.get(`post${conc}`)!).toFixed(1)}% of POST`,
      ...(conc === 50 ? { aim: '≥ 3 000/s durable' } : {}),
    });
  }
}

/** The smallest of a few readings over ~2 s of idle: no GC can be forced in the child, so take the lowest heap seen. */
async function idleMemory(s: http2.ClientHttp2Session): Promise<{ heap: number; rss: number }> {
  let heap = Number.POSITIVE_INFINITY;
  let rss = Number.POSITIVE_INFINITY;
  for (let i = 0; i < 5; i++) {
    await new Promise((r) => setTimeout(r, 400));
    heap = Math.min(heap, await metric(s, 'nodejs_heap_size_used_bytes'));
    rss = Math.min(rss, await metric(s, 'process_resident_memory_bytes'));
  }
  return { heap, rss };
}

/** Memory after a forced GC through the inspector; falls back to the lowest idle /metrics readings. */
async function serverMemory(api: Api, s: http2.ClientHttp2Session): Promise<{ heap: number; rss: number; how: string }> {
  try {
    const m: GcMemory = await memoryAfterGc(api.child.proc, api.inspectPort);
    return { heap: m.heapUsed + m.external, rss: m.rss, how: 'after forced GC (heap used + external)' };
  } catch (e) {
    log(`inspector GC failed (${(e as Error).message}); using /metrics`);
    return { ...await idleMemory(s), how: 'lowest of 5 idle /metrics readings, no forced GC' };
  }
}

async function benchPods(api: Api, sessions: http2.ClientHttp2Session[], h2: H2loadTargets | undefined): Promise<void> {
  const { heap: heap0, rss: rss0 } = await serverMemory(api, sessions[0]!);
  const from = probeNow();
  const r = await runLoad({
    sessions, concurrency: 64, durationMs: 60_000, maxOps: PODS,
    request: (i) => ({ path: '/api/v1/namespaces/bench/pods', method: 'POST', headers: JSON_CT, body: podBody(`pod-${String(i).padStart(5, '0')}`) }),
  });
  const created = `${r.ops} pods created${r.errors ? `, ${r.errors} errors (${r.firstError ?? ''})` : ''}`.slice(0, 120);
  loadRow('apiserver create small pod', 64, r, { note: joinNotes(created, diskNote([[from, probeNow()]])) });
  const { heap: heap1, rss: rss1, how } = await serverMemory(api, sessions[0]!);
  const per = (a: number, b: number): string => `${((b - a) / 1048576 / (r.ops / 1000)).toFixed(2)} MiB/1000 pods`;
  rows.push({ name: `memory: heap used +${((heap1 - heap0) / 1048576).toFixed(1)} MiB for ${r.ops} pods`, conc: '-', ratio: per(heap0, heap1), aim: '≤ 8 MiB/1000 pods', note: `rss +${((rss1 - rss0) / 1048576).toFixed(1)} MiB (${per(rss0, rss1)}); heap now ${(heap1 / 1048576).toFixed(0)} MiB; ${how}` });
  log(`heap ${heap0} -> ${heap1}, rss ${rss0} -> ${rss1}`);

  let items = 0;
  const names = Array.from({ length: r.ops }, (_, i) => `pod-${String(i).padStart(5, '0')}`);
  const t0 = performance.now();
  const l = await measureLists({
    sessions, path: '/api/v1/namespaces/bench/pods', accept: 'application/json', lists: LISTS, names,
    onFirstBody: (b) => { items = (b.toString().match(/"kind":"Pod"|"name":"pod-/g) ?? []).length; },
  });
  const rate = (LISTS + 1) / ((performance.now() - t0) / 1000);
  rows.push({
    name: `apiserver list ${r.ops} pods (JSON, whole): server time`, conc: '1', opsPerSec: rate, p50: percentile(l.headers, 50), p99: percentile(l.headers, 99),
    aim: 'p99 ≤ 100 ms server time',
    note: `${LISTS} lists, ${l.churn} pods patched before each; to the last byte p50 ${percentile(l.total, 50).toFixed(1)} p99 ${percentile(l.total, 99).toFixed(1)} ms; first list ${l.first.headersMs.toFixed(1)} / ${l.first.totalMs.toFixed(1)} ms; its body matched ${items} pod markers`,
  });
  log(`list whole: server time p50 ${percentile(l.headers, 50).toFixed(1)} p99 ${percentile(l.headers, 99).toFixed(1)}; last byte p99 ${percentile(l.total, 99).toFixed(1)}; first ${l.first.headersMs.toFixed(1)}/${l.first.totalMs.toFixed(1)}`);

  const urls = await benchPages(sessions, false);
  if (h2) await h2loadPages(h2, sessions[0]!, urls);
  await benchPages(sessions, true);
}

/**
 * limit=500 pages over every pod, PAGE_PASSES times. With `churn`, a configmap is created before
 * each page (another resource, as Lease and Event writes are in a cluster): the revision moves
 * on, so each continued page is a read at an earlier revision.
 */
async function benchPages(sessions: http2.ClientHttp2Session[], churn: boolean): Promise<string[]> {
  const server0 = await scrapeServer(sessions[0]!, 'LIST', 'pods');
  const client0 = clientGc();
  const tp = performance.now();
  const { ms, firstPass } = await pagePasses(sessions[0]!, '/api/v1/namespaces/bench/pods', {
    limit: 500, passes: PAGE_PASSES,
    ...(churn ? {
      beforePage: async (pass: number, page: number) => {
        const w = await send(sessions[1]!, { path: CONFIGMAPS, method: 'POST', headers: JSON_CT, body: configMapBody(`churn-${pass}-${page}`, 'bench', {}) });
        if (w.status !== 201) throw new Error(`churn write answered ${w.status}`);
      },
    } : {}),
  });
  const pl = Float64Array.from(ms);
  // The server's own times (to its last byte sent) and both sides' GC pauses: a page's tail is often not the server's.
  const timing = joinNotes(serverNote(server0, await scrapeServer(sessions[0]!, 'LIST', 'pods'), 5), gcNote(client0, clientGc()).replace(/^GC /, 'client GC '));
  const name = churn ? 'apiserver list pods limit=500 (pages, a write between)' : 'apiserver list pods limit=500 (pages)';
  rows.push({ name, conc: '1', opsPerSec: pl.length / ((performance.now() - tp) / 1000), p50: percentile(pl, 50), p99: percentile(pl, 99), aim: 'p99 ≤ 10 ms', note: joinNotes(`${pl.length} pages over ${PAGE_PASSES} passes${churn ? '; a configmap created before each page' : ''}`, timing) });
  log(`${name}: p50 ${percentile(pl, 50).toFixed(1)} p99 ${percentile(pl, 99).toFixed(1)} (${pl.length} pages)`);
  return firstPass;
}

/**
 * The same limit=500 pages read by h2load, one at a time: `paths` (one pass, with its continue
 * tokens; nothing writes pods meanwhile, so each token still reads the same page) PAGE_PASSES
 * times over. A C client reads a 500 KiB page without this process's GC pauses and event-loop
 * turns, which a Node client adds to its tail.
 */
async function h2loadPages(h: H2loadTargets, scrape: http2.ClientHttp2Session, paths: readonly string[]): Promise<void> {
  const ticks = cpuTicks();
  const server0 = await scrapeServer(scrape, 'LIST', 'pods');
  const r = await runH2load(paths.map((p) => `${h.api}${p}`), {
    streams: 1, requests: paths.length * PAGE_PASSES, cpu: h.cpu, headers: { accept: 'application/json', authorization: `Bearer ${BENCH_TOKEN}` },
  });
  h2loadRow('apiserver list pods limit=500 (pages, h2load)', 1, r, ticks, {
    aim: 'p99 ≤ 10 ms', note: joinNotes(`${r.lat.length} pages over ${PAGE_PASSES} passes`, serverNote(server0, await scrapeServer(scrape, 'LIST', 'pods'), 5)),
  });
}

async function benchWatch(url: string, tls: Awaited<ReturnType<typeof makePki>>['client'], writer: http2.ClientHttp2Session, watchers: number, eventsPerSec: number, seconds: number, seqBase: number): Promise<void> {
  // A fresh namespace per row: a watch without a resourceVersion first replays what exists.
  const ns = `watch-${watchers}`;
  const total = eventsPerSec * seconds;
  // The watchers run in a worker thread with a heap of their own (bench/lib/watch-worker.ts):
  // this process's heap, full of the earlier rows' data, made its GC pauses part of the lag.
  const fleet = await openWatchersInWorker(url, tls, `/api/v1/namespaces/${ns}/configmaps?watch=1`, watchers, total, Math.ceil(watchers / 250));
  try {
    const sentAt = new Float64Array(total);
    const ackAt = new Float64Array(total);
    let errors = 0;
    let firstError = '';
    const writes: Promise<void>[] = [];
    const cpu0 = process.cpuUsage();
    const srvCpu0 = await metric(writer, 'process_cpu_seconds_total');
    // GC pauses stop every delivery in flight: the row says how many there were and how long.
    const srvGc0 = await scrapeGc(writer);
    const cliGc0 = clientGc();
    const start = performance.now();
    for (let k = 0; k < total; k++) {
      const due = start + (k * 1000) / eventsPerSec;
      const wait = due - performance.now();
      if (wait > 1) await new Promise((r) => setTimeout(r, wait));
      const seq = seqBase + k;
      sentAt[k] = performance.now();
      writes.push(send(writer, { path: `/api/v1/namespaces/${ns}/configmaps`, method: 'POST', headers: JSON_CT, body: configMapBody(`w-${seq}`, ns, { seq: String(seq) }) }).then((res) => {
        ackAt[k] = performance.now();
        if (res.status !== 201) { errors++; firstError ||= `HTTP ${res.status}`; }
      }, (e: Error) => { errors++; firstError ||= e.message; }));
    }
    await Promise.all(writes);
    const writeSecs = (performance.now() - start) / 1000;
    const want = watchers * total;
    const deadline = performance.now() + 10_000;
    while (fleet.receipts.count < want && performance.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    const n = fleet.receipts.count;
    const wall = (performance.now() - start) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const clientCpu = (cpu.user + cpu.system) / 1e6 / wall;
    const serverCpu = (await metric(writer, 'process_cpu_seconds_total') - srvCpu0) / wall;
    const gc = joinNotes(gcNote(srvGc0, await scrapeGc(writer)), gcNote(cliGc0, clientGc()).replace(/^GC /, 'writer thread GC '), diskNote([[performance.timeOrigin + start, probeNow()]]));
    let last = start;
    for (let i = 0; i < n; i++) last = Math.max(last, fleet.receipts.at[i]!);
    const fromAck: number[] = [];
    const fromSend: number[] = [];
    for (let i = 0; i < n; i++) {
      const k = fleet.receipts.seq[i]! - seqBase;
      if (k < 0 || k >= total || ackAt[k] === 0) continue;
      fromAck.push(fleet.receipts.at[i]! - ackAt[k]!);
      fromSend.push(fleet.receipts.at[i]! - sentAt[k]!);
    }
    const a = Float64Array.from(fromAck);
    const s = Float64Array.from(fromSend);
    const early = fromAck.filter((x) => x < 0).length;
    rows.push({
      name: `watch ${watchers} watchers × ${eventsPerSec} creates/s, lag from ack`, conc: String(watchers),
      opsPerSec: n / ((last - start) / 1000), p50: percentile(a, 50), p99: percentile(a, 99),
      ...(watchers >= 1000 && eventsPerSec >= 100 ? { aim: 'p99 ≤ 50 ms' } : {}),
      note: `ops/s = deliveries/s; ${n}/${want} received; lag from send p50 ${percentile(s, 50).toFixed(2)} p99 ${percentile(s, 99).toFixed(2)} ms; ${early} arrived before the ack (negative lag); writes took ${writeSecs.toFixed(1)} s; CPU client ${(100 * clientCpu).toFixed(0)}% server ${(100 * serverCpu).toFixed(0)}% of a core${gc ? `; ${gc}` : ''}${errors ? `; ${errors} write errors ${firstError}` : ''}`,
    });
    log(`watch ${watchers}: ${n}/${want} p50 ${percentile(a, 50).toFixed(2)} p99 ${percentile(a, 99).toFixed(2)}`);
  } finally {
    await fleet.close();
  }
}

function fmt(n: number | undefined, d: number): string {
  return n === undefined || Number.isNaN(n) ? '-' : n.toFixed(d);
}

function printTable(pinned: boolean): void {
  const head = ['row', 'streams', 'ops/s', 'p50 ms', 'p99 ms', 'ratio', 'aim', 'note'];
  const body = rows.map((r) => [r.name, r.conc, r.opsPerSec === undefined ? '-' : Math.round(r.opsPerSec).toString(), fmt(r.p50, 2), fmt(r.p99, 2), r.ratio ?? '', r.aim ?? '', r.note ?? '']);
  const w = head.map((h, i) => Math.max(h.length, ...body.map((b) => (i === 7 ? 0 : b[i]!.length))));
  const line = (c: string[]): string => c.map((x, i) => (i === 0 || i >= 5 ? x.padEnd(w[i]!) : x.padStart(w[i]!))).join('  ').trimEnd();
  console.log(`\napiserver over TLS+HTTP/2 vs bare node:http2 (${pinned ? 'servers pinned to CPU 0, client to CPU 1' : 'not pinned'}; ${ROW_MS} ms per load row)`);
  console.log(line(head));
  for (const b of body) console.log(line(b));
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-apibench-'));
  const pinned = process.env['APIBENCH_PIN'] !== '0' && canPin(availableParallelism());
  const serverCpu = pinned ? 0 : undefined;
  if (pinned) pinSelf(1);
  const pki = await makePki(dir);
  let api: Api | undefined;
  let bare: Baseline | undefined;
  let minimal: Baseline | undefined;
  try {
    bare = await startBaseline('bare-h2-server.js', [], pki, serverCpu);
    minimal = await startBaseline('minimal-create-server.js', [join(dir, 'minimal-data')], pki, serverCpu);
    api = await startApiserver(dir, pki, serverCpu);
    disk = startDiskProbe(join(dir, 'disk-probe'));
    log(`apiserver up at ${api.url}`);
    const sessions = await openSessions(api.url, pki.client, 2);
    for (const ns of ['bench', 'watch-100', 'watch-1000']) {
      await createBenchNamespace(sessions[0]!, ns);
    }
    let h2: H2loadTargets | undefined;
    if (h2loadAvailable()) {
      const body = join(dir, 'generate-configmap.json');
      await writeFile(body, configMapGenerateBody('h2load-', 'bench'));
      h2 = { bare: bare.url, minimal: minimal.url, api: api.url, cpu: pinned ? 1 : undefined, body };
    } else {
      rows.push({ name: 'create and get configmap (h2load)', conc: '-', note: 'skipped: h2load not installed (Debian nghttp2-client)' });
    }
    await benchConfigmaps(sessions, bare.sessions, minimal.sessions, h2);
    await stopBaseline(bare);
    await stopBaseline(minimal);
    bare = minimal = undefined;
    await benchPods(api, sessions, h2);
    await benchWatch(api.url, pki.client, sessions[1]!, 100, 100, 5, 0);
    if ((performance.now() - T0) / 1000 < 180) await benchWatch(api.url, pki.client, sessions[1]!, 1000, 100, 5, 100_000);
    else rows.push({ name: 'watch 1000 watchers × 100 creates/s', conc: '1000', note: 'skipped: time budget' });
    closeSessions(sessions);
  } finally {
    await stopBaseline(bare);
    await stopBaseline(minimal);
    await disk?.stop();
    await api?.child.stop();
    await rm(dir, { recursive: true, force: true });
  }
  printTable(pinned);
  console.log(`total ${((performance.now() - T0) / 1000).toFixed(1)} s; the machine may be loaded by other work, compare rows of the same run.`);
}

await main();

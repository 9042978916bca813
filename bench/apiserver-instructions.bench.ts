/**
 * Instructions per request through the full API server (TLS+HTTP/2, client certificates, durable
 * LevelDB), counted by valgrind's callgrind: the figure for before/after comparisons of CPU per
 * request, since it does not move with CPU steal or clock speed as seconds do. It still moves by
 * up to 5 % between runs: how many writes share a commit and how many requests share a read
 * depend on timing. So compare a build with its baseline in two runs started together
 * (INSTRBENCH_CLI below). A `corectl apiserver` child runs under callgrind; after a warm-up
 * (so the JIT has compiled the hot code) each phase is counted alone: configmap create (named by
 * the client, then by generateName), update (PUT) and GET, 50 streams in flight. Prints
 * instructions per request on the main thread (JavaScript, JSON, HTTP/2, TLS, GC work on that
 * thread) and on all threads (adding V8's GC helpers and LevelDB's writer), and the collections
 * in the window. How many collections fall into a window is the collector's choice, and one
 * incremental marking adds several percent to its row; so the main thread is also counted
 * without its GC work, the steadier figure.
 * Run: node dist/bench/apiserver-instructions.bench.js   (about 9 min: valgrind runs the server
 * some 50 times slower). Needs valgrind (Debian package valgrind); without it the bench says so.
 * Environment: INSTRBENCH_N (requests per counted phase, default 2000; GETs count twice as many;
 * fewer than about 2000 leave the JIT's warm-up in the figures),
 * INSTRBENCH_CLI=<path to a compiled src/cli.js> (count another build, e.g. a baseline tree),
 * INSTRBENCH_KEEP=<dir> (keep callgrind's dump files there, for callgrind_annotate),
 * INSTRBENCH_ONLY=<regex> (only the phases whose name matches, e.g. 'generateName'),
 * INSTRBENCH_NODE_ARGS (extra node options for the server, e.g. '--max-semi-space-size=64'),
 * INSTRBENCH_CONC (requests in flight, default 50; 1 is the steadiest for comparing builds),
 * INSTRBENCH_APISERVER_ARGS='--opt=v ...' (more API server options, e.g. an audit policy and log:
 * what a feature on the request path costs in instructions).
 */
import { readdirSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, makePki, spawnNode, waitReady } from './lib/children.js';
import { closeSessions, openSessions, runLoad, send, type BenchRequest } from './lib/h2-load.js';
import { apiserverArgs, configMapBody, configMapGenerateBody, createBenchNamespace } from './lib/apiserver-child.js';
import { callgrindControl, callgrindWrapper, haveCallgrind, readDumps, waitForDump } from './lib/callgrind.js';
import { gcNote, scrapeGc } from './lib/gc-metrics.js';

const N = Number(process.env['INSTRBENCH_N'] ?? 2000);
const CLI = process.env['INSTRBENCH_CLI'] ? resolve(process.env['INSTRBENCH_CLI']) : fileURLToPath(new URL('../src/cli.js', import.meta.url));
/** INSTRBENCH_CONC: requests in flight (default 50); 1 takes commit grouping and read sharing out of the figures, for the steadiest comparison of CPU per request. */
const CONC = Number(process.env['INSTRBENCH_CONC'] ?? 50);
/** INSTRBENCH_ONLY=<regex>: count only the phases whose name matches (update and GET need the first create phase). */
const ONLY = process.env['INSTRBENCH_ONLY'] ? new RegExp(process.env['INSTRBENCH_ONLY']) : undefined;
const KEEP = process.env['INSTRBENCH_KEEP'] ? resolve(process.env['INSTRBENCH_KEEP']) : undefined;
const JSON_CT = { 'content-type': 'application/json', accept: 'application/json' };
const BASE = '/api/v1/namespaces/bench/configmaps';
const GENERATE_BODY = configMapGenerateBody('gen-', 'bench');

interface Phase {
  name: string;
  /** Requests before counting (the JIT warms up). */
  warm: number;
  count: number;
  request: (i: number, counted: boolean) => BenchRequest;
}

const PHASES: Phase[] = [
  {
    name: 'create configmap', warm: 1.5 * N, count: N,
    request: (i, counted) => ({ path: BASE, method: 'POST', headers: JSON_CT, body: configMapBody(`${counted ? 'c' : 'w'}-${i}`, 'bench', { i: String(i) }) }),
  },
  {
    // One body, named by the server (the h2load create rows of bench/apiserver.bench.ts).
    name: 'create configmap (generateName)', warm: N / 2, count: N,
    request: () => ({ path: BASE, method: 'POST', headers: JSON_CT, body: GENERATE_BODY }),
  },
  {
    name: 'update configmap (PUT)', warm: N / 2, count: N,
    // Values no earlier request wrote, so no update is a no-op.
    request: (i, counted) => ({ path: `${BASE}/w-${i % N}`, method: 'PUT', headers: JSON_CT, body: configMapBody(`w-${i % N}`, 'bench', { i: `${counted ? 'c' : 'w'}${i}` }) }),
  },
  {
    name: 'get configmap', warm: N, count: 2 * N,
    request: (i) => ({ path: `${BASE}/w-${i % N}`, headers: JSON_CT }),
  },
];

async function main(): Promise<void> {
  if (!haveCallgrind()) {
    console.log('valgrind (with callgrind_control) is not installed: nothing counted. Install it with `apt-get install valgrind`.');
    return;
  }
  const dir = await mkdtemp(join(tmpdir(), 'instr-bench-'));
  const pki = await makePki(dir);
  const port = await freePort();
  const nodeArgs = process.env['INSTRBENCH_NODE_ARGS']?.split(' ').filter(Boolean) ?? [];
  const serverArgs = process.env['INSTRBENCH_APISERVER_ARGS']?.split(' ').filter(Boolean) ?? [];
  const server = spawnNode([...apiserverArgs(CLI, dir, pki, port, nodeArgs), ...serverArgs], undefined, callgrindWrapper(join(dir, 'cg.out')));
  const pid = server.proc.pid!;
  const url = `https://127.0.0.1:${port}`;
  const rows: { name: string; phase: number; ops: number; gc: string }[] = [];
  try {
    await waitReady(url, pki.client, '/readyz', server, 600_000);
    const sessions = await openSessions(url, pki.client, 4);
    await createBenchNamespace(sessions[0]!, 'bench');
    for (const [k, p] of PHASES.entries()) {
      if (ONLY && !ONLY.test(p.name)) continue;
      const warm = await runLoad({ sessions, concurrency: CONC, durationMs: 3_600_000, maxOps: p.warm, request: (i) => p.request(i, false) });
      if (warm.errors) throw new Error(`${p.name} (warm-up): ${warm.firstError}`);
      // The GC scrapes fall outside the counted window.
      const gc0 = await scrapeGc(sessions[0]!);
      callgrindControl(pid, '--zero');
      // The idle server takes the command once valgrind interrupts it; the load waits for that.
      await new Promise((res) => setTimeout(res, 500));
      const r = await runLoad({ sessions, concurrency: CONC, durationMs: 3_600_000, maxOps: p.count, request: (i) => p.request(i, true) });
      callgrindControl(pid, `--dump=phase${k}`);
      await waitForDump(dir, 'cg.out', `phase${k}`);
      if (r.errors) throw new Error(`${p.name}: ${r.firstError}`);
      // Collections counted only: durations mean nothing under valgrind.
      rows.push({ name: p.name, phase: k, ops: r.ops, gc: gcNote(gc0, await scrapeGc(sessions[0]!), true) || 'no GC' });
      console.log(`${p.name} x${CONC}: ${r.ops} requests counted`);
    }
    closeSessions(sessions);
  } finally {
    await server.stop();
  }
  const dumps = readDumps(dir, 'cg.out');
  if (KEEP) {
    // The dumps, for callgrind_annotate (JavaScript shows as unnamed addresses; native code by name).
    await mkdir(KEEP, { recursive: true });
    for (const f of readdirSync(dir)) if (f.startsWith('cg.out')) await copyFile(join(dir, f), join(KEEP, f));
  }
  await rm(dir, { recursive: true, force: true });
  console.log(`apiserver instructions per request (callgrind Ir after a warm-up, ${CONC} in flight; cli ${CLI})`);
  for (const row of rows) {
    const t = dumps.get(`phase${row.phase}`);
    if (!t) throw new Error(`no callgrind dump for ${row.name}`);
    const per = (n: number): string => (n / row.ops / 1000).toFixed(1).padStart(6);
    console.log(`  ${row.name.padEnd(24)} x${CONC}  main thread ${per(t.main)} kIr/op (${per(t.main - t.mainGc)} without GC)  all threads ${per(t.all)} kIr/op  ${row.gc}`);
  }
}

await main();

// Start-up of `corectl server --container-runtime=fake` on loopback: time from spawning the
// process to (a) the API server answering /readyz with 200 and (b) this node's Ready condition
// being True with a fresh heartbeat. Measured from outside, with the generated admin
// credentials, polling every 10 ms. First starts (new data dir: PKI generated, empty store)
// and restarts (same data dir) are reported separately, median of N runs each (default 3).
// Aims: /readyz < 1 s, node Ready < 3 s.
// Usage: node dist/bench/startup-cluster.bench.js [runs]
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadCoreconfig } from '../src/client/coreconfig.js';
import { RestClient } from '../src/client/rest-client.js';
import { Http2Transport, readBody } from '../src/client/transport.js';
import { freePort } from '../src/util/free-port.js';

const runs = Math.max(1, Number(process.argv[2] ?? 3) || 3);
const cli = fileURLToPath(new URL('../src/cli.js', import.meta.url));
const NODE = 'bench-node';
const DEADLINE_MS = 30_000;


const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function until<T>(what: string, child: ChildProcess, check: () => Promise<T | undefined>): Promise<T> {
  const end = Date.now() + DEADLINE_MS;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server exited (${child.exitCode}) before ${what}`);
    try {
      const v = await check();
      if (v !== undefined) return v;
    } catch { /* not yet */ }
    if (Date.now() > end) throw new Error(`${what} not reached within ${DEADLINE_MS} ms`);
    await pause(10);
  }
}

interface Sample { readyz: number; node: number }

async function once(dataDir: string): Promise<Sample> {
  const port = await freePort();
  const args = [
    `--data-dir=${dataDir}`, '--bind-address=127.0.0.1', `--secure-port=${port}`, `--node-name=${NODE}`,
    '--container-runtime=fake', `--nodeagent-arg=--port=${await freePort()}`, '--nodeagent-arg=--healthz-port=0',
  ];
  const t0 = performance.now();
  const startedWall = Math.floor(Date.now() / 1000) * 1000;
  const child = spawn(process.execPath, [
    '--input-type=module', '-e',
    `const m = await import(${JSON.stringify('file://' + cli)}); process.exitCode = await m.main(process.argv);`,
    'corectl', 'server', ...args,
  ], { stdio: ['ignore', process.env.BENCH_DEBUG ? 'inherit' : 'ignore', 'ignore'] });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const admin = join(dataDir, 'admin.coreconfig');
  let transport: Http2Transport | undefined;
  let client: RestClient | undefined;
  try {
    // On a restart the file of the last run is there until the server rewrites it (new port).
    const conn = await until('admin.coreconfig', child, async () => {
      if (!existsSync(admin)) return undefined;
      const c = await loadCoreconfig({ path: admin });
      return c.server.endsWith(`:${port}`) ? c : undefined;
    });
    transport = new Http2Transport(conn, { pingIntervalMs: 0 });
    const t = transport;
    const readyz = await until('/readyz 200', child, async () => {
      const res = await t.request({ method: 'GET', path: '/readyz', signal: AbortSignal.timeout(1000) });
      await readBody(res.body);
      return res.status === 200 ? performance.now() - t0 : undefined;
    });
    client = new RestClient({ connection: conn, contentType: 'application/json', maxRetries: 0, qps: 0 });
    const c = client;
    const node = await until('node Ready', child, async () => {
      const n = await c.get({ group: '', version: 'v1', resource: 'nodes' }, NODE) as { status?: { conditions?: Array<{ type?: string; status?: string; lastHeartbeatTime?: string }> } };
      const ok = (n.status?.conditions ?? []).some((x) => x.type === 'Ready' && x.status === 'True' && Date.parse(x.lastHeartbeatTime ?? '') >= startedWall);
      return ok ? performance.now() - t0 : undefined;
    });
    return { readyz, node };
  } finally {
    transport?.close();
    client?.close();
    child.kill('SIGTERM');
    const kill = setTimeout(() => child.kill('SIGKILL'), 20_000);
    await exited;
    clearTimeout(kill);
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? NaN;
}

function report(label: string, samples: Sample[]): void {
  const r = samples.map((s) => s.readyz);
  const n = samples.map((s) => s.node);
  const list = (xs: number[]): string => xs.map((x) => x.toFixed(0)).join(', ');
  console.log(`${label.padEnd(12)} /readyz median ${median(r).toFixed(0)} ms (runs: ${list(r)})   node Ready median ${median(n).toFixed(0)} ms (runs: ${list(n)})`);
}

const root = await mkdtemp(join(tmpdir(), 'corectl-bench-cluster-'));
try {
  console.log(`corectl server --container-runtime=fake: process start -> /readyz 200 (aim < 1000 ms), -> node Ready (aim < 3000 ms); ${runs} run(s) each`);
  const first: Sample[] = [];
  const again: Sample[] = [];
  for (let i = 0; i < runs; i++) {
    const dataDir = join(root, `run-${i}`);
    first.push(await once(dataDir));
    again.push(await once(dataDir));
  }
  report('first start', first);
  report('restart', again);
} finally {
  await rm(root, { recursive: true, force: true });
}

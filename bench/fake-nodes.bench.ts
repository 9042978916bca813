/**
 * Issue 7's node scale bench: how many `fake`-runtime nodes one API server sustains with 10 s
 * heartbeats without a false NotReady (aim: 5 000).
 *
 * `corectl apiserver` (LevelDB, temp dir) runs as one child process; the nodes run in a second
 * child (bench/lib-node/simulator-process.ts): each simulated node is the node agent's own
 * NodeStatusManager + NodeLease + pod informer on a shared fake runtime, with the agent's
 * default client options (its own HTTP/2 connection, --core-api-qps 5, protobuf), so on the
 * wire it does what `corectl nodeagent --container-runtime=fake` does with no pods: register,
 * post status once and then only on change (or every 5 min), renew its Lease every 10 s, and
 * hold a list+watch of its pods. CPU % is of one core. FAKENODES_PIN=1 pins the API server to CPU 0
 * and the simulator (and this process) to CPU 1 — clean on a quiet machine, but on a machine
 * shared with other work it leaves each pinned process one CPU's run queue, so it is off by default.
 *
 * We have no node-lifecycle controller yet, so "NotReady" is judged as that controller would
 * (--node-monitor-grace-period 40 s): this process watches the Leases and flags any node whose
 * Lease it has not seen renewed for more than 40 s.
 *
 * Steps up N (nodes are added to the running set, their start spread over ≥ 10 s), waits until
 * every node has registered and renewed, settles one renewal period, then measures for a fixed
 * window: Lease renewals per second (against N/10), API server CPU %, Lease PUT latency
 * p50/p99/max, oldest Lease age, nodes past 40 s. Stops at the first step that is not sustained.
 *
 * Run: node dist/bench/fake-nodes.bench.js      (default steps 500,1000,2000,5000, 60 s each, ~7 min)
 * Env: FAKENODES_STEPS=500,1000  FAKENODES_WINDOW_S=30  (quick mode)
 *      FAKENODES_AGENT_ARGS="--core-api-content-type=application/json ..." (node agent options)
 *      FAKENODES_PROFILE_DIR=<dir> (CPU profiles of the API server and the simulator, summarised)
 *      FAKENODES_NODES_PER_CONN=k (k nodes share one client/connection, k× the rate limits; default 1)
 *      FAKENODES_RAMP_PER_S=50 (new nodes started per second)
 *      FAKENODES_PIN=1 (pin, see above), BENCH_DEBUG=1 (API server log)
 */
import { fork, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { canPin } from './lib/children.js';
import { cpuSeconds, until } from './lib-cluster/processes.js';
import { summariseProfiles } from './lib-node/cpu-profile.js';
import { LeaseObserver } from './lib-node/lease-observer.js';
import { cpuStallMicros, machineLoad } from './lib-node/machine-load.js';
import type { SimRequest, SimStatsReply } from './lib-node/simulator-process.js';
import { Teardown } from './lib-node/teardown.js';
import { startBenchApiserver } from './lib-node/bench-apiserver.js';
import { pct } from './lib/closed-loop.js';

const CLI = fileURLToPath(new URL('../src/cli.js', import.meta.url));
const SIM = fileURLToPath(new URL('./lib-node/simulator-process.js', import.meta.url));
const STEPS = (process.env['FAKENODES_STEPS'] ?? '500,1000,2000,5000').split(',').map((s) => Number(s.trim())).filter((n) => Number.isInteger(n) && n > 0);
const WINDOW_S = Math.max(10, Number(process.env['FAKENODES_WINDOW_S'] ?? 60) || 60);
const AGENT_ARGS = (process.env['FAKENODES_AGENT_ARGS'] ?? '').split(/\s+/).filter(Boolean);
const AIM = 5000;
/** New nodes start at about this rate (a cluster does not boot thousands of nodes in the same second). */
const RAMP_PER_S = Math.max(1, Number(process.env['FAKENODES_RAMP_PER_S'] ?? 50) || 50);
const PER_CONN = Math.max(1, Number(process.env['FAKENODES_NODES_PER_CONN'] ?? 1) || 1);
const GRACE_MS = 40_000;
const RENEW_S = 10;
const verbose = Boolean(process.env['BENCH_DEBUG']);
// Diagnostic: FAKENODES_PROFILE_DIR=<dir> writes V8 CPU profiles of the API server and the simulator there.
const PROFILE_DIR = process.env['FAKENODES_PROFILE_DIR'] || undefined;
const profArgs = PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`] : [];

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function pin(pid: number | undefined, cpu: number): void {
  if (pid !== undefined) spawnSync('taskset', ['-a', '-cp', String(cpu), String(pid)], { stdio: 'ignore' });
}

async function rssMb(pid: number | undefined): Promise<number> {
  const s = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(s);
  return m ? Number(m[1]) / 1024 : NaN;
}

/** The simulator child and a request/reply helper over its IPC channel. */
function startSimulator(coreconfig: string, pinCpu: number | undefined): { child: ChildProcess; ask: (m: SimRequest, reply: string, timeoutMs: number) => Promise<Record<string, unknown>>; stop: () => Promise<void> } {
  const env = { ...process.env };
  delete env['NODE_OPTIONS'];
  const child = fork(SIM, [JSON.stringify({ coreconfig, agentArgs: AGENT_ARGS, nodesPerConnection: PER_CONN })], { execArgv: ['--max-old-space-size=8192', ...profArgs], env, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  if (pinCpu !== undefined) child.once('spawn', () => pin(child.pid, pinCpu));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const ask = (m: SimRequest, reply: string, timeoutMs: number): Promise<Record<string, unknown>> => new Promise((resolve, reject) => {
    const t = setTimeout(() => { child.off('message', on); reject(new Error(`simulator did not answer ${m.type} in ${timeoutMs} ms`)); }, timeoutMs);
    const on = (msg: Record<string, unknown>): void => {
      if (msg['type'] !== reply) return;
      clearTimeout(t);
      child.off('message', on);
      resolve(msg);
    };
    child.on('message', on);
    if (m.type !== 'stop' || child.connected) child.send(m);
  });
  return {
    child, ask,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      await ask({ type: 'stop' }, 'stopped', 60_000).catch(() => child.kill('SIGKILL'));
      const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(t);
    },
  };
}

interface Row {
  n: number; up: boolean; hbPerS: number; apiCpuPct: number; simCpuPct: number; p50: number; p99: number; max: number;
  maxAgeS: number; stale: number; leaseFail: number; statusPosts: number; statusFail: number; apiRssMb: number; simLoopP99: number; simLoopMax: number;
  /** Share of the window in which some task on the machine waited for a CPU (PSI). */
  cpuPressurePct: number;
}

function printRow(r: Row): void {
  const f = (x: number, d = 0): string => (Number.isFinite(x) ? x.toFixed(d) : '-');
  console.log([
    String(r.n).padStart(6), `${f(r.hbPerS)}/${f(r.n / RENEW_S)}`.padStart(11), `${f(r.apiCpuPct)}%`.padStart(7), `${f(r.simCpuPct)}%`.padStart(7),
    `${f(r.p50, 1)}`.padStart(8), `${f(r.p99, 1)}`.padStart(8), `${f(r.max, 0)}`.padStart(7), `${f(r.maxAgeS, 1)}`.padStart(8), String(r.stale).padStart(6),
    `${r.leaseFail}/${r.statusFail}`.padStart(8), String(r.statusPosts).padStart(6), `${f(r.apiRssMb)}`.padStart(7), `${f(r.simLoopP99)}/${f(r.simLoopMax)}`.padStart(10),
    r.up ? (r.stale === 0 ? '  ok' : '  NOT sustained') : '  did not come up',
  ].join(' '));
}

async function main(): Promise<void> {
  const teardown = new Teardown();
  const ac = new AbortController();
  const pinning = process.env['FAKENODES_PIN'] === '1' && canPin(cpus().length);
  try {
    const dir = await mkdtemp(join(tmpdir(), 'corectl-bench-fakenodes-'));
    teardown.add('temp dir', () => rm(dir, { recursive: true, force: true }));
    const { daemon: api, nodeCfg, transport, client } = await startBenchApiserver({ cliFile: CLI, dir, nodeUser: 'system:node:fake-nodes', verbose, nodeArgs: profArgs }, teardown);
    if (pinning) { pin(api.child.pid, 0); pin(process.pid, 1); }
    await until('namespace kube-node-lease', async () => (await client.get({ group: '', version: 'v1', resource: 'namespaces' }, 'kube-node-lease')) ? true : undefined, 30_000, [api]);

    const observer = new LeaseObserver(client, GRACE_MS);
    const watching = await observer.run(ac.signal);
    teardown.add('lease watch', () => { ac.abort(); return watching.done; });
    const sim = startSimulator(nodeCfg, pinning ? 1 : undefined);
    teardown.add('simulator', () => sim.stop());
    await sim.ask({ type: 'stats' }, 'stats', 30_000);

    console.log(`fake nodes with 10 s heartbeats (Lease renew every ${RENEW_S} s, status on change / 5 min, pod watch per node), NotReady = Lease unseen > ${GRACE_MS / 1000} s; steps ${STEPS.join(', ')}, ${WINDOW_S} s window each; ${machineLoad()}${pinning ? ' (API server on CPU 0, simulator on CPU 1)' : ''}${AGENT_ARGS.length ? `; agent args ${AGENT_ARGS.join(' ')}` : ''}`);
    console.log('     N   renew/s(exp)  apiCPU  simCPU  PUT p50  PUT p99  max ms  oldest s  >40 s  failed l/s status  apiMB  simLag ms  cpuPSI  verdict');
    let best = 0;
    let prev = 0;
    for (const n of STEPS) {
      const spreadMs = Math.max(RENEW_S * 1000, ((n - prev) / RAMP_PER_S) * 1000);
      await sim.ask({ type: 'scale', n, spreadMs }, 'scaled', 30_000);
      prev = n;
      let up = true;
      try {
        let lastNote = performance.now();
        const acc = { ok: 0, failed: 0, lag: 0 };
        await until(`${n} nodes registered and renewing`, async () => {
          const s = await sim.ask({ type: 'stats' }, 'stats', 30_000) as unknown as SimStatsReply;
          acc.ok += s.leaseOk;
          acc.failed += s.leaseFail + s.statusFail;
          acc.lag = Math.max(acc.lag, s.loopDelayMaxMs);
          if (performance.now() - lastNote > 15_000) {
            lastNote = performance.now();
            console.log(`  ... ${s.registered}/${n} registered, ${observer.renewedCount('fake-node-')} Leases seen; last 15 s: ${acc.ok} Lease writes, ${acc.failed} failed writes, simulator loop lag max ${acc.lag.toFixed(0)} ms`);
            acc.ok = acc.failed = acc.lag = 0;
          }
          return s.registered >= n && observer.renewedCount('fake-node-') >= n ? true : undefined;
        }, spreadMs + 60_000, [api]);
      } catch (e) {
        console.log(`  ${(e as Error).message}`);
        up = false;
      }
      if (up) await sleep(RENEW_S * 1000); // one full renewal period in steady state
      await sim.ask({ type: 'stats' }, 'stats', 30_000);
      observer.takeWindow();
      const windowS = up ? WINDOW_S : Math.min(WINDOW_S, 20); // a step that never came up gets a short look
      const [a0, s0] = await Promise.all([cpuSeconds(api.child.pid), cpuSeconds(sim.child.pid)]);
      const stall0 = cpuStallMicros();
      const t0 = performance.now();
      await sleep(windowS * 1000);
      const secs = (performance.now() - t0) / 1000;
      const stall1 = cpuStallMicros();
      const [a1, s1] = await Promise.all([cpuSeconds(api.child.pid), cpuSeconds(sim.child.pid)]);
      const st = await sim.ask({ type: 'stats' }, 'stats', 30_000) as unknown as SimStatsReply;
      const w = observer.takeWindow();
      const lat = [...st.leaseLatency].sort((a, b) => a - b);
      const row: Row = {
        n, up, hbPerS: st.leaseOk / secs, apiCpuPct: a0 !== undefined && a1 !== undefined ? (100 * (a1 - a0)) / secs : NaN,
        simCpuPct: s0 !== undefined && s1 !== undefined ? (100 * (s1 - s0)) / secs : NaN,
        p50: pct(lat, 50), p99: pct(lat, 99), max: lat[lat.length - 1] ?? NaN, maxAgeS: w.maxAgeMs / 1000, stale: w.stale.length,
        leaseFail: st.leaseFail, statusPosts: st.statusPosts, statusFail: st.statusFail, apiRssMb: await rssMb(api.child.pid),
        simLoopP99: st.loopDelayP99Ms, simLoopMax: st.loopDelayMaxMs,
        cpuPressurePct: stall0 !== undefined && stall1 !== undefined ? (stall1 - stall0) / 1e4 / secs : NaN,
      };
      printRow(row);
      if (!up || row.stale > 0) break;
      best = n;
    }
    console.log(`largest N sustained: ${best || 'none'} (aim ${AIM})${best >= AIM ? ' — meets aim' : ' — below aim'}; at the end: ${machineLoad()}`);
  } finally {
    await teardown.run();
  }
  if (PROFILE_DIR) await summariseProfiles(PROFILE_DIR, 15);
}

await main();

/**
 * Pod start latency through the runtime backend: RunPodSandbox + CreateContainer +
 * StartContainer, then ContainerStatus polled until RUNNING.
 *   - CRI on a private containerd (needs root, containerd, runc, busybox-static, CNI plugins):
 *     20 pods one after another, p50/p99 and each step's median.
 *   - the fake runtime: 5000 pods, 64 in flight, pods per second, without and with log files.
 * Run: node dist/bench/cri.bench.js   (about 30 s with containerd; `--fake-only` skips it)
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { PodSandboxConfig, RuntimeBackend } from '../src/daemons/nodeagent/runtime/runtime.js';
import { CriRuntime } from '../src/daemons/nodeagent/runtime/cri/cri-runtime.js';
import { FakeRuntime } from '../src/daemons/nodeagent/runtime/fake/fake-runtime.js';
import { containerdSkipReason, startContainerd } from '../test/helpers/containerd.js';
import { BUSYBOX_IMAGE } from '../test/helpers/oci-image.js';
import { pct } from './lib/closed-loop.js';

const median = (xs: number[]): number => pct([...xs].sort((a, b) => a - b), 50);

interface Steps { sandbox: number; create: number; start: number; running: number; total: number }

async function startPod(rt: RuntimeBackend, i: number, logRoot: string | undefined): Promise<Steps> {
  const sc: PodSandboxConfig = {
    metadata: { name: `bench-${i}`, uid: `uid-bench-${i}`, namespace: 'bench' }, hostname: `bench-${i}`,
    ...(logRoot ? { logDirectory: join(logRoot, `bench_bench-${i}`) } : {}),
  };
  const t0 = performance.now();
  const sid = await rt.runPodSandbox(sc);
  const t1 = performance.now();
  const cid = await rt.createContainer(sid, { metadata: { name: 'c' }, image: BUSYBOX_IMAGE, command: ['sleep', '3600'], logPath: 'c/0.log' }, sc);
  const t2 = performance.now();
  await rt.startContainer(cid);
  const t3 = performance.now();
  for (let delay = 1; (await rt.containerStatus(cid)).state !== 'running'; delay = Math.min(delay * 2, 50)) await sleep(delay);
  const t4 = performance.now();
  return { sandbox: t1 - t0, create: t2 - t1, start: t3 - t2, running: t4 - t3, total: t4 - t0 };
}

async function removeAll(rt: RuntimeBackend): Promise<void> {
  for (const p of await rt.listPodSandbox()) {
    await rt.stopPodSandbox(p.id);
    await rt.removePodSandbox(p.id);
  }
}

async function benchContainerd(): Promise<void> {
  const skip = containerdSkipReason();
  if (skip) { console.log(`containerd: skipped (${skip})`); return; }
  const ctrd = await startContainerd();
  const rt = new CriRuntime({ endpoint: ctrd.endpoint });
  try {
    await startPod(rt, -1, join(ctrd.dir, 'logs')); // warm-up: first snapshot, CNI plugin cache
    await removeAll(rt);
    const steps: Steps[] = [];
    for (let i = 0; i < 20; i++) steps.push(await startPod(rt, i, join(ctrd.dir, 'logs')));
    const totals = steps.map((s) => s.total).sort((a, b) => a - b);
    console.log(`containerd pod start (20 pods, sequential): p50 ${pct(totals, 50).toFixed(1)} ms  p99 ${pct(totals, 99).toFixed(1)} ms`);
    console.log(`  median steps: runPodSandbox ${median(steps.map((s) => s.sandbox)).toFixed(1)} ms, createContainer ${median(steps.map((s) => s.create)).toFixed(1)} ms, startContainer ${median(steps.map((s) => s.start)).toFixed(1)} ms, until RUNNING ${median(steps.map((s) => s.running)).toFixed(1)} ms`);
    const t0 = performance.now();
    await removeAll(rt);
    console.log(`  stop+remove 20 pods: ${(performance.now() - t0).toFixed(0)} ms`);
  } finally {
    await rt.close();
    await ctrd.stop();
  }
}

async function benchFake(withLogs: boolean): Promise<void> {
  const logRoot = withLogs ? await mkdtemp(join(tmpdir(), 'corectl-fake-bench-')) : undefined;
  const rt = new FakeRuntime();
  const N = 5000;
  const IN_FLIGHT = 64;
  try {
    const lat: number[] = [];
    let next = 0;
    const t0 = performance.now();
    await Promise.all(Array.from({ length: IN_FLIGHT }, async () => {
      while (next < N) lat.push((await startPod(rt, next++, logRoot)).total);
    }));
    const secs = (performance.now() - t0) / 1000;
    lat.sort((a, b) => a - b);
    console.log(`fake runtime: ${N} pods in ${secs.toFixed(2)} s = ${(N / secs).toFixed(0)} pods/s (${IN_FLIGHT} in flight, ${withLogs ? 'with' : 'without'} log files); p50 ${pct(lat, 50).toFixed(2)} ms p99 ${pct(lat, 99).toFixed(2)} ms`);
    const t1 = performance.now();
    await removeAll(rt);
    console.log(`  stop+remove ${N} pods: ${(performance.now() - t1).toFixed(0)} ms`);
  } finally {
    await rt.close();
    if (logRoot) await rm(logRoot, { recursive: true, force: true });
  }
}

if (process.argv[2] !== "--fake-only") await benchContainerd();
await benchFake(false);
await benchFake(true);

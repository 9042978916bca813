/**
 * Issue 7's pod start latency on containerd: a private containerd, `corectl apiserver` (LevelDB
 * in a temp dir) and `corectl nodeagent --container-runtime=remote` as child processes. Busybox
 * pods (`sleep 3600`, restartPolicy Never) are created already bound to the node (spec.nodeName,
 * no scheduler); each pod's latency is create → the watch event that shows phase Running.
 * Rows, each of PODSTART_PODS (50) pods: one at a time, PODSTART_IN_FLIGHT (10) in flight (a new pod is created
 * when one reaches Running), then all created at once. The pods of a row are deleted (and their
 * sandboxes gone) before the next row. Aim: p99 ≤ 1 s (containerd alone ~0.2 s per pod here).
 *
 * Printed, in order:
 *  1. the floor: the same pods started straight through CRI with the same concurrency, before
 *     any agent runs (bench/lib-node/cri-baseline.ts);
 *  2. the node agent with its reference defaults (--core-api-qps 5, --core-api-burst 10,
 *     --event-qps 5): events and pod status share that client budget;
 *  3. the node agent restarted with current Kubernetes client limits (qps 50 / burst 100).
 * Each agent row also shows create → the agent's first pod status, the agent's and API server's
 * CPU seconds, delete → gone, and the API requests the row caused (apiserver_request_total).
 * The first pod of each agent (connections, caches) is a warm-up and is not counted.
 *
 * Run: node dist/bench/pod-start.bench.js   (about 1.5–3.5 min depending on load; needs root,
 *      containerd, runc, busybox-static and the CNI plugins, else it prints one line and skips)
 * Env: PODSTART_PODS=50, PODSTART_IN_FLIGHT=10, PODSTART_AGENT_ARGS="--core-api-qps=50 ..."
 *      (run only one agent section, with these options), PODSTART_PROFILE_DIR=<dir> (V8 CPU
 *      profile of the node agent, summarised at the end), BENCH_DEBUG=1 (daemon logs).
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isApiError } from '../src/api/meta/status.js';
import type { KubeObject } from '../src/api/resources/types.js';
import type { ResourceRef } from '../src/client/rest-client.js';
import { containerdSkipReason } from '../test/helpers/containerd.js';
import { BUSYBOX_IMAGE } from '../test/helpers/oci-image.js';
import { cpuSeconds, until, type Daemon } from './lib-cluster/processes.js';
import { diffCounts, groupCounts, scrapeRequestTotals } from './lib-cluster/request-metrics.js';
import { startContainerdNode, type ContainerdNode } from './lib-node/containerd-node.js';
import { summariseProfiles } from './lib-node/cpu-profile.js';
import { criBaseline } from './lib-node/cri-baseline.js';
import { machineLoad } from './lib-node/machine-load.js';
import { PodTracker } from './lib-node/pod-tracker.js';
import { Teardown } from './lib-node/teardown.js';
import { pct } from './lib/closed-loop.js';

const CLI = fileURLToPath(new URL('../src/cli.js', import.meta.url));
const NODE = 'podbench-node';
const NS = 'podbench';
const PODS: ResourceRef = { group: '', version: 'v1', resource: 'pods', namespace: NS };
const COUNT = Math.max(1, Number(process.env['PODSTART_PODS'] ?? 50) || 50);
const IN_FLIGHT = Math.max(1, Number(process.env['PODSTART_IN_FLIGHT'] ?? 10) || 10);
const AGENT_ARGS = (process.env['PODSTART_AGENT_ARGS'] ?? '').split(/\s+/).filter(Boolean);
const PROFILE_DIR = process.env['PODSTART_PROFILE_DIR'] || undefined;
const AIM_P99_MS = 1000;
const POD_DEADLINE_MS = 120_000;

const daemons = (node: ContainerdNode): Daemon[] => [node.apiserver, ...(node.agent() ? [node.agent() as Daemon] : [])];
const ms = (x: number): string => (Number.isFinite(x) ? `${x.toFixed(0)} ms` : '-');

function pod(name: string): KubeObject {
  return {
    apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: NS, labels: { bench: 'pod-start' } },
    spec: {
      nodeName: NODE, restartPolicy: 'Never', terminationGracePeriodSeconds: 1,
      containers: [{ name: 'sleep', image: BUSYBOX_IMAGE, imagePullPolicy: 'IfNotPresent', command: ['sleep', '3600'] }],
    },
  } as KubeObject;
}

/** Creates `names` with at most `inFlight` pods between create and Running at any time. */
async function startPods(node: ContainerdNode, tracker: PodTracker, names: string[], inFlight: number): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(inFlight, names.length) }, async () => {
    while (next < names.length) {
      const name = names[next++] as string;
      tracker.expect(name);
      await node.client.create(PODS, pod(name));
      await tracker.waitRunning(name, POD_DEADLINE_MS);
    }
  }));
}

/** Deletes the pods and waits until the API and containerd no longer have them. */
async function deletePods(node: ContainerdNode, tracker: PodTracker, names: string[]): Promise<number> {
  const t0 = performance.now();
  await Promise.all(names.map(async (n) => {
    try { await node.client.delete(PODS, n); } catch (e) { if (!isApiError(e) || e.status.code !== 404) throw e; }
  }));
  await until('pods deleted from the API', async () => (names.some((n) => tracker.present.has(n)) ? undefined : true), POD_DEADLINE_MS, daemons(node));
  await until('sandboxes removed from containerd', async () => {
    const left = (await node.cri.listPodSandbox()).filter((s) => s.metadata.namespace === NS);
    return left.length === 0 ? true : undefined;
  }, POD_DEADLINE_MS, daemons(node));
  return performance.now() - t0;
}

interface RowResult { label: string; lat: number[]; first: number[]; missing: number; cpuAgent?: number; cpuApi?: number; requests: Array<[string, number]>; deleteMs: number }

async function row(node: ContainerdNode, tracker: PodTracker, label: string, prefix: string, inFlight: number): Promise<RowResult> {
  const names = Array.from({ length: COUNT }, (_, i) => `${prefix}-${String(i).padStart(3, '0')}`);
  const before = await scrapeRequestTotals(node.transport);
  const [a0, s0] = await Promise.all([cpuSeconds(node.agent()?.child.pid), cpuSeconds(node.apiserver.child.pid)]);
  await startPods(node, tracker, names, inFlight);
  const [a1, s1] = await Promise.all([cpuSeconds(node.agent()?.child.pid), cpuSeconds(node.apiserver.child.pid)]);
  const after = await scrapeRequestTotals(node.transport);
  const lat = tracker.runningMs(names).filter((x): x is number => x !== undefined).sort((a, b) => a - b);
  const first = tracker.firstStatusMs(names).filter((x): x is number => x !== undefined).sort((a, b) => a - b);
  for (const f of tracker.failures(names)) console.log(`  ! ${f}`);
  const deleteMs = await deletePods(node, tracker, names);
  const requests = groupCounts(diffCounts(before, after), (verb, resource) => `${verb} ${resource}`);
  return {
    label, lat, first, missing: names.length - lat.length, requests, deleteMs,
    ...(a0 !== undefined && a1 !== undefined ? { cpuAgent: a1 - a0 } : {}),
    ...(s0 !== undefined && s1 !== undefined ? { cpuApi: s1 - s0 } : {}),
  };
}

function latencyLine(label: string, l: number[], missing: number): string {
  const verdict = missing ? `${missing} pods never Running` : pct(l, 99) <= AIM_P99_MS ? 'meets aim' : 'over aim';
  return `  ${label.padEnd(20)} p50 ${ms(pct(l, 50)).padStart(8)}  p90 ${ms(pct(l, 90)).padStart(8)}  p99 ${ms(pct(l, 99)).padStart(8)}  max ${ms(l[l.length - 1] ?? NaN).padStart(8)}   (aim p99 ≤ ${AIM_P99_MS} ms: ${verdict})`;
}

function print(r: RowResult): void {
  console.log(latencyLine(r.label, r.lat, r.missing));
  console.log(`  ${''.padEnd(20)} create → agent's first pod status p50 ${ms(pct(r.first, 50))} p99 ${ms(pct(r.first, 99))}; CPU agent ${r.cpuAgent?.toFixed(2) ?? '?'} s, apiserver ${r.cpuApi?.toFixed(2) ?? '?'} s; delete → gone ${ms(r.deleteMs)}`);
  console.log(`  ${''.padEnd(20)} API requests: ${r.requests.slice(0, 6).map(([k, n]) => `${k} ${n}`).join(', ')}`);
}


async function main(): Promise<void> {
  const skip = containerdSkipReason();
  if (skip) { console.log(`pod-start: skipped (${skip})`); return; }
  const teardown = new Teardown();
  const ac = new AbortController();
  teardown.add('watch', () => ac.abort());
  const sections: Array<{ label: string; args: string[] }> = AGENT_ARGS.length
    ? [{ label: `node agent with ${AGENT_ARGS.join(' ')}`, args: AGENT_ARGS }]
    : [
      { label: 'node agent, reference defaults (--core-api-qps=5 --core-api-burst=10, --event-qps=5)', args: [] },
      { label: 'node agent, client limits of current Kubernetes (--core-api-qps=50 --core-api-burst=100 --event-qps=50 --event-burst=100)', args: ['--core-api-qps=50', '--core-api-burst=100', '--event-qps=50', '--event-burst=100'] },
    ];
  try {
    console.log(`pod start latency on containerd: ${COUNT} busybox pods per row (one at a time, ${IN_FLIGHT} in flight, then all at once), create → watch shows Running; ${machineLoad()}`);
    const node = await startContainerdNode({
      cliFile: CLI, nodeName: NODE, namespace: NS, verbose: Boolean(process.env['BENCH_DEBUG']),
      ...(PROFILE_DIR ? { agentNodeArgs: ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`] } : {}),
    }, teardown);

    // The floor: containerd through CRI, no agent running (it would remove these sandboxes).
    await criBaseline(node.cri, BUSYBOX_IMAGE, 1, 1, join(node.dir, 'cri-logs')); // warm-up: snapshot, CNI
    console.log('containerd through CRI directly (RunPodSandbox … ContainerStatus RUNNING), no agent:');
    for (const inFlight of [1, IN_FLIGHT, COUNT]) {
      const b = await criBaseline(node.cri, BUSYBOX_IMAGE, COUNT, inFlight, join(node.dir, 'cri-logs'));
      console.log(latencyLine(`${inFlight === COUNT ? `${COUNT} at once` : inFlight === 1 ? 'one at a time' : `${inFlight} in flight`}`, b.lat, COUNT - b.lat.length) + `  [RunPodSandbox p50 ${ms(pct(b.sandboxMs, 50))}]`);
    }

    await node.client.create({ group: '', version: 'v1', resource: 'namespaces' }, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    const tracker = new PodTracker(node.client, PODS);
    const watching = await tracker.start(ac.signal);
    teardown.add('watch loop', () => { ac.abort(); return watching.done; });

    for (const [i, section] of sections.entries()) {
      await node.startAgent(section.args);
      console.log(`${section.label}:`);
      // Warm-up: the agent's first pod (connections, caches) is not counted.
      const warmName = `warmup-${i}`;
      tracker.expect(warmName);
      await node.client.create(PODS, pod(warmName));
      const warm = await tracker.waitRunning(warmName, POD_DEADLINE_MS);
      await deletePods(node, tracker, [warmName]);
      console.log(`  warm-up pod: ${warm ? ms(tracker.runningMs([warmName])[0] ?? NaN) : 'did not reach Running'}`);
      print(await row(node, tracker, 'one at a time', `s${i}s`, 1));
      print(await row(node, tracker, `${IN_FLIGHT} in flight`, `s${i}a`, IN_FLIGHT));
      print(await row(node, tracker, `${COUNT} at once`, `s${i}b`, COUNT));
    }
    console.log(`at the end: ${machineLoad()}`);
  } finally {
    await teardown.run();
  }
  if (PROFILE_DIR) await summariseProfiles(PROFILE_DIR, 20);
}

await main();

/**
 * The scheduler: time to bind 1000 pending pods on 100 nodes, pods/s.
 *
 *  1. in-process decisions only: filters + scores + assume over 100 NodeInfos (no API);
 *  2. end to end: 100 Ready nodes and 1000 pending pods (requests, 10 owners) created through
 *     a real API server with the in-flight limits off, then the scheduler (client qps
 *     unlimited, no leader election) starts; timed from start until a watch has seen every
 *     pod bound. Event writes run alongside, as in production.
 * Run: node dist/bench/scheduler.bench.js   (15 to 30 s)
 */
import { pino } from 'pino';
import { loadCoreconfig } from '../src/client/coreconfig.js';
import { SharedInformerFactory } from '../src/client/informer-factory.js';
import { RestClient } from '../src/client/rest-client.js';
import { schedulePod } from '../src/daemons/scheduler/algorithm.js';
import { SchedulerCache } from '../src/daemons/scheduler/cache.js';
import { run } from '../src/daemons/scheduler/main.js';
import { newPodInfo } from '../src/daemons/scheduler/node-info.js';
import { parseSchedulerArgs } from '../src/flags/scheduler.js';
import { startApiserver } from '../test/helpers/apiserver.js';
import { createNode, createPod } from '../test/scheduler/cluster.js';
import { makeNode, makePod } from '../test/scheduler/fixtures.js';

const NODES = 100;
const PODS = 1000;
const IN_FLIGHT = 64;

const nodes = Array.from({ length: NODES }, (_, i) => makeNode(`node-${String(i).padStart(3, '0')}`, { cpu: '32', memory: '64Gi', labels: { zone: `z${i % 3}` } }));
const pods = Array.from({ length: PODS }, (_, i) => makePod(`pod-${String(i).padStart(4, '0')}`, { cpu: '100m', memory: '128Mi', owner: `rs-${i % 10}` }));

function line(name: string, n: number, seconds: number): void {
  console.log(`${name.padEnd(46)} ${String(n).padStart(5)} pods  ${seconds.toFixed(3).padStart(8)} s  ${(n / seconds).toFixed(0).padStart(8)} pods/s`);
}

// 1. Decisions only.
{
  const cache = new SchedulerCache();
  for (const n of nodes) cache.setNode(n);
  const t0 = performance.now();
  for (const p of pods) {
    const r = schedulePod(newPodInfo(p), cache.listNodes());
    if (!r.ok) throw new Error(r.message);
    cache.assume(p, r.node);
  }
  line('decide + assume (no API), 100 nodes', PODS, (performance.now() - t0) / 1000);
}

// 2. End to end through the API server.
const api = await startApiserver({ args: ['--max-requests-inflight=0', '--max-mutating-requests-inflight=0'] });
const client = new RestClient({ connection: await loadCoreconfig({ path: api.coreconfigPath }), qps: 0 });
try {
  for (let i = 0; i < nodes.length; i += IN_FLIGHT) await Promise.all(nodes.slice(i, i + IN_FLIGHT).map((n) => createNode(client, n)));
  for (let i = 0; i < pods.length; i += IN_FLIGHT) await Promise.all(pods.slice(i, i + IN_FLIGHT).map((p) => createPod(client, p)));

  const watchStop = new AbortController();
  const informers = new SharedInformerFactory({ client, minResyncPeriodMs: 0 });
  const bound = informers.informerFor({ group: '', version: 'v1', resource: 'pods', fieldSelector: 'spec.nodeName!=' });
  let done!: () => void;
  const allBound = new Promise<void>((r) => { done = r; });
  bound.addEventHandler({ onAdd: () => { if (bound.indexer.size >= PODS) done(); } });
  informers.start(watchStop.signal);
  await informers.waitForCacheSync(watchStop.signal);

  const { config } = parseSchedulerArgs([`--coreconfig=${api.coreconfigPath}`, '--leader-elect=false', '--port=0', '--core-api-qps=0', '--core-api-burst=1000']);
  const stop = new AbortController();
  const t0 = performance.now();
  const running = run(config, { log: pino({ level: 'silent' }), signal: stop.signal });
  const timeout = setTimeout(() => { console.error('timed out after 120 s'); stop.abort(); done(); }, 120_000);
  await allBound;
  const seconds = (performance.now() - t0) / 1000;
  clearTimeout(timeout);
  line(`bind through the API (${NODES} nodes, start to all bound)`, bound.indexer.size, seconds);
  const perNode = new Map<string, number>();
  for (const p of bound.indexer.list()) {
    const n = (p.spec as { nodeName: string }).nodeName;
    perNode.set(n, (perNode.get(n) ?? 0) + 1);
  }
  const counts = [...perNode.values()];
  console.log(`pods per node: min ${Math.min(...counts)}, max ${Math.max(...counts)} over ${perNode.size} nodes`);
  stop.abort();
  await running;
  const events = await client.list({ group: '', version: 'v1', resource: 'events', namespace: 'default' }, { fieldSelector: 'reason=Scheduled' });
  console.log(`Scheduled events written: ${(events.items ?? []).length} of ${PODS}`);
  watchStop.abort();
  await informers.stopped();
} finally {
  client.close();
  await api.stop();
}

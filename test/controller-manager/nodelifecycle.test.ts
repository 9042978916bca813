import t from 'tap';
import { pino } from 'pino';
import type { KubeObject } from '../../src/api/resources/types.js';
import { ManualClock } from '../../src/client/clock.js';
import type { ResourceRef, RestClient } from '../../src/client/rest-client.js';
import { NodeLifecycleController } from '../../src/daemons/controller-manager/controllers/nodelifecycle.js';
import { assessNodeHealth, MSG_NEVER, MSG_STOPPED } from '../../src/daemons/controller-manager/controllers/nodelifecycle/node-conditions.js';
import { RateLimitedTimedQueue } from '../../src/daemons/controller-manager/controllers/nodelifecycle/rate-limited-queue.js';
import { matchingTolerations, minTolerationMs } from '../../src/daemons/controller-manager/controllers/nodelifecycle/taint-eviction.js';
import { noScheduleTaintDiff, swappedTaints, type Taint } from '../../src/daemons/controller-manager/controllers/nodelifecycle/taints.js';
import { ZoneEvictors } from '../../src/daemons/controller-manager/controllers/nodelifecycle/zone-evictors.js';
import { computeZoneState, zoneEvictionRate, zoneKey } from '../../src/daemons/controller-manager/controllers/nodelifecycle/zones.js';
import { NodeLease } from '../../src/daemons/nodeagent/lease.js';
import { assertSelectable, startControllers, waitFor } from './fixtures/controller-harness.js';

const NODES: ResourceRef = { group: '', version: 'v1', resource: 'nodes' };
const PODS: ResourceRef = { group: '', version: 'v1', resource: 'pods', namespace: 'default' };
const EVENTS: ResourceRef = { group: '', version: 'v1', resource: 'events', namespace: 'default' };
const DAEMONSETS: ResourceRef = { group: 'apps', version: 'v1', resource: 'daemonsets', namespace: 'default' };

/** Small periods instead of the reference's 5 s / 40 s / 5 min. */
const FAST = ['--node-monitor-period=100ms', '--node-monitor-grace-period=2s', '--node-startup-grace-period=2s', '--pod-eviction-timeout=1s'];
const TAINT_GATES = '--feature-gates=TaintBasedEvictions=true,TaintNodesByCondition=true';

type Dict = Record<string, unknown>;
interface Cond { type: string; status: string; reason?: string; message?: string; lastHeartbeatTime?: string }

const stamp = (ms = Date.now()): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

function conditions(ready: string, heartbeat = stamp()): Cond[] {
  return [
    { type: 'MemoryPressure', status: 'False', reason: 'NodeagentHasSufficientMemory', lastHeartbeatTime: heartbeat },
    { type: 'DiskPressure', status: 'False', reason: 'NodeagentHasNoDiskPressure', lastHeartbeatTime: heartbeat },
    { type: 'PIDPressure', status: 'False', reason: 'NodeagentHasSufficientPID', lastHeartbeatTime: heartbeat },
    { type: 'Ready', status: ready, reason: 'NodeagentReady', lastHeartbeatTime: heartbeat },
  ].map((c) => ({ ...c, lastTransitionTime: heartbeat }));
}

/** A node with fresh conditions (`null`: one that never posted any). */
function node(name: string, labels: Record<string, string> = {}, conds: Cond[] | null = conditions('True')): KubeObject {
  return { apiVersion: 'v1', kind: 'Node', metadata: { name, labels }, ...(conds ? { status: { conditions: conds } } : {}) };
}

const condOf = (n: KubeObject, type: string): Cond | undefined => (((n.status ?? {}) as { conditions?: Cond[] }).conditions ?? []).find((c) => c.type === type);
const taintsOf = (n: KubeObject): Taint[] => (((n.spec ?? {}) as { taints?: Taint[] }).taints ?? []);
const podReady = (p: KubeObject): string | undefined => (((p.status ?? {}) as { conditions?: Cond[] }).conditions ?? []).find((c) => c.type === 'Ready')?.status;

/** A running pod on `nodeName` whose Ready condition is True. */
async function runningPod(client: RestClient, name: string, nodeName: string, extra: { labels?: Record<string, string>; tolerations?: Dict[] } = {}): Promise<void> {
  await client.create(PODS, {
    apiVersion: 'v1', kind: 'Pod', metadata: { name, labels: extra.labels ?? {} },
    spec: { nodeName, containers: [{ name: 'c', image: 'x:1' }], ...(extra.tolerations ? { tolerations: extra.tolerations } : {}) },
  });
  await client.patch(PODS, name, 'merge', { status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: stamp() }] } }, { subresource: 'status' });
}

/** The pod is being deleted (or gone); the object while it lingers, true once gone. */
async function evicted(client: RestClient, name: string): Promise<KubeObject | true | undefined> {
  try {
    const p = await client.get(PODS, name);
    return p.metadata?.deletionTimestamp ? p : undefined;
  } catch (e) {
    if ((e as { code?: number }).code === 404) return true;
    throw e;
  }
}

async function isEvicted(client: RestClient, name: string): Promise<boolean> { return (await evicted(client, name)) !== undefined; }

/** Renews the node's Lease in kube-node-lease like a node agent does, until stopped. */
function startLease(client: RestClient, nodeName: string): () => void {
  const ac = new AbortController();
  void new NodeLease({ client, nodeName, nodeUid: () => '', renewIntervalMs: 200, log: pino({ level: 'silent' }) }).run(ac.signal);
  return () => ac.abort();
}

/** Waits until the controller has done `n` more monitor passes and zone-queue passes. */
async function passes(ctl: NodeLifecycleController, n: number): Promise<void> {
  const m = ctl.monitorPasses + n; const e = ctl.evictionPasses + n;
  await waitFor(`${n} more passes`, async () => ctl.monitorPasses >= m && ctl.evictionPasses >= e);
}

async function eventReasons(client: RestClient, involved: string): Promise<string[]> {
  return (await client.list(EVENTS)).items.filter((e) => (e.involvedObject as { name?: string }).name === involved).map((e) => String(e.reason));
}

t.test('--controllers selects nodelifecycle (on by default, implemented)', async (t) => {
  await assertSelectable(t, 'nodelifecycle');
});

t.test('zones: keys, states and eviction rates', async (t) => {
  t.equal(zoneKey(node('a')), '', 'unlabeled nodes share one zone');
  t.equal(zoneKey(node('a', { 'topology.kubernetes.io/zone': 'z1', 'topology.kubernetes.io/region': 'r' })), 'r:\u0000:z1');
  t.equal(zoneKey(node('a', { 'failure-domain.beta.kubernetes.io/zone': 'z1' })), ':\u0000:z1', 'the beta labels count too');
  const c = (status: string): Cond => ({ type: 'Ready', status });
  t.same(computeZoneState([c('True'), c('Unknown'), c('False')], 0.55), { notReady: 2, state: 'Normal' }, 'at most 2 not ready: normal');
  t.same(computeZoneState([c('True'), c('Unknown'), c('False'), undefined], 0.55), { notReady: 3, state: 'PartialDisruption' });
  t.same(computeZoneState([c('True'), c('True'), c('False'), c('False'), c('False'), c('True'), c('True')], 0.55).state, 'Normal', '3 of 7 is below the threshold');
  t.same(computeZoneState([c('Unknown')], 0.55), { notReady: 1, state: 'FullDisruption' });
  const rates = { healthy: 0.1, secondary: 0.01, largeClusterThreshold: 50 };
  t.equal(zoneEvictionRate('Normal', 10, rates), 0.1);
  t.equal(zoneEvictionRate('FullDisruption', 10, rates), 0.1, 'one fully disrupted zone among others evicts at the normal rate');
  t.equal(zoneEvictionRate('PartialDisruption', 51, rates), 0.01);
  t.equal(zoneEvictionRate('PartialDisruption', 50, rates), 0, 'small clusters stop evicting');

  const zones = new ZoneEvictors(rates, 0.55, new ManualClock());
  const a = node('a', { 'topology.kubernetes.io/zone': 'a' });
  const b = node('b', { 'topology.kubernetes.io/zone': 'b' });
  zones.addZone(a); zones.addZone(b);
  const ready = (za: Array<string | undefined>, zb: Array<string | undefined>): Map<string, Array<Cond | undefined>> =>
    new Map([[zoneKey(a), za.map((s) => (s ? c(s) : undefined))], [zoneKey(b), zb.map((s) => (s ? c(s) : undefined))]]);
  t.same(zones.update(ready(['True'], ['True'])), { change: 'none', changed: [[zoneKey(a), 'Normal'], [zoneKey(b), 'Normal']] });
  t.same(zones.update(ready(['Unknown'], ['True'])).changed, [[zoneKey(a), 'FullDisruption']]);
  t.equal(zones.queueFor(a).qps, 0.1, 'one zone down among healthy ones: normal rate');
  t.equal(zones.update(ready(['Unknown'], [undefined])).change, 'entered-full');
  t.equal(zones.queueFor(a).qps, 0, 'every zone down: no evictions');
  t.equal(zones.queueFor(b).qps, 0);
  t.equal(zones.update(ready(['Unknown'], ['Unknown'])).change, 'none', 'still all down');
  t.equal(zones.update(ready(['Unknown'], ['True', 'True', 'False', 'False', 'False'])).change, 'left-full');
  t.equal(zones.queueFor(a).qps, 0.1);
  t.equal(zones.queueFor(b).qps, 0, 'zone b partially disrupted in a small cluster');
});

t.test('the rate-limited timed queue', async (t) => {
  const clock = new ManualClock();
  const q = new RateLimitedTimedQueue(1, clock);
  t.ok(q.add('a', 'u1'));
  t.ok(q.add('b', 'u2'));
  t.notOk(q.add('a', 'u1'), 'queued once');
  const seen: string[] = [];
  const act = async (v: { value: string }): Promise<{ done: boolean }> => { seen.push(v.value); return { done: true }; };
  await q.try(act);
  t.same(seen, ['a'], 'burst 1: one item per token');
  await q.try(act);
  t.same(seen, ['a'], 'no token yet');
  await clock.advance(1000);
  await q.try(act);
  t.same(seen, ['a', 'b']);
  t.notOk(q.add('a', 'u1'), 'processed names stay known until removed');
  t.ok(q.remove('a'));
  t.ok(q.add('a', 'u1'), 'after remove it may be queued again');
  q.swapLimiter(0);
  await clock.advance(10_000);
  await q.try(act);
  t.same(seen, ['a', 'b'], 'rate 0 stops everything');
  q.swapLimiter(2);
  await q.try(act);
  t.same(seen, ['a', 'b'], 'swapped while empty: the new bucket starts empty too');
  await clock.advance(500);
  await q.try(act);
  t.same(seen, ['a', 'b', 'a']);
  q.add('c', 'u3');
  let fail = true;
  await clock.advance(1000);
  await q.try(async (v) => { seen.push(v.value); if (fail) { fail = false; return { done: false, retryAfterMs: 5000 }; } return { done: true }; });
  t.same(q.pending, ['c'], 'a failed action puts its item back');
});

t.test('NoSchedule taints follow conditions; swaps keep timeAdded', async (t) => {
  const n = node('a', {}, [{ type: 'Ready', status: 'Unknown' }, { type: 'MemoryPressure', status: 'True' }, { type: 'DiskPressure', status: 'False' }]);
  n.spec = { unschedulable: true, taints: [{ key: 'node.kubernetes.io/disk-pressure', effect: 'NoSchedule' }, { key: 'user', effect: 'NoSchedule' }] };
  const d = noScheduleTaintDiff(n);
  t.same(d.add.map((x) => x.key).sort(), ['node.kubernetes.io/memory-pressure', 'node.kubernetes.io/unreachable', 'node.kubernetes.io/unschedulable']);
  t.same(d.remove.map((x) => x.key), ['node.kubernetes.io/disk-pressure'], "others' taints are never touched");
  const had: Taint = { key: 'node.kubernetes.io/unreachable', effect: 'NoExecute', timeAdded: '2020-01-01T00:00:00Z' };
  t.equal(swappedTaints([had], [{ key: had.key, effect: 'NoExecute' }], [], Date.now()), undefined, 'present already: no write');
  const next = swappedTaints([had], [{ key: 'node.kubernetes.io/not-ready', effect: 'NoExecute' }], [had], Date.parse('2024-05-01T00:00:00Z'));
  t.same(next, [{ key: 'node.kubernetes.io/not-ready', effect: 'NoExecute', timeAdded: '2024-05-01T00:00:00Z' }]);
});

t.test('tolerations against NoExecute taints', async (t) => {
  const unreachable: Taint = { key: 'node.kubernetes.io/unreachable', effect: 'NoExecute' };
  const other: Taint = { key: 'x', value: 'y', effect: 'NoExecute' };
  t.same(matchingTolerations([unreachable], []), { all: false, used: [] });
  const tol = { key: unreachable.key, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 30 };
  t.same(matchingTolerations([unreachable, other], [tol]).all, false, 'every taint must be tolerated');
  const all = matchingTolerations([unreachable, other], [tol, { operator: 'Exists' }]);
  t.ok(all.all);
  t.equal(minTolerationMs(all.used), 30_000);
  t.equal(minTolerationMs([{ operator: 'Exists' }]), -1, 'no tolerationSeconds: forever');
  t.equal(minTolerationMs([{ operator: 'Exists', tolerationSeconds: -5 }]), 0);
});

t.test('health: heartbeats, leases and grace periods (controller clock)', async (t) => {
  const o = { monitorGraceMs: 40_000, startupGraceMs: 60_000 };
  const created = Date.parse('2024-01-01T00:00:00Z');
  const n = { ...node('a', {}, conditions('True', stamp(created))), metadata: { name: 'a', creationTimestamp: stamp(created) } };
  let r = assessNodeHealth(n, undefined, undefined, created + 1000, o);
  t.equal(r.health.probeTimestamp, created + 1000, 'first sight counts as a heartbeat');
  t.notOk(r.write);
  const lease = (ms: number): KubeObject => ({ metadata: { name: 'a' }, spec: { renewTime: new Date(ms).toISOString() } });
  r = assessNodeHealth(n, r.health, lease(created), created + 30_000, o);
  t.equal(r.health.probeTimestamp, created + 30_000, 'a lease seen for the first time is a heartbeat');
  r = assessNodeHealth(n, r.health, lease(created), created + 71_000, o);
  t.ok(r.write, 'the same renewTime again is silence: past the grace period');
  const ready = condOf(r.write as KubeObject, 'Ready');
  t.match(ready, { status: 'Unknown', reason: 'NodeStatusUnknown', message: MSG_STOPPED, lastHeartbeatTime: stamp(created) });
  t.equal(r.observedReady.status, 'True');
  t.equal(r.currentReady?.status, 'Unknown');

  const silent = { apiVersion: 'v1', kind: 'Node', metadata: { name: 's', creationTimestamp: stamp(created) } };
  r = assessNodeHealth(silent, undefined, undefined, created + 59_000, o);
  t.notOk(r.write, 'startup grace');
  t.equal(r.currentReady, undefined);
  r = assessNodeHealth(silent, r.health, undefined, created + 61_000, o);
  const conds = ((r.write?.status ?? {}) as { conditions: Cond[] }).conditions;
  t.same(conds.map((c) => [c.type, c.status, c.reason, c.message]), ['Ready', 'MemoryPressure', 'DiskPressure', 'PIDPressure'].map((type) => [type, 'Unknown', 'NodeStatusNeverUpdated', MSG_NEVER]));
});

t.test('legacy eviction (TaintBasedEvictions off, the default)', async (t) => {
  const ctl = new NodeLifecycleController();
  const c = await startControllers(ctl, { args: [...FAST, '--node-eviction-rate=100'], recordEvents: true });
  const stopLease = startLease(c.client, 'alive');
  t.teardown(async () => { stopLease(); await c.stop(); });

  await c.client.create(NODES, node('alive'));
  await c.client.create(NODES, node('dead'));
  await c.client.create(NODES, node('silent', {}, null));
  await c.client.create(DAEMONSETS, {
    apiVersion: 'apps/v1', kind: 'DaemonSet', metadata: { name: 'agent' },
    spec: { selector: { matchLabels: { app: 'agent' } }, template: { metadata: { labels: { app: 'agent' } }, spec: { containers: [{ name: 'c', image: 'x:1' }] } } },
  });
  await runningPod(c.client, 'web', 'dead');
  await runningPod(c.client, 'agent-dead', 'dead', { labels: { app: 'agent' } });
  await runningPod(c.client, 'other', 'alive');

  const dead = await waitFor('dead node Ready Unknown', async () => {
    const n = await c.client.get(NODES, 'dead');
    return condOf(n, 'Ready')?.status === 'Unknown' && n;
  });
  for (const type of ['Ready', 'MemoryPressure', 'DiskPressure', 'PIDPressure']) {
    t.match(condOf(dead, type), { status: 'Unknown', reason: 'NodeStatusUnknown', message: MSG_STOPPED }, `${type} Unknown`);
  }
  await waitFor('pods of the dead node marked not ready', async () => podReady(await c.client.get(PODS, 'web')) === 'False' && podReady(await c.client.get(PODS, 'agent-dead')) === 'False');
  const web = await waitFor('web evicted', () => evicted(c.client, 'web'));
  if (web !== true) t.match(web.status, { reason: 'NodeLost', message: 'Node dead which was running pod web is unresponsive' });

  const silent = await waitFor('never-posting node Unknown', async () => {
    const n = await c.client.get(NODES, 'silent');
    return condOf(n, 'Ready')?.status === 'Unknown' && n;
  });
  t.match(condOf(silent, 'PIDPressure'), { status: 'Unknown', reason: 'NodeStatusNeverUpdated', message: MSG_NEVER });

  // A pod bound to the dead node only now is marked not ready as well.
  await c.client.create(PODS, { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'late' }, spec: { containers: [{ name: 'c', image: 'x:1' }] } });
  await c.client.patch(PODS, 'late', 'merge', { status: { conditions: [{ type: 'Ready', status: 'True' }] } }, { subresource: 'status' });
  await c.client.create({ ...PODS }, { apiVersion: 'v1', kind: 'Binding', metadata: { name: 'late' }, target: { apiVersion: 'v1', kind: 'Node', name: 'dead' } }, { subresource: 'binding', name: 'late' });
  await waitFor('late pod marked not ready', async () => podReady(await c.client.get(PODS, 'late')) === 'False');

  await passes(ctl, 10);
  t.notOk(await isEvicted(c.client, 'agent-dead'), 'DaemonSet pods are not evicted');
  const alive = await c.client.get(NODES, 'alive');
  t.equal(condOf(alive, 'Ready')?.status, 'True', 'a Lease renewal alone keeps a node healthy');
  t.notOk(await isEvicted(c.client, 'other'));
  t.same(taintsOf(await c.client.get(NODES, 'dead')), [], 'no taints without the feature gates');

  const nodeEvents = await waitFor('node events', async () => {
    const r = await eventReasons(c.client, 'dead');
    return r.includes('NodeNotReady') && r.includes('DeletingAllPods') && r.includes('RegisteredNode') && r;
  });
  t.ok(nodeEvents.length >= 3);
  t.ok((await eventReasons(c.client, 'web')).includes('NodeControllerEviction'));
  t.ok((await eventReasons(c.client, 'web')).includes('NodeNotReady'));
});

t.test('taint-based evictions and conditions as taints', async (t) => {
  const ctl = new NodeLifecycleController();
  const c = await startControllers(ctl, { args: [...FAST, '--node-eviction-rate=100', TAINT_GATES], recordEvents: true });
  const stops = [startLease(c.client, 'alive')];
  t.teardown(async () => { for (const s of stops) s(); await c.stop(); });

  const unreachable = (seconds?: number): Dict => ({ key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', ...(seconds !== undefined ? { tolerationSeconds: seconds } : {}) });
  await c.client.create(NODES, node('alive'));
  await c.client.create(NODES, node('dead'));
  await runningPod(c.client, 'at-once', 'dead', { tolerations: [unreachable(0)] });
  await runningPod(c.client, 'after-3s', 'dead', { tolerations: [unreachable(3)] });
  await runningPod(c.client, 'forever', 'dead', { tolerations: [unreachable()] });
  await runningPod(c.client, 'defaulted', 'dead');

  const tainted = await waitFor('dead node tainted unreachable', async () => {
    const n = await c.client.get(NODES, 'dead');
    const ts = taintsOf(n);
    return ts.some((x) => x.key === 'node.kubernetes.io/unreachable' && x.effect === 'NoExecute')
      && ts.some((x) => x.key === 'node.kubernetes.io/unreachable' && x.effect === 'NoSchedule') && n;
  });
  const noExec = taintsOf(tainted).find((x) => x.effect === 'NoExecute') as Taint;
  t.ok(noExec.timeAdded, 'the NoExecute taint carries timeAdded');
  t.equal(condOf(tainted, 'Ready')?.status, 'Unknown');

  await waitFor('the pod not tolerating it for long goes at once', () => isEvicted(c.client, 'at-once'));
  t.notOk(await isEvicted(c.client, 'after-3s'), 'a pod tolerating it for 3 s is still there');
  const later = await waitFor('the 3 s pod goes after its toleration', () => evicted(c.client, 'after-3s'));
  if (later !== true) {
    t.ok(Date.parse(String(later.metadata?.deletionTimestamp)) - Date.parse(String(noExec.timeAdded)) >= 3000, 'not before its tolerationSeconds');
  }
  t.notOk(await isEvicted(c.client, 'forever'), 'tolerated forever');
  t.notOk(await isEvicted(c.client, 'defaulted'), 'DefaultTolerationSeconds gave it 300 s');
  t.ok((await eventReasons(c.client, 'at-once')).includes('TaintManagerEviction'));

  // The node agent comes back: status and lease heartbeats again.
  await c.client.patch(NODES, 'dead', 'merge', { status: { conditions: conditions('True') } }, { subresource: 'status' });
  stops.push(startLease(c.client, 'dead'));
  await waitFor('taints removed once Ready again', async () => {
    const n = await c.client.get(NODES, 'dead');
    return !taintsOf(n).some((x) => x.key === 'node.kubernetes.io/unreachable' || x.key === 'node.kubernetes.io/not-ready');
  });
  await passes(ctl, 5);
  t.notOk(await isEvicted(c.client, 'forever'));
  t.notOk(await isEvicted(c.client, 'defaulted'), 'scheduled evictions are cancelled');
  t.ok((await eventReasons(c.client, 'defaulted')).includes('TaintManagerEviction'), 'with a cancellation event');

  // Conditions and unschedulable as NoSchedule taints.
  const pressured = conditions('True').map((x) => (x.type === 'MemoryPressure' ? { ...x, status: 'True' } : x));
  await c.client.patch(NODES, 'alive', 'merge', { spec: { unschedulable: true } });
  await c.client.patch(NODES, 'alive', 'merge', { status: { conditions: pressured } }, { subresource: 'status' });
  await waitFor('memory-pressure and unschedulable taints', async () => {
    const keys = taintsOf(await c.client.get(NODES, 'alive')).filter((x) => x.effect === 'NoSchedule').map((x) => x.key).sort();
    return JSON.stringify(keys) === JSON.stringify(['node.kubernetes.io/memory-pressure', 'node.kubernetes.io/unschedulable']);
  });
  await c.client.patch(NODES, 'alive', 'merge', { spec: { unschedulable: false } });
  await c.client.patch(NODES, 'alive', 'merge', { status: { conditions: conditions('True') } }, { subresource: 'status' });
  await waitFor('those taints removed', async () => taintsOf(await c.client.get(NODES, 'alive')).length === 0);

  // Any NoExecute taint evicts the pods that do not tolerate it.
  await runningPod(c.client, 'victim', 'alive');
  await runningPod(c.client, 'tolerant', 'alive', { tolerations: [{ key: 'example.com/drain', operator: 'Exists', effect: 'NoExecute' }] });
  await c.client.patch(NODES, 'alive', 'merge', { spec: { taints: [{ key: 'example.com/drain', effect: 'NoExecute' }] } });
  await waitFor('victim evicted', () => isEvicted(c.client, 'victim'));
  await passes(ctl, 3);
  t.notOk(await isEvicted(c.client, 'tolerant'));
});

t.test('eviction rate limits per zone and zone states', async (t) => {
  const ctl = new NodeLifecycleController();
  // One node per 1000 s: the first node of a zone goes at once, the next waits. The eviction
  // timeout outlasts the grace period, so zone states are settled before anything is due.
  const c = await startControllers(ctl, { args: [...FAST, '--pod-eviction-timeout=3s', '--node-eviction-rate=0.001'] });
  const zone = (z: string): Record<string, string> => ({ 'topology.kubernetes.io/zone': z });
  const stops: Array<() => void> = [];
  t.teardown(async () => { for (const s of stops) s(); await c.stop(); });
  const layout: Record<string, { alive: string[]; dead: string[] }> = {
    z1: { alive: ['a1'], dead: ['d1', 'd2'] },
    z2: { alive: ['a2'], dead: ['d3'] },
    // 3 of 4 not ready: partial disruption; at most 50 nodes: no evictions at all.
    z3: { alive: ['a3'], dead: ['e1', 'e2', 'e3'] },
  };
  for (const [z, { alive, dead }] of Object.entries(layout)) {
    for (const n of alive) { await c.client.create(NODES, node(n, zone(z))); stops.push(startLease(c.client, n)); }
    for (const n of dead) { await c.client.create(NODES, node(n, zone(z))); await runningPod(c.client, `p-${n}`, n); }
  }
  await waitFor('z1 and z2 each lost one node', async () => {
    const z1 = (await Promise.all(['p-d1', 'p-d2'].map((p) => isEvicted(c.client, p)))).filter(Boolean).length;
    return z1 === 1 && await isEvicted(c.client, 'p-d3');
  });
  await waitFor('z3 pods marked not ready', async () => {
    const ready = await Promise.all(['p-e1', 'p-e2', 'p-e3'].map(async (p) => podReady(await c.client.get(PODS, p))));
    return ready.every((r) => r === 'False');
  });
  await passes(ctl, 15);
  const z1 = (await Promise.all(['p-d1', 'p-d2'].map((p) => isEvicted(c.client, p)))).filter(Boolean).length;
  t.equal(z1, 1, 'the second not-ready node of z1 waits for the rate limit');
  for (const p of ['p-e1', 'p-e2', 'p-e3']) t.notOk(await isEvicted(c.client, p), `${p}: a partially disrupted small zone evicts nothing`);
});

t.test('all zones fully disrupted: no evictions until some node is back', async (t) => {
  const ctl = new NodeLifecycleController();
  const c = await startControllers(ctl, { args: [...FAST, '--node-eviction-rate=100'] });
  const stops: Array<() => void> = [];
  t.teardown(async () => { for (const s of stops) s(); await c.stop(); });
  await c.client.create(NODES, node('solo'));
  await runningPod(c.client, 'p-solo', 'solo');
  await waitFor('solo marked not ready', async () => podReady(await c.client.get(PODS, 'p-solo')) === 'False');
  await passes(ctl, 20);
  t.notOk(await isEvicted(c.client, 'p-solo'), 'the only node silent: blamed on us, not evicted');
  await c.client.create(NODES, node('back'));
  stops.push(startLease(c.client, 'back'));
  await waitFor('evicted once another node is ready', () => isEvicted(c.client, 'p-solo'));
});

/**
 * The scheduler daemon (run() from main.ts, with leader election and its HTTP server) against
 * a real API server: filters, events, retry when a node appears, spreading.
 */
import t from 'tap';
import { pino } from 'pino';
import { loadCoreconfig } from '../../src/client/coreconfig.js';
import { RestClient } from '../../src/client/rest-client.js';
import { run, LEADER_LOCK } from '../../src/daemons/scheduler/main.js';
import type { Servers } from '../../src/daemons/scheduler/servers.js';
import { parseSchedulerArgs } from '../../src/flags/scheduler.js';
import { freePort, startApiserver } from '../helpers/apiserver.js';
import { createNode, createPod, eventsFor, nodeOf, NODES, podsIn, until, waitBound, waitEvent } from './cluster.js';
import { makeNode, makePod } from './fixtures.js';

const api = await startApiserver();
t.teardown(() => api.stop());
const client = new RestClient({ connection: await loadCoreconfig({ path: api.coreconfigPath }), qps: 0 });
t.teardown(() => client.close());

const port = await freePort();
const { config } = parseSchedulerArgs([
  `--coreconfig=${api.coreconfigPath}`, '--bind-address=127.0.0.1', `--port=${port}`,
  '--leader-elect=true', '--leader-elect-resource-lock=leases',
  '--leader-elect-lease-duration=4s', '--leader-elect-renew-deadline=3s', '--leader-elect-retry-period=1s',
]);
const stop = new AbortController();
let servers: Servers | undefined;
const running = run(config, { log: pino({ level: 'silent' }), signal: stop.signal, onServing: (s) => { servers = s; } });
t.teardown(async () => { stop.abort(); await running.catch(() => undefined); });

await createNode(client, makeNode('node-a', { cpu: '4', labels: { disk: 'ssd', zone: 'z1' } }));
await createNode(client, makeNode('node-b', { cpu: '4', taints: [{ key: 'dedicated', value: 'infra', effect: 'NoSchedule' }] }));
await createNode(client, makeNode('node-c', { cpu: '1', labels: { zone: 'z2' } }));

t.test('takes the leader lock', async (t) => {
  const lease = await until('the lease', async () => {
    try { return await client.get({ group: 'coordination.k8s.io', version: 'v1', resource: 'leases', namespace: LEADER_LOCK.namespace }, LEADER_LOCK.name); } catch { return undefined; }
  });
  t.match((lease.spec as { holderIdentity?: string }).holderIdentity, /\S/);
});

t.test('pods go where the filters allow', async (t) => {
  await createPod(client, makePod('big', { cpu: '2' }));
  await createPod(client, makePod('tolerant', { cpu: '2', tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'infra', effect: 'NoSchedule' }], required: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['node-b'] }] }] }));
  await createPod(client, makePod('ssd', { nodeSelector: { disk: 'ssd' } }));
  await createPod(client, makePod('zoned', { cpu: '500m', required: [{ matchExpressions: [{ key: 'zone', operator: 'In', values: ['z2', 'z3'] }] }] }));
  t.equal(await waitBound(client, 'big'), 'node-a', 'only node-a is untainted and big enough');
  t.equal(await waitBound(client, 'tolerant'), 'node-b');
  t.equal(await waitBound(client, 'ssd'), 'node-a');
  t.equal(await waitBound(client, 'zoned'), 'node-c');
  const ev = await waitEvent(client, 'big', 'Scheduled');
  t.equal(ev.message, 'Successfully assigned default/big to node-a');
  t.equal(ev.type, 'Normal');
  t.equal((ev.source as { component?: string }).component, 'default-scheduler');
  t.equal(ev.reportingComponent, 'default-scheduler');
  t.match(ev.involvedObject, { kind: 'Pod', name: 'big', namespace: 'default' });
});

t.test('pods for another scheduler are left alone', async (t) => {
  await createPod(client, makePod('other', { schedulerName: 'someone-else' }));
  await createPod(client, makePod('marker'));
  await waitBound(client, 'marker');
  t.equal(await nodeOf(client, 'other'), '');
});

t.test('a cordoned node is skipped until uncordoned', async (t) => {
  await client.patch(NODES, 'node-c', 'merge', { spec: { unschedulable: true } });
  await createPod(client, makePod('wants-z2', { nodeSelector: { zone: 'z2' } }));
  const ev = await waitEvent(client, 'wants-z2', 'FailedScheduling');
  t.equal(ev.message, "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had untolerated taint {dedicated: infra}, 1 node(s) were unschedulable.");
  t.equal(ev.type, 'Warning');
  t.equal(await nodeOf(client, 'wants-z2'), '');
  await client.patch(NODES, 'node-c', 'merge', { spec: { unschedulable: false } });
  t.equal(await waitBound(client, 'wants-z2'), 'node-c');
});

t.test('an unschedulable pod is scheduled when a fitting node appears', async (t) => {
  await createPod(client, makePod('huge', { cpu: '8' }));
  const ev = await waitEvent(client, 'huge', 'FailedScheduling');
  t.equal(ev.message, '0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: infra}, 2 Insufficient cpu.');
  t.equal(await nodeOf(client, 'huge'), '');
  const cond = await until('the PodScheduled condition', async () => {
    const p = await client.get(podsIn(), 'huge');
    return ((p.status as { conditions?: Array<Record<string, unknown>> }).conditions ?? []).find((c) => c.type === 'PodScheduled');
  });
  t.match(cond, { status: 'False', reason: 'Unschedulable', message: ev.message });
  await createNode(client, makeNode('node-d', { cpu: '16' }));
  t.equal(await waitBound(client, 'huge'), 'node-d');
  t.ok((await eventsFor(client, 'huge', 'Scheduled')).length <= 1);
});

t.test('30 pods of one owner spread across the nodes', async (t) => {
  const names = Array.from({ length: 30 }, (_, i) => `web-${i}`);
  await Promise.all(names.map((n) => createPod(client, makePod(n, { owner: 'web-rs' }))));
  const placed = await Promise.all(names.map((n) => waitBound(client, n)));
  const counts = new Map<string, number>();
  for (const n of placed) counts.set(n, (counts.get(n) ?? 0) + 1);
  t.notOk(counts.has('node-b'), 'the tainted node gets none');
  t.same([...counts.keys()].sort(), ['node-a', 'node-c', 'node-d']);
  for (const [node, c] of counts) t.ok(c >= 8 && c <= 12, `${node} got ${c} of 30`);
});

t.test('health and metrics are served', async (t) => {
  t.ok(servers && servers.httpPort === port);
  const health = await fetch(`http://127.0.0.1:${port}/healthz`);
  t.equal(health.status, 200);
  t.equal(await health.text(), 'ok');
  t.equal((await fetch(`http://127.0.0.1:${port}/readyz`)).status, 200);
  const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  t.match(metrics, /scheduler_schedule_attempts_total\{result="scheduled",profile="default-scheduler"\} \d+/);
  t.match(metrics, /scheduler_pending_pods\{queue="unschedulable"\}/);
});

t.test('stops cleanly and releases the lock', async (t) => {
  stop.abort();
  t.equal(await running, 0);
  const lease = await client.get({ group: 'coordination.k8s.io', version: 'v1', resource: 'leases', namespace: LEADER_LOCK.namespace }, LEADER_LOCK.name);
  t.equal((lease.spec as { holderIdentity?: string }).holderIdentity ?? '', '');
  // No scheduling once stopped.
  await createPod(client, makePod('after-stop'));
  await new Promise((r) => setTimeout(r, 300));
  t.equal(await nodeOf(client, 'after-stop'), '');
});

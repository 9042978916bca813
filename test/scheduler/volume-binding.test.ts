/**
 * Volume binding in the scheduler (run() from main.ts against a real API server, two nodes):
 * a claim bound to a local volume puts its pod on that volume's node; a conflicting node
 * selector makes it unschedulable; an unbound Immediate claim waits; a WaitForFirstConsumer
 * claim gets the matching Available volume on the chosen node (claimRef written) or, with a
 * provisioner, the selected-node annotation, and the pod is bound once the claim is. The
 * binder's part (completing bindings) is played by the test.
 */
import t from 'tap';
import { pino } from 'pino';
import type { KubeObject } from '../../src/api/resources/types.js';
import { loadCoreconfig } from '../../src/client/coreconfig.js';
import { RestClient } from '../../src/client/rest-client.js';
import { run } from '../../src/daemons/scheduler/main.js';
import type { Pod } from '../../src/daemons/scheduler/types.js';
import { parseSchedulerArgs } from '../../src/flags/scheduler.js';
import { freePort, startApiserver } from '../helpers/apiserver.js';
import { createNode, createPod, nodeOf, until, waitBound, waitEvent } from './cluster.js';
import { makeNode, makePod } from './fixtures.js';

const PVS = { group: '', version: 'v1', resource: 'persistentvolumes' } as const;
const CLAIMS = { group: '', version: 'v1', resource: 'persistentvolumeclaims', namespace: 'default' } as const;
const CLASSES = { group: 'storage.k8s.io', version: 'v1', resource: 'storageclasses' } as const;

const api = await startApiserver();
t.teardown(() => api.stop());
const client = new RestClient({ connection: await loadCoreconfig({ path: api.coreconfigPath }), qps: 0 });
t.teardown(() => client.close());
const { config } = parseSchedulerArgs([`--coreconfig=${api.coreconfigPath}`, '--bind-address=127.0.0.1', `--port=${await freePort()}`, '--leader-elect=false']);
const stop = new AbortController();
const running = run(config, { log: pino({ level: 'silent' }), signal: stop.signal });
t.teardown(async () => { stop.abort(); await running.catch(() => undefined); });
await createNode(client, makeNode('node-a'));
await createNode(client, makeNode('node-b'));

const pinned = (node: string): Record<string, unknown> => ({ required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [node] }] }] } });

async function localVolume(name: string, node: string, cls: string): Promise<void> {
  await client.create(PVS, {
    apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name },
    spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], storageClassName: cls, persistentVolumeReclaimPolicy: 'Retain', local: { path: `/mnt/${name}` }, nodeAffinity: pinned(node) },
  });
  await client.patch(PVS, name, 'merge', { status: { phase: 'Available' } }, { subresource: 'status' });
}

async function claim(name: string, cls: string): Promise<KubeObject> {
  return client.create(CLAIMS, { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name }, spec: { storageClassName: cls, accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } });
}

/** The binder's part: both sides of a binding. */
async function completeBinding(claimName: string, volumeName: string): Promise<void> {
  const c = await client.get(CLAIMS, claimName);
  const v = await client.get(PVS, volumeName);
  if (!(v.spec as { claimRef?: unknown }).claimRef) {
    await client.patch(PVS, volumeName, 'merge', { spec: { claimRef: { kind: 'PersistentVolumeClaim', namespace: 'default', name: claimName, uid: c.metadata?.uid } } });
  }
  await client.patch(CLAIMS, claimName, 'merge', { spec: { volumeName } });
  await client.patch(CLAIMS, claimName, 'merge', { status: { phase: 'Bound' } }, { subresource: 'status' });
}

function podWith(name: string, claimName: string, extra: Partial<NonNullable<Pod['spec']>> = {}): Pod {
  const p = makePod(name);
  return { ...p, spec: { ...p.spec, ...extra, volumes: [{ name: 'data', persistentVolumeClaim: { claimName } }] } as Pod['spec'] };
}

t.test('a claim bound to a local volume schedules its pod to that volume\'s node', async (t) => {
  await localVolume('pv-b', 'node-b', 'manual');
  await claim('on-b', 'manual');
  await completeBinding('on-b', 'pv-b');
  for (const n of ['user-1', 'user-2', 'user-3']) await createPod(client, podWith(n, 'on-b'));
  for (const n of ['user-1', 'user-2', 'user-3']) t.equal(await waitBound(client, n), 'node-b', `${n} on node-b`);

  await createPod(client, podWith('wants-a', 'on-b', { nodeSelector: { 'kubernetes.io/hostname': 'node-a' } }));
  const ev = await waitEvent(client, 'wants-a', 'FailedScheduling');
  t.equal(ev.message, "0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had volume node affinity conflict.");
  t.equal(await nodeOf(client, 'wants-a'), '');
});

t.test('an unbound claim of an Immediate class waits for the binder', async (t) => {
  await claim('immediate', 'manual');
  await createPod(client, podWith('waits', 'immediate'));
  const ev = await waitEvent(client, 'waits', 'FailedScheduling');
  t.equal(ev.message, '0/2 nodes are available: 2 pod has unbound immediate PersistentVolumeClaims.');
  await localVolume('pv-a-imm', 'node-a', 'manual');
  await completeBinding('immediate', 'pv-a-imm');
  t.equal(await waitBound(client, 'waits'), 'node-a', 'scheduled once the claim is bound');
});

t.test('WaitForFirstConsumer: an existing volume on a fitting node is bound by the scheduler', async (t) => {
  await client.create(CLASSES, { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: 'local-storage' }, provisioner: 'kubernetes.io/no-provisioner', volumeBindingMode: 'WaitForFirstConsumer' });
  await localVolume('pv-a-wffc', 'node-a', 'local-storage');
  await claim('wffc', 'local-storage');
  await createPod(client, podWith('consumer', 'wffc'));
  const v = await until('claimRef on the volume', async () => {
    const o = await client.get(PVS, 'pv-a-wffc');
    return (o.spec as { claimRef?: { name?: string } }).claimRef?.name === 'wffc' ? o : undefined;
  });
  t.equal(v.metadata?.annotations?.['pv.kubernetes.io/bound-by-controller'], 'yes');
  t.equal(await nodeOf(client, 'consumer'), '', 'the pod waits for its claim to be bound');
  await completeBinding('wffc', 'pv-a-wffc');
  t.equal(await waitBound(client, 'consumer'), 'node-a');

  await claim('wffc-none', 'local-storage');
  await createPod(client, podWith('no-volume', 'wffc-none'));
  const ev = await waitEvent(client, 'no-volume', 'FailedScheduling');
  t.equal(ev.message, "0/2 nodes are available: 2 node(s) didn't find available persistent volumes to bind.");
});

t.test('WaitForFirstConsumer with a provisioner: the claim gets the selected node', async (t) => {
  await client.create(CLASSES, { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: 'dyn' }, provisioner: 'corectl.io/local-path', volumeBindingMode: 'WaitForFirstConsumer' });
  await claim('dyn-c', 'dyn');
  await createPod(client, podWith('dyn-user', 'dyn-c', { nodeSelector: { 'kubernetes.io/hostname': 'node-b' } }));
  const c = await until('selected-node', async () => {
    const o = await client.get(CLAIMS, 'dyn-c');
    return o.metadata?.annotations?.['volume.kubernetes.io/selected-node'] ? o : undefined;
  });
  t.equal(c.metadata?.annotations?.['volume.kubernetes.io/selected-node'], 'node-b');
  // The provisioner's and binder's part.
  await localVolume('pv-dyn', 'node-b', 'dyn');
  await completeBinding('dyn-c', 'pv-dyn');
  t.equal(await waitBound(client, 'dyn-user'), 'node-b');
});

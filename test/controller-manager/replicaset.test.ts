import t from 'tap';
import type { KubeObject } from '../../src/api/resources/types.js';
import { PODS, RC, RS, deletePods, listPods, markReady, ownerUid, startCluster, waitFor } from './fixtures/cluster.js';

type Dict = Record<string, unknown>;
const status = (o: KubeObject): Dict => (o.status ?? {}) as Dict;

function replicaSet(name: string, replicas: number, extra: Dict = {}): KubeObject {
  return {
    apiVersion: 'apps/v1', kind: 'ReplicaSet', metadata: { name },
    spec: {
      replicas, selector: { matchLabels: { app: name } }, ...extra,
      template: { metadata: { labels: { app: name, extra: 'yes' } }, spec: { containers: [{ name: 'c', image: 'busybox:1' }] } },
    },
  };
}

t.test('replica set and replication controller controllers against a real API server', async (t) => {
  const c = await startCluster(['--controllers=replicaset,replicationcontroller']);
  t.teardown(() => c.stop());

  await t.test('an orphan pod matching the selector is adopted; the rest are created from the template', async (t) => {
    await c.client.create(PODS, {
      apiVersion: 'v1', kind: 'Pod', metadata: { name: 'orphan', labels: { app: 'one' } },
      spec: { containers: [{ name: 'c', image: 'busybox:1' }] },
    });
    const rs = await c.client.create(RS, replicaSet('one', 3));
    const pods = await waitFor('3 owned pods', async () => {
      const l = await listPods(c, 'app=one');
      return l.length === 3 && l.every((p) => ownerUid(p) === rs.metadata?.uid) && l;
    });
    const orphan = pods.find((p) => p.metadata?.name === 'orphan');
    t.ok(orphan, 'the orphan was kept and adopted, not replaced');
    t.match(orphan?.metadata?.ownerReferences?.[0], { kind: 'ReplicaSet', name: 'one', controller: true, blockOwnerDeletion: true });
    for (const p of pods.filter((x) => x !== orphan)) {
      t.equal(p.metadata?.generateName, 'one-');
      t.same(p.metadata?.labels, { app: 'one', extra: 'yes' });
    }
    const st = await waitFor('status', async () => { const x = await c.client.get(RS, 'one'); return status(x).replicas === 3 && x; });
    t.match(status(st), { replicas: 3, fullyLabeledReplicas: 2, observedGeneration: 1 }, 'the orphan lacks the template label "extra"');
    const EVENTS = { group: '', version: 'v1', resource: 'events', namespace: 'default' };
    const evs = await waitFor('events', async () => {
      const l = (await c.client.list(EVENTS, { fieldSelector: 'involvedObject.name=one' })).items;
      return l.filter((e) => e.reason === 'SuccessfulCreate').length === 2 && l;
    });
    t.match(evs.find((e) => e.reason === 'SuccessfulCreate'), { type: 'Normal', message: /^Created pod: one-/, source: { component: 'replicaset-controller' } });
  });

  await t.test('a deleted pod is replaced', async (t) => {
    const before = await listPods(c, 'app=one');
    await deletePods(c, [before[0]]);
    await waitFor('replacement', async () => {
      const l = await listPods(c, 'app=one');
      return l.length === 3 && !l.some((p) => p.metadata?.uid === before[0].metadata?.uid);
    });
    t.pass('replaced');
  });

  await t.test('a pod that stops matching is released and replaced', async (t) => {
    const [victim] = await listPods(c, 'app=one');
    await c.client.patch(PODS, victim.metadata?.name ?? '', 'merge', { metadata: { labels: { app: 'gone' } } });
    const released = await waitFor('released', async () => {
      const p = await c.client.get(PODS, victim.metadata?.name ?? '');
      return !(p.metadata?.ownerReferences ?? []).length && p;
    });
    t.notOk(ownerUid(released), 'no controller reference left');
    await waitFor('3 matching pods again', async () => (await listPods(c, 'app=one')).length === 3);
    t.pass('replacement created');
  });

  await t.test('ready and available counts; scale down removes not-ready pods first', async (t) => {
    const pods = await listPods(c, 'app=one');
    const ready = pods.slice(0, 2);
    await markReady(c, ready);
    const st = await waitFor('ready status', async () => { const x = await c.client.get(RS, 'one'); return status(x).readyReplicas === 2 && x; });
    t.match(status(st), { replicas: 3, readyReplicas: 2, availableReplicas: 2 });
    await c.client.patch(RS, 'one', 'merge', { spec: { replicas: 2 } });
    const left = await waitFor('2 pods', async () => { const l = await listPods(c, 'app=one'); return l.length === 2 && l; });
    t.same(left.map((p) => p.metadata?.name).sort(), ready.map((p) => p.metadata?.name).sort(), 'the not-ready pod was deleted');
    const after = await waitFor('observed generation 2', async () => { const x = await c.client.get(RS, 'one'); return status(x).observedGeneration === 2 && status(x).replicas === 2 && x; });
    t.equal(status(after).readyReplicas, 2);
  });

  await t.test('minReadySeconds delays availability', async (t) => {
    await c.client.create(RS, replicaSet('slow', 1, { minReadySeconds: 2 }));
    const [pod] = await waitFor('a pod', async () => { const l = await listPods(c, 'app=slow'); return l.length === 1 && l; });
    await markReady(c, [pod]);
    const ready = await waitFor('ready', async () => { const x = await c.client.get(RS, 'slow'); return status(x).readyReplicas === 1 && x; });
    t.equal(status(ready).availableReplicas ?? 0, 0, 'ready but not yet available');
    await waitFor('available', async () => status(await c.client.get(RS, 'slow')).availableReplicas === 1, 15_000);
    t.pass('available after minReadySeconds');
  });

  await t.test('many replicas are created without duplicates (expectations, slow start)', async (t) => {
    await c.client.create(RS, replicaSet('many', 40));
    await waitFor('40 pods', async () => (await listPods(c, 'app=many')).length === 40, 30_000);
    // Let any in-flight sync finish; a double creation would show up as more than 40 pods.
    await waitFor('status 40', async () => status(await c.client.get(RS, 'many')).replicas === 40);
    t.equal((await listPods(c, 'app=many')).length, 40);
    await c.client.patch(RS, 'many', 'merge', { spec: { replicas: 5 } });
    await waitFor('5 pods', async () => (await listPods(c, 'app=many')).length === 5, 30_000);
    await waitFor('status 5', async () => status(await c.client.get(RS, 'many')).replicas === 5);
    t.equal((await listPods(c, 'app=many')).length, 5);
  });

  await t.test('a replication controller keeps its replicas', async (t) => {
    const rc = await c.client.create(RC, {
      apiVersion: 'v1', kind: 'ReplicationController', metadata: { name: 'legacy' },
      spec: { replicas: 2, selector: { app: 'legacy' }, template: { metadata: { labels: { app: 'legacy' } }, spec: { containers: [{ name: 'c', image: 'busybox:1' }] } } },
    });
    const pods = await waitFor('2 pods', async () => { const l = await listPods(c, 'app=legacy'); return l.length === 2 && l; });
    for (const p of pods) t.match(p.metadata?.ownerReferences?.[0], { apiVersion: 'v1', kind: 'ReplicationController', name: 'legacy', uid: rc.metadata?.uid, controller: true });
    await markReady(c, pods);
    const st = await waitFor('status', async () => { const x = await c.client.get(RC, 'legacy'); return status(x).readyReplicas === 2 && x; });
    t.match(status(st), { replicas: 2, fullyLabeledReplicas: 2, readyReplicas: 2, availableReplicas: 2, observedGeneration: 1 });
    await c.client.patch(RC, 'legacy', 'merge', { spec: { replicas: 0 } });
    await waitFor('0 pods', async () => (await listPods(c, 'app=legacy')).length === 0);
    t.pass('scaled to 0');
  });
});

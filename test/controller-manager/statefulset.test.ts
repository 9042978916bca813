import t from 'tap';
import type { KubeObject } from '../../src/api/resources/types.js';
import type { ResourceRef } from '../../src/client/rest-client.js';
import { StatefulSetController } from '../../src/daemons/controller-manager/controllers/statefulset.js';
import { planUpdateRevision, revisionsToTrim, newRevision } from '../../src/daemons/controller-manager/controllers/statefulset/revisions.js';
import { newSetPod } from '../../src/daemons/controller-manager/controllers/statefulset/identity.js';
import { startControllers, waitFor } from './fixtures/controller-harness.js';

type Dict = Record<string, unknown>;
const PODS: ResourceRef = { group: '', version: 'v1', resource: 'pods', namespace: 'default' };
const PVCS: ResourceRef = { group: '', version: 'v1', resource: 'persistentvolumeclaims', namespace: 'default' };
const STS: ResourceRef = { group: 'apps', version: 'v1', resource: 'statefulsets', namespace: 'default' };
const REVS: ResourceRef = { group: 'apps', version: 'v1', resource: 'controllerrevisions', namespace: 'default' };
const EVENTS: ResourceRef = { group: '', version: 'v1', resource: 'events', namespace: 'default' };
const HASH = 'controller-revision-hash';

const status = (o: KubeObject): Dict => (o.status ?? {}) as Dict;
const now = (): string => new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function sts(name: string, spec: Dict = {}, image = 'nginx:1'): KubeObject {
  return {
    apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name },
    spec: {
      serviceName: `${name}-svc`, replicas: 3, selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'c', image }] } },
      ...spec,
    },
  };
}

/** A real API server with the controller running in-process (events recorded). */
function start(): ReturnType<typeof startControllers> {
  return startControllers(new StatefulSetController(), { recordEvents: true });
}

t.test('revision planning and history (pure)', async (t) => {
  const set = { ...sts('p'), metadata: { name: 'p', namespace: 'default', uid: 'u1' } } as KubeObject;
  const first = planUpdateRevision(set, []);
  t.equal(first.action, 'create');
  t.match(first.revision, { revision: 1, metadata: { name: /^p-[a-z0-9]+$/ } });
  t.equal(planUpdateRevision(set, [first.revision]).action, 'use', 'same template: reuse');
  const other = newRevision(sts('p', {}, 'nginx:2') as KubeObject, 2, 0);
  t.match(planUpdateRevision(set, [first.revision, other]), { action: 'renumber', to: 3 }, 'rollback renumbers the old revision');
  t.not(newRevision(set, 1, 1).metadata?.name, first.revision.metadata?.name, 'collision count changes the name');
  const revs = Array.from({ length: 5 }, (_, i) => ({ ...newRevision(set, i + 1, i), revision: i + 1 }) as KubeObject);
  const limited = { ...set, spec: { ...(set.spec as Dict), revisionHistoryLimit: 1 } } as KubeObject;
  const pod = newSetPod(set, {}, 0, revs[0].metadata?.name ?? '');
  t.same(revisionsToTrim(limited, revs, [pod], revs[4].metadata?.name ?? '', revs[4].metadata?.name ?? '').map((r) => (r as Dict).revision), [2, 3],
    'keeps the one in use, the current one and one more');
});

t.test('statefulset controller against a real API server', async (t) => {
  const c = await start();
  t.teardown(() => c.stop());

  const podsOf = async (name: string): Promise<KubeObject[]> =>
    (await c.client.list(PODS, { labelSelector: `app=${name}` })).items.filter((p) => !p.metadata?.deletionTimestamp)
      .sort((a, b) => (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''));
  const names = async (name: string): Promise<string[]> => (await podsOf(name)).map((p) => p.metadata?.name ?? '');
  const waitNames = (name: string, want: string[], ms?: number): Promise<string[]> =>
    waitFor(`pods ${want.join(',')}`, async () => { const n = await names(name); return JSON.stringify(n) === JSON.stringify(want) && n; }, ms);
  const ready = async (podName: string): Promise<void> => {
    await c.client.patch(PODS, podName, 'merge', { status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: now() }] } }, { subresource: 'status' });
  };
  const readyAll = async (name: string): Promise<void> => { for (const p of await podsOf(name)) if (status(p).phase !== 'Running') await ready(p.metadata?.name ?? ''); };
  const getSet = (name: string): Promise<KubeObject> => c.client.get(STS, name);
  const until = (what: string, name: string, ok: (s: KubeObject) => boolean): Promise<KubeObject> =>
    waitFor(what, async () => { const s = await getSet(name); return ok(s) && s; });
  const rev = (p: KubeObject): string => p.metadata?.labels?.[HASH] ?? '';
  const setImage = async (name: string, image: string): Promise<void> => {
    await c.client.patch(STS, name, 'strategic', { spec: { template: { spec: { containers: [{ name: 'c', image }] } } } });
  };
  const scale = async (name: string, replicas: number): Promise<void> => { await c.client.patch(STS, name, 'merge', { spec: { replicas } }); };
  const podRevs = async (name: string): Promise<string[]> => (await podsOf(name)).map(rev);

  await t.test('OrderedReady: one ordinal at a time, with identity, claims and events', async (t) => {
    const created = await c.client.create(STS, sts('web', {
      volumeClaimTemplates: [{ metadata: { name: 'www' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } }],
    }));
    await waitNames('web', ['web-0']);
    await sleep(300);
    t.same(await names('web'), ['web-0'], 'web-1 waits for web-0');
    const [p0] = await podsOf('web');
    t.match(p0.metadata?.ownerReferences, [{ apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'web', uid: created.metadata?.uid, controller: true, blockOwnerDeletion: true }]);
    t.match(p0.metadata?.labels, { app: 'web', 'statefulset.kubernetes.io/pod-name': 'web-0', 'apps.kubernetes.io/pod-index': '0', [HASH]: /^web-/ });
    t.match(p0.spec, { hostname: 'web-0', subdomain: 'web-svc' });
    t.match((p0.spec as Dict).volumes, [{ name: 'www', persistentVolumeClaim: { claimName: 'www-web-0' } }]);
    const pvc0 = await c.client.get(PVCS, 'www-web-0');
    t.match(pvc0.metadata?.labels, { app: 'web' }, 'claim labelled with the selector labels');
    t.notOk(pvc0.metadata?.ownerReferences?.length, 'Retain: the claim has no owner');
    await ready('web-0');
    await waitNames('web', ['web-0', 'web-1']);
    await sleep(200);
    t.same(await names('web'), ['web-0', 'web-1'], 'web-2 waits for web-1');
    await ready('web-1');
    await waitNames('web', ['web-0', 'web-1', 'web-2']);
    await ready('web-2');
    const s = await until('status ready 3', 'web', (x) => status(x).readyReplicas === 3);
    t.match(status(s), { replicas: 3, readyReplicas: 3, currentReplicas: 3, updatedReplicas: 3, availableReplicas: 3, observedGeneration: s.metadata?.generation });
    t.equal(status(s).currentRevision, status(s).updateRevision);
    t.equal(status(s).currentRevision, rev(p0));
    const revs = (await c.client.list(REVS)).items.filter((r) => r.metadata?.ownerReferences?.[0]?.uid === created.metadata?.uid);
    t.equal(revs.length, 1, 'one revision');
    t.match(revs[0], { revision: 1, metadata: { name: status(s).currentRevision }, data: { spec: { template: { $patch: 'replace' } } } });
    for (const n of ['www-web-1', 'www-web-2']) t.ok(await c.client.get(PVCS, n), `${n} exists`);
    const evs = await waitFor('events', async () => {
      const l = (await c.client.list(EVENTS, { fieldSelector: 'involvedObject.name=web' })).items;
      return l.filter((e) => e.reason === 'SuccessfulCreate').length >= 6 && l;
    });
    const msgs = evs.map((e) => (e as Dict).message);
    t.ok(msgs.includes('create Pod web-0 in StatefulSet web successful'), 'pod event');
    t.ok(msgs.includes('create Claim www-web-0 Pod web-0 in StatefulSet web success'), 'claim event');
  });

  await t.test('deleting a pod recreates it under the same name; failed pods too', async (t) => {
    const [old] = await podsOf('web');
    await c.client.delete(PODS, 'web-0');
    const p = await waitFor('new web-0', async () => { const l = await podsOf('web'); const x = l.find((y) => y.metadata?.name === 'web-0'); return x && x.metadata?.uid !== old.metadata?.uid && x; });
    t.ok(p, 'recreated');
    await ready('web-0');
    await c.client.patch(PODS, 'web-1', 'merge', { status: { phase: 'Failed' } }, { subresource: 'status' });
    await waitFor('web-1 replaced', async () => { const x = (await podsOf('web')).find((y) => y.metadata?.name === 'web-1'); return x && status(x).phase === 'Pending'; });
    await ready('web-1');
    await until('ready 3', 'web', (x) => status(x).readyReplicas === 3);
  });

  await t.test('rolling update: web-2, then web-1, then web-0, each after the previous is ready', async (t) => {
    const before = await getSet('web');
    const oldRev = String(status(before).currentRevision);
    await setImage('web', 'nginx:2');
    const s1 = await until('new update revision', 'web', (x) => status(x).updateRevision !== oldRev);
    const newRev = String(status(s1).updateRevision);
    const order: string[] = [];
    for (const n of ['web-2', 'web-1', 'web-0']) {
      const p = await waitFor(`${n} updated`, async () => { const x = (await podsOf('web')).find((y) => y.metadata?.name === n); return x && rev(x) === newRev && x; });
      t.equal(((p.spec as Dict).containers as Dict[])[0].image, 'nginx:2');
      const others = (await podsOf('web')).filter((x) => rev(x) === newRev).map((x) => x.metadata?.name);
      t.same(others.sort(), [...order, n].sort(), `only ${[...order, n].join(',')} updated so far`);
      order.push(n);
      await sleep(150);
      t.equal((await podsOf('web')).filter((x) => rev(x) === newRev).length, order.length, 'waits for readiness');
      await ready(n);
    }
    const done = await until('rollout complete', 'web', (x) => status(x).currentRevision === newRev && status(x).readyReplicas === 3);
    t.match(status(done), { currentReplicas: 3, updatedReplicas: 3, updateRevision: newRev });
    t.equal((await c.client.list(REVS)).items.filter((r) => r.metadata?.ownerReferences?.[0]?.name === 'web').length, 2, 'two revisions');
  });

  await t.test('OrderedReady scale down waits for readiness, goes highest first and keeps the claims', async (t) => {
    await c.client.patch(PODS, 'web-0', 'merge', { status: { conditions: [{ type: 'Ready', status: 'False', lastTransitionTime: now() }] } }, { subresource: 'status' });
    await scale('web', 1);
    await sleep(400);
    t.same(await names('web'), ['web-0', 'web-1', 'web-2'], 'nothing deleted while web-0 is not ready');
    await ready('web-0');
    const seen: string[][] = [];
    await waitFor('only web-0', async () => { const n = await names('web'); seen.push(n); return n.length === 1 && n; });
    t.notOk(seen.some((n) => n.includes('web-2') && !n.includes('web-1')), 'web-1 never goes before web-2');
    for (const n of ['www-web-0', 'www-web-1', 'www-web-2']) t.ok(await c.client.get(PVCS, n), `${n} kept`);
    const after = await until('status replicas 1', 'web', (x) => status(x).replicas === 1);
    t.match(status(after), { readyReplicas: 1 });
    const evs = await waitFor('delete events', async () => {
      const l = (await c.client.list(EVENTS, { fieldSelector: 'involvedObject.name=web' })).items.map((e) => String((e as Dict).message));
      return l.includes('delete Pod web-1 in StatefulSet web successful') && l;
    });
    t.ok(evs.includes('delete Pod web-2 in StatefulSet web successful'), 'delete events');
  });

  await t.test('Parallel scale down deletes at once, ready or not', async (t) => {
    await c.client.create(STS, sts('slow', { replicas: 3, podManagementPolicy: 'Parallel' }));
    await waitNames('slow', ['slow-0', 'slow-1', 'slow-2']);
    await ready('slow-1');
    await scale('slow', 1);
    await waitNames('slow', ['slow-0'], 10_000);
    t.pass('scaled down with unready pods');
  });

  await t.test('Parallel creates all pods at once', async (t) => {
    await c.client.create(STS, sts('par', { podManagementPolicy: 'Parallel', replicas: 4 }));
    const n = await waitNames('par', ['par-0', 'par-1', 'par-2', 'par-3']);
    t.equal(n.length, 4, 'none ready, all created');
  });

  await t.test('partition keeps lower ordinals on the old revision', async (t) => {
    await c.client.create(STS, sts('part', { updateStrategy: { type: 'RollingUpdate', rollingUpdate: { partition: 2 } } }));
    await waitNames('part', ['part-0']); await ready('part-0');
    await waitNames('part', ['part-0', 'part-1']); await ready('part-1');
    await waitNames('part', ['part-0', 'part-1', 'part-2']); await ready('part-2');
    const s0 = await until('ready', 'part', (x) => status(x).readyReplicas === 3);
    const oldRev = String(status(s0).currentRevision);
    await setImage('part', 'nginx:2');
    const s1 = await until('new revision', 'part', (x) => status(x).updateRevision !== oldRev);
    const newRev = String(status(s1).updateRevision);
    await waitFor('part-2 updated', async () => { const r = await podRevs('part'); return r[2] === newRev && r; });
    await ready('part-2');
    const st = await until('updated 1', 'part', (x) => status(x).updatedReplicas === 1 && status(x).readyReplicas === 3);
    await sleep(300);
    t.same(await podRevs('part'), [oldRev, oldRev, newRev], 'ordinals below 2 stay');
    t.match(status(st), { currentRevision: oldRev, updateRevision: newRev, currentReplicas: 2, updatedReplicas: 1 });
  });

  await t.test('OnDelete: only deleted pods get the new template', async (t) => {
    await c.client.create(STS, sts('od', { replicas: 2, podManagementPolicy: 'Parallel', updateStrategy: { type: 'OnDelete' } }));
    await waitNames('od', ['od-0', 'od-1']);
    await readyAll('od');
    const s0 = await until('ready', 'od', (x) => status(x).readyReplicas === 2);
    const oldRev = String(status(s0).currentRevision);
    await setImage('od', 'nginx:2');
    const s1 = await until('new revision', 'od', (x) => status(x).updateRevision !== oldRev);
    const newRev = String(status(s1).updateRevision);
    await sleep(300);
    t.same(await podRevs('od'), [oldRev, oldRev], 'nothing replaced on its own');
    await c.client.delete(PODS, 'od-1');
    await waitFor('od-1 on the new revision', async () => { const r = await podRevs('od'); return r[1] === newRev && r; });
    t.same(await podRevs('od'), [oldRev, newRev]);
    await ready('od-1');
    const st = await until('counts', 'od', (x) => status(x).updatedReplicas === 1 && status(x).readyReplicas === 2);
    t.match(status(st), { currentReplicas: 1, currentRevision: oldRev, updateRevision: newRev });
  });

  await t.test('ordinals.start and whenDeleted: Delete claim ownership', async (t) => {
    const created = await c.client.create(STS, sts('ord', {
      replicas: 2, podManagementPolicy: 'Parallel', ordinals: { start: 5 },
      persistentVolumeClaimRetentionPolicy: { whenDeleted: 'Delete', whenScaled: 'Retain' },
      volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } }],
    }));
    await waitNames('ord', ['ord-5', 'ord-6']);
    const pvc = await c.client.get(PVCS, 'data-ord-5');
    t.match(pvc.metadata?.ownerReferences, [{ kind: 'StatefulSet', name: 'ord', uid: created.metadata?.uid }]);
    await scale('ord', 1);
    await waitNames('ord', ['ord-5']);
    t.ok(await c.client.get(PVCS, 'data-ord-6'), 'whenScaled Retain keeps the claim');
  });

  await t.test('whenScaled: Delete hands the claim to the condemned pod', async (t) => {
    await c.client.create(STS, sts('ws', {
      replicas: 2, podManagementPolicy: 'Parallel', persistentVolumeClaimRetentionPolicy: { whenDeleted: 'Retain', whenScaled: 'Delete' },
      volumeClaimTemplates: [{ metadata: { name: 'd' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } }],
    }));
    await waitNames('ws', ['ws-0', 'ws-1']);
    const uid = (await c.client.get(PODS, 'ws-1')).metadata?.uid;
    await waitFor('claims', async () => (await c.client.list(PVCS)).items.filter((x) => x.metadata?.name?.startsWith('d-ws-')).length === 2);
    await scale('ws', 1);
    await waitNames('ws', ['ws-0']);
    const pvc = await c.client.get(PVCS, 'd-ws-1');
    t.match(pvc.metadata?.ownerReferences, [{ kind: 'Pod', name: 'ws-1', uid }], 'owned by the deleted pod (the garbage collector removes it)');
    t.notOk((await c.client.get(PVCS, 'd-ws-0')).metadata?.ownerReferences?.length, 'kept claim has no owner');
  });

  await t.test('minReadySeconds: available only after the pod stayed ready', async (t) => {
    await c.client.create(STS, sts('mr', { replicas: 1, minReadySeconds: 4 })); // long enough that a loaded machine still sees the gap
    await waitNames('mr', ['mr-0']);
    await ready('mr-0');
    const s1 = await until('ready 1', 'mr', (x) => status(x).readyReplicas === 1);
    t.equal(status(s1).availableReplicas ?? 0, 0, 'not yet available');
    const s2 = await until('available 1', 'mr', (x) => status(x).availableReplicas === 1);
    t.match(status(s2), { readyReplicas: 1, availableReplicas: 1 });
  });

  await t.test('rolling back reuses the old revision under the next number', async (t) => {
    const revsOf = async (): Promise<KubeObject[]> => (await c.client.list(REVS)).items.filter((r) => r.metadata?.ownerReferences?.[0]?.name === 'web');
    const first = (await revsOf()).find((r) => (r as Dict).revision === 1);
    await setImage('web', 'nginx:1');
    const s = await until('update revision is the first one', 'web', (x) => status(x).updateRevision === first?.metadata?.name);
    t.ok(s, 'same name');
    const again = await waitFor('renumbered', async () => { const r = (await revsOf()).find((x) => x.metadata?.name === first?.metadata?.name); return (r as Dict | undefined)?.revision === 3 && r; });
    t.ok(again, 'revision 3');
    t.equal((await revsOf()).length, 2, 'no duplicate revision');
    await waitFor('web-0 rolled back', async () => (await podRevs('web'))[0] === first?.metadata?.name);
  });
});

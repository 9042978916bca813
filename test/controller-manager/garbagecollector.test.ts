import t from 'tap';
import { startWith, waitFor } from './fixtures/controller-harness.js';
import { pino } from 'pino';
import type { KubeObject } from '../../src/api/resources/types.js';
import { type ResourceRef } from '../../src/client/rest-client.js';
import { GarbageCollector } from '../../src/daemons/controller-manager/controllers/garbagecollector.js';

const NS: ResourceRef = { group: '', version: 'v1', resource: 'namespaces' };
const CM: ResourceRef = { group: '', version: 'v1', resource: 'configmaps', namespace: 'default' };
const PODS: ResourceRef = { group: '', version: 'v1', resource: 'pods', namespace: 'default' };
const RS: ResourceRef = { group: 'apps', version: 'v1', resource: 'replicasets', namespace: 'default' };

type Dict = Record<string, unknown>;


const gone = async (f: () => Promise<unknown>): Promise<boolean> => {
  try { await f(); return false; } catch (e) { if ((e as { code?: number }).code === 404) return true; throw e; }
};

interface Owned { apiVersion: string; kind: string; name: string; uid: string; blockOwnerDeletion?: boolean; controller?: boolean }
const refTo = (o: KubeObject, extra: Partial<Owned> = {}): Owned =>
  ({ apiVersion: o.apiVersion ?? 'v1', kind: o.kind ?? 'ConfigMap', name: o.metadata?.name ?? '', uid: o.metadata?.uid ?? '', ...extra });

function cm(name: string, owners: Owned[] = [], meta: Dict = {}): KubeObject {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, ...(owners.length ? { ownerReferences: owners } : {}), ...meta } };
}
function pod(name: string, owners: Owned[]): KubeObject {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name, ownerReferences: owners }, spec: { containers: [{ name: 'c', image: 'busybox:1' }] } };
}

t.test('garbage collector against a real API server', async (t) => {
  const gc = new GarbageCollector();
  const c = await startWith(gc, ['--concurrent-gc-syncs=4']);
  t.teardown(() => c.stop());

  await t.test('background: deleting a ReplicaSet-like owner removes its pods', async (t) => {
    const owner = await c.client.create(RS, {
      apiVersion: 'apps/v1', kind: 'ReplicaSet', metadata: { name: 'rs1' },
      spec: { replicas: 0, selector: { matchLabels: { a: 'rs1' } }, template: { metadata: { labels: { a: 'rs1' } }, spec: { containers: [{ name: 'c', image: 'busybox:1' }] } } },
    });
    for (const n of ['p1', 'p2']) await c.client.create(PODS, pod(n, [refTo(owner, { controller: true, blockOwnerDeletion: true })]));
    const plain = await c.client.create(PODS, pod('unowned', []));
    await c.client.delete(RS, 'rs1');
    await waitFor('pods collected', async () => (await gone(() => c.client.get(PODS, 'p1'))) && gone(() => c.client.get(PODS, 'p2')));
    t.equal((await c.client.get(PODS, 'unowned')).metadata?.uid, plain.metadata?.uid, 'unowned pod kept');
  });

  await t.test('foreground: the owner stays until its blocking dependents are gone', async (t) => {
    const owner = await c.client.create(CM, cm('fg-owner'));
    await c.client.create(CM, cm('fg-block', [refTo(owner, { blockOwnerDeletion: true })], { finalizers: ['example.com/hold'] }));
    await c.client.create(CM, cm('fg-free', [refTo(owner)]));
    await c.client.delete(CM, 'fg-owner', { propagationPolicy: 'Foreground' });
    const blocking = await waitFor('blocking dependent marked for deletion', async () => {
      const d = await c.client.get(CM, 'fg-block');
      return Boolean(d.metadata?.deletionTimestamp) && d;
    });
    t.ok(blocking, 'dependent being deleted');
    const o = await c.client.get(CM, 'fg-owner');
    t.ok(o.metadata?.deletionTimestamp, 'owner marked');
    t.ok(o.metadata?.finalizers?.includes('foregroundDeletion'), 'owner still waits');
    await c.client.patch(CM, 'fg-block', 'merge', { metadata: { finalizers: null } });
    await waitFor('owner gone', () => gone(() => c.client.get(CM, 'fg-owner')));
    t.ok(await gone(() => c.client.get(CM, 'fg-block')), 'blocking dependent gone');
    await waitFor('non-blocking dependent gone', () => gone(() => c.client.get(CM, 'fg-free')));
  });

  await t.test('foreground through a chain: the owner waits for the whole subtree', async (t) => {
    const a = await c.client.create(CM, cm('ch-a'));
    const b = await c.client.create(CM, cm('ch-b', [refTo(a, { blockOwnerDeletion: true })]));
    await c.client.create(CM, cm('ch-c', [refTo(b, { blockOwnerDeletion: true })], { finalizers: ['example.com/hold'] }));
    await c.client.delete(CM, 'ch-a', { propagationPolicy: 'Foreground' });
    const mid = await waitFor('middle deleted in the foreground', async () => {
      const x = await c.client.get(CM, 'ch-b');
      return x.metadata?.finalizers?.includes('foregroundDeletion') && x;
    });
    t.ok(mid.metadata?.deletionTimestamp);
    await waitFor('leaf marked', async () => Boolean((await c.client.get(CM, 'ch-c')).metadata?.deletionTimestamp));
    t.ok((await c.client.get(CM, 'ch-a')).metadata?.deletionTimestamp, 'root still waiting');
    await c.client.patch(CM, 'ch-c', 'merge', { metadata: { finalizers: null } });
    await waitFor('root gone', () => gone(() => c.client.get(CM, 'ch-a')));
    t.ok(await gone(() => c.client.get(CM, 'ch-b')), 'middle gone first');
  });

  await t.test('orphan: dependents stay without the owner reference', async (t) => {
    const owner = await c.client.create(CM, cm('or-owner'));
    const other = await c.client.create(CM, cm('or-other'));
    await c.client.create(CM, cm('or-dep1', [refTo(owner, { blockOwnerDeletion: true })]));
    await c.client.create(CM, cm('or-dep2', [refTo(owner), refTo(other)]));
    await c.client.delete(CM, 'or-owner', { propagationPolicy: 'Orphan' });
    await waitFor('owner gone', () => gone(() => c.client.get(CM, 'or-owner')));
    const d1 = await c.client.get(CM, 'or-dep1');
    const d2 = await c.client.get(CM, 'or-dep2');
    t.notOk(d1.metadata?.ownerReferences?.length, 'dep1 has no owner reference');
    t.same(d2.metadata?.ownerReferences?.map((r) => r.name), ['or-other'], 'dep2 keeps its other owner');
  });

  await t.test('several owners: deleted only when all are gone', async (t) => {
    const a = await c.client.create(CM, cm('mo-a'));
    const b = await c.client.create(CM, cm('mo-b'));
    await c.client.create(CM, cm('mo-dep', [refTo(a), refTo(b)]));
    await c.client.delete(CM, 'mo-a');
    const dep = await waitFor('reference to the deleted owner dropped', async () => {
      const d = await c.client.get(CM, 'mo-dep');
      return d.metadata?.ownerReferences?.length === 1 && d;
    });
    t.equal(dep.metadata?.ownerReferences?.[0]?.name, 'mo-b');
    await c.client.delete(CM, 'mo-b');
    await waitFor('dependent collected', () => gone(() => c.client.get(CM, 'mo-dep')));
  });

  await t.test('dangling and cross-namespace owners count as absent', async (t) => {
    await c.client.create(NS, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'elsewhere' } });
    const foreign = await c.client.create({ ...CM, namespace: 'elsewhere' }, cm('foreign'));
    await c.client.create(CM, cm('cross-dep', [refTo(foreign)]));
    await c.client.create(CM, cm('dangling-dep', [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'never', uid: '00000000-0000-0000-0000-000000000001' }]));
    await waitFor('cross-namespace dependent collected', () => gone(() => c.client.get(CM, 'cross-dep')));
    await waitFor('dangling dependent collected', () => gone(() => c.client.get(CM, 'dangling-dep')));
    t.ok(await c.client.get({ ...CM, namespace: 'elsewhere' }, 'foreign'), 'the foreign owner itself is untouched');
  });

  await t.test('a dependent of a live owner is kept', async (t) => {
    const owner = await c.client.create(CM, cm('live-owner'));
    const dep = await c.client.create(CM, cm('live-dep', [refTo(owner)]));
    // Drive a change the collector must see after the dependent: deleting another owner's dependent.
    const marker = await c.client.create(CM, cm('marker-owner'));
    await c.client.create(CM, cm('marker-dep', [refTo(marker)]));
    await c.client.delete(CM, 'marker-owner');
    await waitFor('marker collected', () => gone(() => c.client.get(CM, 'marker-dep')));
    t.equal((await c.client.get(CM, 'live-dep')).metadata?.uid, dep.metadata?.uid);
    t.ok(gc.graph.get(dep.metadata?.uid ?? ''), 'the dependent is in the graph');
  });
});

t.test('custom resources defined after start are collected too (rediscovery)', async (t) => {
  const gc = new GarbageCollector();
  const c = await startWith(gc, []);
  const stop = new AbortController();
  t.teardown(async () => { stop.abort(); await c.stop(); });
  const CRD: ResourceRef = { group: 'apiextensions.k8s.io', version: 'v1', resource: 'customresourcedefinitions' };
  const WIDGETS: ResourceRef = { group: 'example.com', version: 'v1', resource: 'widgets', namespace: 'default' };
  await c.client.create(CRD, {
    apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'widgets.example.com' },
    spec: {
      group: 'example.com', scope: 'Namespaced', names: { plural: 'widgets', kind: 'Widget' },
      versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
    },
  });
  await waitFor('widgets served', async () => { await c.client.list(WIDGETS); return true; });
  await gc.rediscover(stop.signal);
  const owner = await c.client.create(WIDGETS, { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w1' } });
  const dependent = await c.client.create(CM, cm('widget-cm', [refTo(owner, { blockOwnerDeletion: true })]));
  await waitFor('the widget is in the graph', async () => !!gc.graph.get(owner.metadata?.uid ?? ''));
  t.ok(dependent.metadata?.uid);
  await c.client.delete(WIDGETS, 'w1');
  await waitFor('the dependent of the deleted widget collected', () => gone(() => c.client.get(CM, 'widget-cm')));
});

t.test('--enable-garbage-collector=false switches the collector off', async (t) => {
  const gc = new GarbageCollector();
  const messages: string[] = [];
  const log = pino({ level: 'info' }, { write: (line: string) => { messages.push(String((JSON.parse(line) as { msg?: string }).msg)); } });
  const c = await startWith(gc, ['--enable-garbage-collector=false'], log);
  t.teardown(() => c.stop());
  await c.client.create(CM, cm('dangling', [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'never', uid: '00000000-0000-0000-0000-000000000002' }]));
  await waitFor('the collector says it is off', async () => messages.some((m) => m.includes('does not run')));
  t.equal(gc.graph.size, 0, 'nothing watched');
  t.ok(await c.client.get(CM, 'dangling'), 'the dangling dependent is still there');
});

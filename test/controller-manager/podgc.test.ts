import t from 'tap';
import { waitFor, startWith } from './fixtures/controller-harness.js';
import type { KubeObject } from '../../src/api/resources/types.js';
import { type ResourceRef } from '../../src/client/rest-client.js';
import { PodGcController, terminatedOverThreshold } from '../../src/daemons/controller-manager/controllers/podgc.js';

const PODS: ResourceRef = { group: '', version: 'v1', resource: 'pods', namespace: 'default' };
const NODES: ResourceRef = { group: '', version: 'v1', resource: 'nodes' };

const gone = async (f: () => Promise<unknown>): Promise<boolean> => {
  try { await f(); return false; } catch (e) { if ((e as { code?: number }).code === 404) return true; throw e; }
};

function pod(name: string, nodeName?: string): KubeObject {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { ...(nodeName ? { nodeName } : {}), containers: [{ name: 'c', image: 'busybox:1' }] } };
}

t.test('terminatedOverThreshold picks the oldest terminated pods', async (t) => {
  const mk = (name: string, phase: string, created: string): KubeObject => ({ metadata: { name, namespace: 'n', creationTimestamp: created }, status: { phase } });
  const pods = [mk('c', 'Succeeded', '2024-01-03T00:00:00Z'), mk('a', 'Failed', '2024-01-01T00:00:00Z'), mk('r', 'Running', '2023-01-01T00:00:00Z'), mk('b', 'Succeeded', '2024-01-02T00:00:00Z')];
  t.same(terminatedOverThreshold(pods, 1).map((p) => p.metadata?.name), ['a', 'b']);
  t.same(terminatedOverThreshold(pods, 3), []);
  t.same(terminatedOverThreshold(pods, 0), [], '0 disables');
});

t.test('pod garbage collector against a real API server', async (t) => {
  const c = await startWith(new PodGcController({ periodMs: 100, quarantineMs: 300 }), ['--terminated-pod-gc-threshold=2']);
  t.teardown(() => c.stop());

  await t.test('terminated pods beyond the threshold are deleted, oldest first', async (t) => {
    for (const n of ['t1', 't2', 't3', 't4']) await c.client.create(PODS, pod(n));
    await c.client.create(PODS, pod('running'));
    await c.client.patch(PODS, 'running', 'merge', { status: { phase: 'Running' } }, { subresource: 'status' });
    for (const [i, n] of ['t1', 't2', 't3', 't4'].entries()) {
      await c.client.patch(PODS, n, 'merge', { status: { phase: i % 2 ? 'Failed' : 'Succeeded' } }, { subresource: 'status' });
    }
    await waitFor('two terminated pods left', async () => {
      const l = (await c.client.list(PODS)).items.filter((p) => ['Succeeded', 'Failed'].includes(String((p.status as { phase?: string }).phase)));
      return l.length === 2;
    });
    const names = (await c.client.list(PODS)).items.map((p) => p.metadata?.name).sort();
    t.same(names, ['running', 't3', 't4'], 'the two oldest terminated pods went; the running one stays');
  });

  await t.test('pods bound to a node that does not exist are deleted; others stay', async (t) => {
    await c.client.create(NODES, { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n-live' } });
    await c.client.create(PODS, pod('on-live', 'n-live'));
    await c.client.create(PODS, pod('on-gone', 'n-gone'));
    await c.client.create(PODS, { ...pod('kept-on-gone', 'n-gone'), metadata: { name: 'kept-on-gone', finalizers: ['example.com/keep'] } });
    await waitFor('orphan deleted', () => gone(() => c.client.get(PODS, 'on-gone')));
    t.ok(await c.client.get(PODS, 'on-live'), 'the pod on an existing node stays');
    const kept = await waitFor('held orphan marked and deleted', async () => {
      const p = await c.client.get(PODS, 'kept-on-gone');
      return Boolean(p.metadata?.deletionTimestamp) && p;
    });
    const st = kept.status as { phase?: string; conditions?: Array<Record<string, unknown>> };
    t.equal(st.phase, 'Failed');
    t.match(st.conditions?.find((x) => x.type === 'DisruptionTarget'), { status: 'True', reason: 'DeletionByPodGC' });
    await c.client.patch(PODS, 'kept-on-gone', 'merge', { metadata: { finalizers: null } });
  });
});

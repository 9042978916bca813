import { execFile } from 'node:child_process';
import { join } from 'node:path';
import t from 'tap';
import { startWith, waitFor } from './fixtures/controller-harness.js';
import { pino } from 'pino';
import type { KubeObject } from '../../src/api/resources/types.js';
import { type ResourceRef } from '../../src/client/rest-client.js';

const KUBECTL = findKubectl(33);

function kubectl(coreconfig: string, ...args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(KUBECTL ?? 'kubectl', ['--kubeconfig', coreconfig, ...args], { timeout: 60_000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`kubectl ${args.join(' ')}: ${stderr || err.message}`)); else resolve(stdout);
    });
  });
}
import { newNamespaceController } from '../../src/daemons/controller-manager/controllers/namespace.js';
import { kubectl as findKubectl } from '../helpers/kubectl.js';

const NS: ResourceRef = { group: '', version: 'v1', resource: 'namespaces' };
const inNs = (resource: string, namespace: string, group = '', version = 'v1'): ResourceRef => ({ group, version, resource, namespace });

type Dict = Record<string, unknown>;


const gone = async (f: () => Promise<unknown>): Promise<boolean> => {
  try { await f(); return false; } catch (e) { if ((e as { code?: number }).code === 404) return true; throw e; }
};

t.test('namespace controller against a real API server', async (t) => {
  const c = await startWith(newNamespaceController({ firstRecheckMs: 100 }), ['--namespace-sync-period=2s', '--concurrent-namespace-syncs=2']);
  t.teardown(() => c.stop());

  await t.test('deleting a namespace with content empties it and the namespace disappears', async (t) => {
    await c.client.create(NS, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'doomed' } });
    for (let i = 0; i < 3; i++) await c.client.create(inNs('configmaps', 'doomed'), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm${i}` }, data: { k: 'v' } });
    await c.client.create(inNs('secrets', 'doomed'), { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' }, stringData: { a: 'b' } });
    await c.client.create(inNs('pods', 'doomed'), { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: { containers: [{ name: 'c', image: 'busybox:1' }] } });
    await c.client.create(inNs('deployments', 'doomed', 'apps'), {
      apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd' },
      spec: { selector: { matchLabels: { a: 'b' } }, template: { metadata: { labels: { a: 'b' } }, spec: { containers: [{ name: 'c', image: 'busybox:1' }] } } },
    });
    // Kinds whose DELETE without a policy orphans (batch/v1 Job, v1 ReplicationController): the
    // controller deletes in the background, or they would wait for a collector that is not running.
    const podTemplate = { metadata: { labels: { a: 'b' } }, spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'busybox:1' }] } };
    await c.client.create(inNs('jobs', 'doomed', 'batch'), { apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'j' }, spec: { template: podTemplate } });
    await c.client.create(inNs('replicationcontrollers', 'doomed'), {
      apiVersion: 'v1', kind: 'ReplicationController', metadata: { name: 'rc' },
      spec: { replicas: 0, selector: { a: 'b' }, template: { ...podTemplate, spec: { ...podTemplate.spec, restartPolicy: 'Always' } } },
    });
    const marked = await c.client.delete(NS, 'doomed');
    t.equal((marked.status as Dict | undefined)?.phase, 'Terminating');
    await waitFor('namespace gone', () => gone(() => c.client.get(NS, 'doomed')));
    // The content went through the API: a namespace of the same name starts empty.
    await c.client.create(NS, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'doomed' } });
    t.equal((await c.client.list(inNs('configmaps', 'doomed'))).items.length, 0);
    t.equal((await c.client.list(inNs('deployments', 'doomed', 'apps'))).items.length, 0);
    t.equal((await c.client.list(inNs('pods', 'doomed'))).items.length, 0);
    t.equal((await c.client.list(inNs('jobs', 'doomed', 'batch'))).items.length, 0);
    t.equal((await c.client.list(inNs('replicationcontrollers', 'doomed'))).items.length, 0);
  });

  await t.test('kubectl delete namespace waits until the namespace is gone', { skip: KUBECTL ? false : 'kubectl.1.33 not installed' }, async (t) => {
    await kubectl(c.coreconfigPath, 'create', 'namespace', 'kx');
    await kubectl(c.coreconfigPath, '-n', 'kx', 'create', 'configmap', 'one', '--from-literal=a=b');
    const out = await kubectl(c.coreconfigPath, 'delete', 'namespace', 'kx', '--timeout=30s');
    t.match(out, /namespace "kx" deleted/);
    t.ok(await gone(() => c.client.get(NS, 'kx')), 'gone when kubectl returns');
  });

  await t.test('pods go first: other content stays while a pod is terminating', async (t) => {
    await c.client.create(NS, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'ordered' } });
    await c.client.create(inNs('pods', 'ordered'), { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'bound' }, spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'busybox:1' }] } });
    await c.client.create(inNs('configmaps', 'ordered'), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'config' } });
    await c.client.delete(NS, 'ordered');
    await waitFor('pod terminating', async () => Boolean((await c.client.get(inNs('pods', 'ordered'), 'bound')).metadata?.deletionTimestamp));
    await waitFor('pods reported as remaining', async () => {
      const n = await c.client.get(NS, 'ordered');
      return (((n.status as Dict).conditions ?? []) as Dict[]).some((x) => x.type === 'NamespaceContentRemaining' && /pods\. has 1/.test(String(x.message)));
    });
    t.ok(await c.client.get(inNs('configmaps', 'ordered'), 'config'), 'the config map waits for the pod');
    // No node agent here: finish the pod's termination as one would.
    await c.client.delete(inNs('pods', 'ordered'), 'bound', { gracePeriodSeconds: 0 });
    await waitFor('namespace gone', () => gone(() => c.client.get(NS, 'ordered')));
    t.pass('the rest followed');
  });

  await t.test('content held by a finalizer keeps the namespace, with conditions saying why', async (t) => {
    await c.client.create(NS, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'held' } });
    await c.client.create(inNs('configmaps', 'held'), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'sticky', finalizers: ['example.com/hold'] } });
    await c.client.create(inNs('configmaps', 'held'), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'plain' } });
    await c.client.delete(NS, 'held');
    const ns = await waitFor('conditions', async () => {
      const n = await c.client.get(NS, 'held');
      const conds = ((n.status as Dict | undefined)?.conditions ?? []) as Dict[];
      return conds.some((x) => x.type === 'NamespaceFinalizersRemaining' && x.status === 'True') && n;
    });
    const conds = ((ns.status as Dict).conditions ?? []) as Dict[];
    const byType = Object.fromEntries(conds.map((x) => [x.type, x]));
    t.match(byType['NamespaceContentRemaining'], { status: 'True', reason: 'SomeResourcesRemain', message: /configmaps\. has 1 resource instances/ });
    t.match(byType['NamespaceFinalizersRemaining'], { status: 'True', reason: 'SomeFinalizersRemain', message: /example\.com\/hold in 1 resource instances/ });
    t.match(byType['NamespaceDeletionDiscoveryFailure'], { status: 'False', reason: 'ResourcesDiscovered' });
    t.match(byType['NamespaceDeletionContentFailure'], { status: 'False', reason: 'ContentDeleted' });
    t.ok(await gone(() => c.client.get(inNs('configmaps', 'held'), 'plain')), 'the rest was deleted');
    t.same((ns.spec as Dict).finalizers, ['kubernetes'], 'finalizer kept while content remains');

    await c.client.patch(inNs('configmaps', 'held'), 'sticky', 'merge', { metadata: { finalizers: null } });
    await waitFor('namespace gone', () => gone(() => c.client.get(NS, 'held')));
    t.pass('namespace deleted after its last object went');
  });
});

import t from 'tap';
import type { KubeObject } from '../../src/api/resources/types.js';
import type { ResourceRef } from '../../src/client/rest-client.js';
import { parseControllerManagerArgs } from '../../src/flags/controller-manager.js';
import { newResourceQuotaController } from '../../src/daemons/controller-manager/controllers/resourcequota.js';
import { countedRef, desiredStatus } from '../../src/daemons/controller-manager/controllers/resourcequota/status.js';
import { assertSelectable, startWith, waitFor } from './fixtures/controller-harness.js';

const NAME = 'resourcequota';
const NS: ResourceRef = { group: '', version: 'v1', resource: 'namespaces' };
const core = (resource: string, namespace: string): ResourceRef => ({ group: '', version: 'v1', resource, namespace });
const DEPLOYMENTS = (namespace: string): ResourceRef => ({ group: 'apps', version: 'v1', resource: 'deployments', namespace });

type Quantities = Record<string, string>;
type Client = Awaited<ReturnType<typeof startWith>>['client'];

interface Container { cpu?: string; memory?: string }
/** A pod whose containers request `cpu` and limit `memory` (none: BestEffort). */
function pod(name: string, containers: Container[] = [{}], extra: Record<string, unknown> = {}): KubeObject {
  return {
    apiVersion: 'v1', kind: 'Pod', metadata: { name },
    spec: {
      ...extra,
      containers: containers.map((c, i) => ({
        name: `c${i}`, image: 'x:1',
        ...(c.cpu || c.memory ? { resources: { ...(c.cpu ? { requests: { cpu: c.cpu } } : {}), ...(c.memory ? { limits: { memory: c.memory } } : {}) } } : {}),
      })),
    },
  };
}

const quota = (name: string, hard: Quantities, spec: Record<string, unknown> = {}): KubeObject =>
  ({ apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name }, spec: { hard, ...spec } });

const statusOf = (q: KubeObject): { hard?: Quantities; used?: Quantities } => (q.status ?? {}) as { hard?: Quantities; used?: Quantities };

/** Waits until the quota's status.used is exactly `used` (and status.hard its spec.hard); returns the quota. */
async function usedBecomes(client: Client, namespace: string, name: string, used: Quantities): Promise<KubeObject> {
  let last: unknown;
  try {
    return await waitFor(`${namespace}/${name} used ${JSON.stringify(used)}`, async () => {
      const q = await client.get(core('resourcequotas', namespace), name);
      last = q.status;
      const s = statusOf(q);
      return JSON.stringify(sorted(s.used)) === JSON.stringify(sorted(used))
        && JSON.stringify(sorted(s.hard)) === JSON.stringify(sorted((q.spec as { hard?: Quantities }).hard)) && q;
    });
  } catch (e) {
    throw new Error(`${(e as Error).message}; last status ${JSON.stringify(last)}`);
  }
}

const sorted = (m: Quantities | undefined): Quantities => Object.fromEntries(Object.entries(m ?? {}).sort(([a], [b]) => a.localeCompare(b)));

/** Writes the quota's status as someone else would (retrying a lost race with the controller). */
async function writeStatus(client: Client, namespace: string, name: string, status: { hard: Quantities; used: Quantities }): Promise<KubeObject> {
  return waitFor('foreign status write', async () => {
    const q = await client.get(core('resourcequotas', namespace), name);
    return client.update(core('resourcequotas', namespace), { ...q, status }, { subresource: 'status' });
  });
}

t.test('--controllers selects resourcequota (on by default, implemented)', async (t) => {
  await assertSelectable(t, NAME);
  const config = parseControllerManagerArgs(['--resource-quota-sync-period=30s', '--concurrent-resource-quota-syncs=2']).config;
  t.equal(config.resourceQuotaSyncPeriod, 30_000, 'sync period in ms');
  t.equal(config.concurrentResourceQuotaSyncs, 2);
});

t.test('status computation', async (t) => {
  t.same(countedRef('apps', 'deployments'), { group: 'apps', version: 'v1', resource: 'deployments' }, 'preferred version from the definitions');
  t.equal(countedRef('example.com', 'widgets'), undefined, 'unknown resource');
  t.equal(countedRef('', 'nodes'), undefined, 'cluster-scoped: nothing in a namespace');
  const q: KubeObject = {
    ...quota('q', { pods: '5', 'requests.cpu': '2', 'count/deployments.apps': '3' }),
    status: { hard: { pods: '1' }, used: { pods: '1', 'count/deployments.apps': '2' } },
  };
  const pods = [pod('a', [{ cpu: '100m' }, { cpu: '200m' }]), pod('b', [{ cpu: '700m' }]), { ...pod('done', [{ cpu: '1' }]), status: { phase: 'Failed' } }];
  const known = desiredStatus(q, (group, plural) => (plural === 'pods' ? pods : []));
  t.same(known, { hard: { pods: '5', 'requests.cpu': '2', 'count/deployments.apps': '3' }, used: { pods: '2', 'requests.cpu': '1', 'count/deployments.apps': '0' } },
    'sums drift-free ("1", not "1000m"); terminal pods count nothing; unused keys are "0"');
  const pending = desiredStatus(q, (group, plural) => (plural === 'pods' ? pods : undefined));
  t.same(pending.used, { pods: '2', 'requests.cpu': '1', 'count/deployments.apps': '2' }, 'a resource not listed yet keeps its last value');
  const fresh = desiredStatus({ ...q, status: {} }, (group, plural) => (plural === 'pods' ? pods : undefined));
  t.same(fresh.used, { pods: '2', 'requests.cpu': '1' }, '…or stays absent');
});

t.test('resourcequota controller against a real API server', async (t) => {
  const c = await startWith(newResourceQuotaController());
  t.teardown(() => c.stop());
  const newNamespace = (name: string): Promise<KubeObject> => c.client.create(NS, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });

  await t.test('usage of existing objects, then replenishment as they come and go', async (t) => {
    const ns = 'q-count';
    await newNamespace(ns);
    await c.client.create(core('pods', ns), pod('a', [{ cpu: '100m', memory: '256Mi' }]));
    await c.client.create(core('pods', ns), pod('b', [{ cpu: '200m', memory: '128Mi' }, { cpu: '300m', memory: '128Mi' }]));
    for (const name of ['one', 'two']) await c.client.create(core('configmaps', ns), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name } });
    const deployment = (name: string): KubeObject => ({
      apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name },
      spec: { selector: { matchLabels: { app: name } }, template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'c', image: 'x:1' }] } } },
    });
    await c.client.create(DEPLOYMENTS(ns), deployment('web'));
    await c.client.create(core('services', ns), { apiVersion: 'v1', kind: 'Service', metadata: { name: 'np' }, spec: { type: 'NodePort', ports: [{ port: 80 }] } });
    await c.client.create(core('services', ns), { apiVersion: 'v1', kind: 'Service', metadata: { name: 'cip' }, spec: { ports: [{ port: 80 }] } });
    await c.client.create(core('persistentvolumeclaims', ns), {
      apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'data' },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
    });
    const hard = {
      pods: '3', 'requests.cpu': '1', 'limits.memory': '1Gi', configmaps: '5', 'count/deployments.apps': '2',
      services: '2', 'services.nodeports': '2', 'requests.storage': '10Gi',
    };
    await c.client.create(core('resourcequotas', ns), quota('compute', hard));
    const q = await usedBecomes(c.client, ns, 'compute', {
      pods: '2', 'requests.cpu': '600m', 'limits.memory': '512Mi', configmaps: '2', 'count/deployments.apps': '1',
      services: '2', 'services.nodeports': '1', 'requests.storage': '1Gi',
    });
    t.same(statusOf(q).hard, hard, 'status.hard is spec.hard');

    await c.client.create(core('pods', ns), pod('c', [{ cpu: '400m', memory: '512Mi' }]));
    await usedBecomes(c.client, ns, 'compute', {
      pods: '3', 'requests.cpu': '1', 'limits.memory': '1Gi', configmaps: '2', 'count/deployments.apps': '1',
      services: '2', 'services.nodeports': '1', 'requests.storage': '1Gi',
    });
    t.pass('a new pod counts');

    await c.client.delete(core('pods', ns), 'a', { gracePeriodSeconds: 0 });
    await c.client.patch(core('pods', ns), 'b', 'merge', { status: { phase: 'Succeeded' } }, { subresource: 'status' });
    await c.client.create(DEPLOYMENTS(ns), deployment('api'));
    await c.client.delete(core('configmaps', ns), 'one');
    await c.client.delete(core('services', ns), 'np');
    await usedBecomes(c.client, ns, 'compute', {
      pods: '1', 'requests.cpu': '400m', 'limits.memory': '512Mi', configmaps: '1', 'count/deployments.apps': '2',
      services: '1', 'services.nodeports': '0', 'requests.storage': '1Gi',
    });
    t.pass('deleted and terminal pods, deleted config maps and services stop counting; a second deployment counts');
  });

  await t.test('scopes: BestEffort, and a PriorityClass scope selector', async (t) => {
    const ns = 'q-scope';
    await newNamespace(ns);
    const critical = { priorityClassName: 'system-cluster-critical' };
    await c.client.create(core('pods', ns), pod('plain'));
    await c.client.create(core('pods', ns), pod('burstable', [{ cpu: '100m' }]));
    await c.client.create(core('pods', ns), pod('crit', [{}], critical));
    await c.client.create(core('pods', ns), pod('crit-burstable', [{ cpu: '250m' }], critical));
    await c.client.create(core('resourcequotas', ns), quota('besteffort', { pods: '10' }, { scopes: ['BestEffort'] }));
    await c.client.create(core('resourcequotas', ns), quota('critical', { pods: '10', 'requests.cpu': '2' }, {
      scopeSelector: { matchExpressions: [{ scopeName: 'PriorityClass', operator: 'In', values: ['system-cluster-critical'] }] },
    }));
    await usedBecomes(c.client, ns, 'besteffort', { pods: '2' });
    await usedBecomes(c.client, ns, 'critical', { pods: '2', 'requests.cpu': '250m' });
    t.pass('each quota counts only the pods in its scope');

    await c.client.create(core('pods', ns), pod('plain-2'));
    await c.client.delete(core('pods', ns), 'crit', { gracePeriodSeconds: 0 });
    await usedBecomes(c.client, ns, 'besteffort', { pods: '2' });
    await usedBecomes(c.client, ns, 'critical', { pods: '1', 'requests.cpu': '250m' });
    t.pass('replenishment respects the scopes');
  });

  await t.test('status follows spec.hard, and status written wrong by others is corrected', async (t) => {
    const ns = 'q-edit';
    await newNamespace(ns);
    await c.client.create(core('configmaps', ns), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'one' } });
    await c.client.create(core('secrets', ns), { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' } });
    await c.client.create(core('resourcequotas', ns), quota('objects', { configmaps: '5' }));
    const q = await usedBecomes(c.client, ns, 'objects', { configmaps: '1' });

    const hard = { configmaps: '4', secrets: '3', 'count/widgets.example.com': '2', 'count/nodes': '1' };
    await c.client.update(core('resourcequotas', ns), { ...q, spec: { hard } });
    const edited = await usedBecomes(c.client, ns, 'objects', { configmaps: '1', secrets: '1', 'count/widgets.example.com': '0', 'count/nodes': '0' });
    t.same(statusOf(edited).hard, hard, 'new hard limits; unknown and cluster-scoped resources count 0');

    const wrong = await writeStatus(c.client, ns, 'objects', { hard: { configmaps: '100' }, used: { configmaps: '50' } });
    t.same(statusOf(wrong).hard, { configmaps: '100' }, 'the foreign write landed');
    await usedBecomes(c.client, ns, 'objects', { configmaps: '1', secrets: '1', 'count/widgets.example.com': '0', 'count/nodes': '0' });
    t.pass('a wrong status.hard is put back at once, and used with it');

    const low = await writeStatus(c.client, ns, 'objects', { hard, used: { configmaps: '0', secrets: '0', 'count/widgets.example.com': '0', 'count/nodes': '0' } });
    t.same(statusOf(low).used?.configmaps, '0', 'the foreign write landed');
    await c.client.create(core('configmaps', ns), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'two' } });
    await usedBecomes(c.client, ns, 'objects', { configmaps: '2', secrets: '1', 'count/widgets.example.com': '0', 'count/nodes': '0' });
    t.pass('a wrong status.used is recounted on the next change in the namespace');

    await c.client.delete(core('resourcequotas', ns), 'objects');
    await c.client.create(core('configmaps', ns), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'three' } });
    t.pass('a deleted quota is not written');
  });
});

t.test('--resource-quota-sync-period recounts every quota without any event', async (t) => {
  const c = await startWith(newResourceQuotaController(), ['--resource-quota-sync-period=1s', '--concurrent-resource-quota-syncs=1']);
  t.teardown(() => c.stop());
  const ns = 'q-resync';
  await c.client.create(NS, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  await c.client.create(core('configmaps', ns), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'one' } });
  await c.client.create(core('resourcequotas', ns), quota('objects', { configmaps: '5', 'count/deployments.apps': '1' }));
  await usedBecomes(c.client, ns, 'objects', { configmaps: '1', 'count/deployments.apps': '0' });
  const wrong = await writeStatus(c.client, ns, 'objects', { hard: { configmaps: '5', 'count/deployments.apps': '1' }, used: { configmaps: '4', 'count/deployments.apps': '1' } });
  t.same(statusOf(wrong).used, { configmaps: '4', 'count/deployments.apps': '1' }, 'the foreign write landed');
  await usedBecomes(c.client, ns, 'objects', { configmaps: '1', 'count/deployments.apps': '0' });
  t.pass('corrected by the periodic resync');
});

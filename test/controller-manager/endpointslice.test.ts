import t from 'tap';
import { assertSelectable, startWith, waitFor } from './fixtures/controller-harness.js';
import type { KubeObject } from '../../src/api/resources/types.js';
import type { RestClient, ResourceRef } from '../../src/client/rest-client.js';
import { EndpointSliceController, TRIGGER_TIME_ANNOTATION } from '../../src/daemons/controller-manager/controllers/endpointslice.js';
import { GarbageCollector } from '../../src/daemons/controller-manager/controllers/garbagecollector.js';
import { planSlices } from '../../src/daemons/controller-manager/controllers/endpointslice/reconciler.js';
import { formatTriggerTime } from '../../src/daemons/controller-manager/controllers/endpointslice/trackers.js';

const PODS: ResourceRef = { group: '', version: 'v1', resource: 'pods', namespace: 'default' };
const SVC: ResourceRef = { group: '', version: 'v1', resource: 'services', namespace: 'default' };
const NODES: ResourceRef = { group: '', version: 'v1', resource: 'nodes' };
const SLICES: ResourceRef = { group: 'discovery.k8s.io', version: 'v1', resource: 'endpointslices', namespace: 'default' };
const MANAGED_BY = 'endpointslice.kubernetes.io/managed-by';

type Dict = Record<string, unknown>;
interface Ep { addresses: string[]; conditions: { ready?: boolean; serving?: boolean; terminating?: boolean }; nodeName?: string; zone?: string; hostname?: string; targetRef?: Dict }

function pod(name: string, labels: Record<string, string>, node: string, ports: Dict[] = [], extra: Dict = {}): KubeObject {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name, labels }, spec: { nodeName: node, containers: [{ name: 'c', image: 'busybox:1', ports }], ...extra } };
}

async function setStatus(client: RestClient, name: string, ip: string, ready: boolean): Promise<void> {
  await client.patch(PODS, name, 'merge', {
    status: { phase: 'Running', podIP: ip, podIPs: [{ ip }], conditions: [{ type: 'Ready', status: ready ? 'True' : 'False', lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z') }] },
  }, { subresource: 'status' });
}

async function slicesOf(client: RestClient, svc: string): Promise<KubeObject[]> {
  return (await client.list(SLICES, { labelSelector: `kubernetes.io/service-name=${svc}` })).items;
}
const endpointsOf = (s: KubeObject): Ep[] => (s.endpoints ?? []) as Ep[];
const allEndpoints = (slices: KubeObject[]): Ep[] => slices.flatMap(endpointsOf);
const find = (slices: KubeObject[], ip: string): Ep | undefined => allEndpoints(slices).find((e) => e.addresses.includes(ip));
const portsOf = (s: KubeObject): string[] => ((s.ports ?? []) as Dict[]).map((p) => `${String(p.name)}:${String(p.port)}/${String(p.protocol)}`).sort();

t.test('endpointslice is selectable under --controllers and on by default', async (t) => {
  await assertSelectable(t, 'endpointslice');
});

t.test('planning: fills slices up to the maximum, keeps a placeholder, reuses doomed slices', async (t) => {
  const svc: KubeObject = { metadata: { name: 's', namespace: 'n', uid: 'svc-uid', labels: { team: 'a' } }, spec: { clusterIP: '10.0.0.9', ipFamilies: ['IPv4'], selector: { app: 'a' }, ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' }] } };
  const mk = (i: number): KubeObject => ({
    metadata: { name: `p${i}`, namespace: 'n', uid: `u${i}`, labels: { app: 'a' } },
    spec: { nodeName: 'n1', containers: [] },
    status: { phase: 'Running', podIPs: [{ ip: `10.9.0.${i + 1}` }], conditions: [{ type: 'Ready', status: 'True' }] },
  });
  const node = (): KubeObject => ({ metadata: { name: 'n1' } });
  const first = planSlices({ service: svc, pods: [0, 1, 2, 3, 4].map(mk), existing: [], node, maxEndpointsPerSlice: 2 });
  t.same(first.create.map((s) => (s.endpoints as unknown[]).length), [2, 2, 1], 'five endpoints, two per slice');
  t.same(first.create[0]!.metadata, {
    generateName: 's-', namespace: 'n', labels: { team: 'a', 'kubernetes.io/service-name': 's', [MANAGED_BY]: 'endpointslice-controller.k8s.io' },
    ownerReferences: [{ apiVersion: 'v1', kind: 'Service', name: 's', uid: 'svc-uid', controller: true, blockOwnerDeletion: true }],
  });
  const stored = first.create.map((s, i) => ({ ...s, metadata: { ...s.metadata, name: `s-${i}`, uid: `slice-${i}` } }));
  const none = planSlices({ service: svc, pods: [], existing: stored, node, maxEndpointsPerSlice: 2 });
  t.same(none.create, [], 'the placeholder reuses a slice');
  t.same(none.delete.length, 2);
  t.same(none.update.map((s) => [s.metadata?.name, s.endpoints, s.ports]), [['s-0', [], []]], 'one doomed slice becomes the placeholder');
  const unknownNode = planSlices({ service: svc, pods: [mk(7)], existing: [], node: () => undefined, maxEndpointsPerSlice: 2 });
  t.same(unknownNode.skipped, ['p7'], 'a pod on an unknown node is left out');
  t.equal(formatTriggerTime(Date.parse('2024-05-06T07:08:09Z')), '2024-05-06T07:08:09Z');
  t.equal(formatTriggerTime(Date.parse('2024-05-06T07:08:09.120Z')), '2024-05-06T07:08:09.12Z');
});

t.test('endpointslice controller against a real API server', async (t) => {
  const controller = new EndpointSliceController();
  const c = await startWith([controller, new GarbageCollector()]);
  t.teardown(() => c.stop());

  await c.client.create(NODES, { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1', labels: { 'topology.kubernetes.io/zone': 'zone-a' } } });
  await c.client.create(NODES, { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n2' } });
  const svc = await c.client.create(SVC, {
    apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', labels: { tier: 'front' } },
    spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 'http' }, { name: 'metrics', port: 9000, targetPort: 9100 }] },
  });
  await c.client.create(PODS, pod('w1', { app: 'web' }, 'n1', [{ name: 'http', containerPort: 8080 }], { hostname: 'w1', subdomain: 'web' }));
  await c.client.create(PODS, pod('w2', { app: 'web' }, 'n2', [{ name: 'http', containerPort: 8081 }]));
  await c.client.create(PODS, pod('other', { app: 'other' }, 'n1', [{ name: 'http', containerPort: 8080 }]));

  await t.test('a service with no ready endpoints gets one placeholder slice', async (t) => {
    const [s] = await waitFor('placeholder', async () => { const l = await slicesOf(c.client, 'web'); return l.length === 1 && l; });
    t.same(s!.endpoints ?? [], []);
    t.same(s!.ports ?? [], []);
    t.equal(s!.addressType, 'IPv4');
    t.match(s!.metadata, {
      generateName: 'web-',
      labels: { 'kubernetes.io/service-name': 'web', [MANAGED_BY]: 'endpointslice-controller.k8s.io', tier: 'front' },
      ownerReferences: [{ apiVersion: 'v1', kind: 'Service', name: 'web', uid: svc.metadata?.uid, controller: true, blockOwnerDeletion: true }],
    });
    t.ok(s!.metadata?.annotations?.[TRIGGER_TIME_ANNOTATION], 'the last-change-trigger-time annotation');
  });

  await t.test('ready and not-ready pods; named ports resolve per pod', async (t) => {
    await setStatus(c.client, 'w1', '10.1.0.1', true);
    await setStatus(c.client, 'w2', '10.1.0.2', false);
    await setStatus(c.client, 'other', '10.1.0.9', true);
    const slices = await waitFor('two port sets', async () => {
      const l = await slicesOf(c.client, 'web');
      return l.length === 2 && find(l, '10.1.0.1') && find(l, '10.1.0.2') && l;
    });
    const s1 = slices.find((s) => find([s], '10.1.0.1'))!, s2 = slices.find((s) => find([s], '10.1.0.2'))!;
    t.not(s1.metadata?.name, s2.metadata?.name, 'pods serving http on different ports are in different slices');
    t.same(portsOf(s1), ['http:8080/TCP', 'metrics:9100/TCP']);
    t.same(portsOf(s2), ['http:8081/TCP', 'metrics:9100/TCP']);
    t.same(find(slices, '10.1.0.1'), {
      addresses: ['10.1.0.1'], conditions: { ready: true, serving: true, terminating: false }, hostname: 'w1',
      targetRef: { kind: 'Pod', namespace: 'default', name: 'w1', uid: (await c.client.get(PODS, 'w1')).metadata?.uid },
      nodeName: 'n1', zone: 'zone-a',
    });
    t.same(find(slices, '10.1.0.2')?.conditions, { ready: false, serving: false, terminating: false });
    t.notOk(find(slices, '10.1.0.2')?.zone, 'no zone label on its node');
    t.notOk(find(slices, '10.1.0.9'), 'a pod the selector does not match is absent');
    t.ok(slices.every((s) => s.metadata?.annotations?.[TRIGGER_TIME_ANNOTATION]));
  });

  await t.test('a readiness change updates the slice in place', async (t) => {
    const before = (await slicesOf(c.client, 'web')).map((s) => s.metadata?.name).sort();
    await setStatus(c.client, 'w2', '10.1.0.2', true);
    const after = await waitFor('w2 ready', async () => { const l = await slicesOf(c.client, 'web'); return find(l, '10.1.0.2')?.conditions.ready === true && l; });
    t.same(after.map((s) => s.metadata?.name).sort(), before, 'same slices, updated');
  });

  await t.test('publishNotReadyAddresses makes every endpoint ready', async (t) => {
    await setStatus(c.client, 'w1', '10.1.0.1', false);
    await c.client.patch(SVC, 'web', 'merge', { spec: { publishNotReadyAddresses: true } });
    const l = await waitFor('published not ready', async () => { const l = await slicesOf(c.client, 'web'); return find(l, '10.1.0.1')?.conditions.serving === false && find(l, '10.1.0.1')?.conditions.ready === true && l; });
    t.same(find(l, '10.1.0.1')?.conditions, { ready: true, serving: false, terminating: false });
    await c.client.patch(SVC, 'web', 'merge', { spec: { publishNotReadyAddresses: false } });
    await setStatus(c.client, 'w1', '10.1.0.1', true);
    await waitFor('back to normal', async () => find(await slicesOf(c.client, 'web'), '10.1.0.1')?.conditions.ready === true);
  });

  await t.test('service labels follow onto the slices', async (t) => {
    await c.client.patch(SVC, 'web', 'merge', { metadata: { labels: { tier: 'back' } } });
    const l = await waitFor('labels', async () => { const l = await slicesOf(c.client, 'web'); return l.every((s) => s.metadata?.labels?.tier === 'back') && l; });
    t.ok(l.every((s) => s.metadata?.labels?.[MANAGED_BY] === 'endpointslice-controller.k8s.io'));
  });

  await t.test('a terminating pod is marked terminating; a deleted pod goes', async (t) => {
    await c.client.delete(PODS, 'w1', { gracePeriodSeconds: 30 });
    const l = await waitFor('w1 terminating', async () => { const l = await slicesOf(c.client, 'web'); return find(l, '10.1.0.1')?.conditions.terminating === true && l; });
    t.same(find(l, '10.1.0.1')?.conditions, { ready: false, serving: true, terminating: true }, 'still serving, no longer ready');
    await c.client.delete(PODS, 'w1', { gracePeriodSeconds: 0 });
    const after = await waitFor('w1 gone', async () => { const l = await slicesOf(c.client, 'web'); return !find(l, '10.1.0.1') && l.length === 1 && l; });
    t.same(portsOf(after[0]!), ['http:8081/TCP', 'metrics:9100/TCP'], 'the slice of its port set went with it');
  });

  await t.test('a slice deleted by hand is put back', async (t) => {
    const [s] = await slicesOf(c.client, 'web');
    await c.client.delete(SLICES, s!.metadata?.name ?? '');
    const l = await waitFor('recreated', async () => { const l = await slicesOf(c.client, 'web'); return l.length === 1 && l[0]!.metadata?.uid !== s!.metadata?.uid && find(l, '10.1.0.2') && l; });
    t.ok(find(l, '10.1.0.2'));
  });

  await t.test('more than 100 pods make a second slice', async (t) => {
    await c.client.create(SVC, { apiVersion: 'v1', kind: 'Service', metadata: { name: 'big' }, spec: { selector: { app: 'big' }, ports: [{ port: 80 }] } });
    const names = Array.from({ length: 101 }, (_, i) => `big-${i}`);
    for (let i = 0; i < names.length; i += 20) {
      await Promise.all(names.slice(i, i + 20).map(async (name, j) => {
        await c.client.create(PODS, pod(name, { app: 'big' }, 'n1'));
        await setStatus(c.client, name, `10.2.${Math.floor((i + j) / 200)}.${((i + j) % 200) + 1}`, true);
      }));
    }
    const l = await waitFor('101 endpoints', async () => { const l = await slicesOf(c.client, 'big'); return allEndpoints(l).length === 101 && l; }, 60_000);
    const sizes = l.map((s) => endpointsOf(s).length).sort((a, b) => b - a);
    t.same(sizes, [100, 1], 'one full slice and one more');
    t.equal(new Set(allEndpoints(l).map((e) => e.addresses[0])).size, 101, 'every pod once');
  });

  await t.test('a service without selector gets no managed slice; its own slices are left alone', async (t) => {
    await c.client.create(SVC, { apiVersion: 'v1', kind: 'Service', metadata: { name: 'manual' }, spec: { ports: [{ port: 80 }] } });
    await c.client.create(SLICES, {
      apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', addressType: 'IPv4',
      metadata: { name: 'manual-1', labels: { 'kubernetes.io/service-name': 'manual', [MANAGED_BY]: 'me' } },
      endpoints: [{ addresses: ['192.0.2.1'] }], ports: [{ port: 80 }],
    });
    // A service created after it gets its placeholder: the controller has seen both.
    await c.client.create(SVC, { apiVersion: 'v1', kind: 'Service', metadata: { name: 'marker' }, spec: { selector: { app: 'none' }, ports: [{ port: 80 }] } });
    await waitFor('marker placeholder', async () => (await slicesOf(c.client, 'marker')).length === 1);
    await controller.sync('default/manual');
    const l = await slicesOf(c.client, 'manual');
    t.same(l.map((s) => s.metadata?.name), ['manual-1'], 'only the user-managed slice');
    t.same(allEndpoints(l).map((e) => e.addresses), [['192.0.2.1']]);
  });

  await t.test('a service losing its selector loses its managed slices', async (t) => {
    await c.client.patch(SVC, 'web', 'merge', { spec: { selector: null } });
    await waitFor('web slices deleted', async () => (await slicesOf(c.client, 'web')).length === 0);
    t.pass('deleted');
  });

  await t.test('a deleted service loses its slices through the garbage collector', async (t) => {
    t.ok((await slicesOf(c.client, 'big')).length > 0);
    await c.client.delete(SVC, 'big');
    await waitFor('big slices collected', async () => (await slicesOf(c.client, 'big')).length === 0, 60_000);
    t.pass('collected');
  });
});

import t from 'tap';
import { waitFor, startWith } from './fixtures/controller-harness.js';
import type { KubeObject } from '../../src/api/resources/types.js';
import { RestClient, type ResourceRef } from '../../src/client/rest-client.js';
import { computeSubsets, newEndpointController, truncateSubsets, type EndpointSubset } from '../../src/daemons/controller-manager/controllers/endpoint.js';

const PODS: ResourceRef = { group: '', version: 'v1', resource: 'pods', namespace: 'default' };
const SVC: ResourceRef = { group: '', version: 'v1', resource: 'services', namespace: 'default' };
const EP: ResourceRef = { group: '', version: 'v1', resource: 'endpoints', namespace: 'default' };

type Dict = Record<string, unknown>;

function pod(name: string, labels: Record<string, string>, _ip: string, ports: Dict[] = [], extra: Dict = {}): KubeObject {
  return {
    apiVersion: 'v1', kind: 'Pod', metadata: { name, labels },
    spec: { containers: [{ name: 'c', image: 'busybox:1', ports }], ...extra },
  };
}

async function setStatus(client: RestClient, name: string, ip: string, ready: boolean): Promise<void> {
  await client.patch(PODS, name, 'merge', {
    status: { phase: 'Running', podIP: ip, podIPs: [{ ip }], conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] },
  }, { subresource: 'status' });
}

const ips = (addrs: unknown): string[] => ((addrs ?? []) as Dict[]).map((a) => String(a.ip)).sort();

t.test('computeSubsets groups pods by resolved port set', async (t) => {
  const svc: KubeObject = { metadata: { name: 's', namespace: 'n' }, spec: { selector: { app: 'a' }, ports: [{ name: 'web', port: 80, targetPort: 'http' }] } };
  const mk = (name: string, ip: string, port: number, ready: boolean): KubeObject => ({
    metadata: { name, namespace: 'n', uid: name, labels: { app: 'a' } },
    spec: { containers: [{ name: 'c', ports: [{ name: 'http', containerPort: port }] }] },
    status: { phase: 'Running', podIP: ip, conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] },
  });
  const subsets = computeSubsets(svc, [mk('a', '10.0.0.2', 8080, true), mk('b', '10.0.0.1', 8080, false), mk('c', '10.0.0.3', 9090, true)]);
  t.equal(subsets.length, 2);
  t.same(subsets.map((s) => s.ports?.[0]?.port).sort(), [8080, 9090]);
  const s8080 = subsets.find((s) => s.ports?.[0]?.port === 8080);
  t.same(ips(s8080?.addresses), ['10.0.0.2']);
  t.same(ips(s8080?.notReadyAddresses), ['10.0.0.1']);
  t.same(computeSubsets({ ...svc, spec: { ports: [{ port: 80 }] } }, [mk('a', '10.0.0.2', 8080, true)]), [], 'no selector, no subsets');
});

t.test('headless services list addresses without ports; others need ports', async (t) => {
  const p: KubeObject = { metadata: { name: 'p', namespace: 'n', uid: 'u', labels: { app: 'a' } }, spec: { containers: [] }, status: { phase: 'Running', podIPs: [{ ip: '10.0.0.7' }] } };
  const headless = computeSubsets({ metadata: { name: 's' }, spec: { clusterIP: 'None', selector: { app: 'a' } } }, [p]);
  t.same(headless.map((s) => ips(s.notReadyAddresses)), [['10.0.0.7']], 'podIPs is used when podIP is empty');
  t.same(computeSubsets({ metadata: { name: 's' }, spec: { clusterIP: '10.96.0.9', selector: { app: 'a' } } }, [p]), []);
});

t.test('truncateSubsets keeps at most the capacity, ready addresses first', async (t) => {
  const addrs = (n: number, base: string): Array<{ ip: string; targetRef: Dict }> => Array.from({ length: n }, (_, i) => ({ ip: `${base}.${i}`, targetRef: {} }));
  const subsets: EndpointSubset[] = [
    { addresses: addrs(6, '10.0.1'), notReadyAddresses: addrs(4, '10.0.2'), ports: [{ port: 1, protocol: 'TCP' }] },
    { addresses: addrs(2, '10.0.3'), ports: [{ port: 2, protocol: 'TCP' }] },
  ];
  t.ok(truncateSubsets(subsets, 10));
  t.equal(subsets.reduce((n, s) => n + (s.addresses?.length ?? 0), 0), 8, 'all ready kept');
  t.equal(subsets.reduce((n, s) => n + (s.notReadyAddresses?.length ?? 0), 0), 2, 'not-ready cut to the room left');
  t.notOk(truncateSubsets(subsets, 10), 'nothing more to cut');
  t.ok(truncateSubsets(subsets, 4));
  t.equal(subsets.reduce((n, s) => n + (s.addresses?.length ?? 0) + (s.notReadyAddresses?.length ?? 0), 0), 4);
});

t.test('endpoint controller against a real API server', async (t) => {
  const c = await startWith(newEndpointController(), ['--concurrent-endpoint-syncs=2']);
  t.teardown(() => c.stop());

  // An annotation leader lock: Endpoints without a Service that must survive the controller.
  const lockRef = { ...EP, namespace: 'kube-system' };
  await c.client.create(lockRef, { apiVersion: 'v1', kind: 'Endpoints', metadata: { name: 'lock', annotations: { 'control-plane.alpha.kubernetes.io/leader': '{}' } } });
  await c.client.create(SVC, {
    apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', labels: { tier: 'front' } },
    spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 'http' }, { name: 'metrics', port: 9000, targetPort: 9100 }] },
  });
  await c.client.create(PODS, pod('w1', { app: 'web' }, '10.1.0.1', [{ name: 'http', containerPort: 8080 }], { nodeName: 'n1', hostname: 'w1', subdomain: 'web' }));
  await c.client.create(PODS, pod('w2', { app: 'web' }, '10.1.0.2', [{ name: 'http', containerPort: 8081 }]));
  await c.client.create(PODS, pod('other', { app: 'other' }, '10.1.0.9', [{ name: 'http', containerPort: 8080 }]));

  await t.test('pods without an IP are not listed; the Endpoints exist with the service labels', async (t) => {
    const ep = await waitFor('endpoints', async () => c.client.get(EP, 'web'));
    t.same(ep.subsets ?? [], []);
    t.same(ep.metadata?.labels, { tier: 'front' });
  });

  await t.test('readiness moves pods between addresses and notReadyAddresses; named ports resolve per pod', async (t) => {
    await setStatus(c.client, 'w1', '10.1.0.1', true);
    await setStatus(c.client, 'w2', '10.1.0.2', false);
    await setStatus(c.client, 'other', '10.1.0.9', true);
    const ep = await waitFor('two subsets', async () => { const e = await c.client.get(EP, 'web'); return ((e.subsets ?? []) as Dict[]).length === 2 && e; });
    const subsets = ep.subsets as Dict[];
    const s1 = subsets.find((s) => ips(s.addresses).includes('10.1.0.1')) as Dict;
    const s2 = subsets.find((s) => ips(s.notReadyAddresses).includes('10.1.0.2')) as Dict;
    t.ok(s1 && s2, 'w1 ready, w2 not ready');
    t.same((s1.ports as Dict[]).map((p) => `${String(p.name)}:${String(p.port)}`).sort(), ['http:8080', 'metrics:9100']);
    t.same((s2.ports as Dict[]).map((p) => `${String(p.name)}:${String(p.port)}`).sort(), ['http:8081', 'metrics:9100']);
    t.match((s1.addresses as Dict[])[0], { ip: '10.1.0.1', nodeName: 'n1', hostname: 'w1', targetRef: { kind: 'Pod', name: 'w1', namespace: 'default' } });
    t.notOk(JSON.stringify(ep).includes('10.1.0.9'), 'a pod not selected is absent');

    await setStatus(c.client, 'w2', '10.1.0.2', true);
    await waitFor('w2 ready', async () => {
      const e = await c.client.get(EP, 'web');
      return ((e.subsets ?? []) as Dict[]).every((s) => !s.notReadyAddresses) && ((e.subsets ?? []) as Dict[]).some((s) => ips(s.addresses).includes('10.1.0.2'));
    });
    await setStatus(c.client, 'w1', '10.1.0.1', false);
    await waitFor('w1 not ready', async () => ((await c.client.get(EP, 'web')).subsets as Dict[] ?? []).some((s) => ips(s.notReadyAddresses).includes('10.1.0.1')));
    t.pass('readiness followed both ways');
  });

  await t.test('publishNotReadyAddresses lists every pod as an address', async (t) => {
    await c.client.patch(SVC, 'web', 'merge', { spec: { publishNotReadyAddresses: true } });
    const ep = await waitFor('all addresses', async () => {
      const e = await c.client.get(EP, 'web');
      const subs = (e.subsets ?? []) as Dict[];
      return subs.every((s) => !s.notReadyAddresses) && subs.flatMap((s) => ips(s.addresses)).length === 2 && e;
    });
    t.same(((ep.subsets ?? []) as Dict[]).flatMap((s) => ips(s.addresses)).sort(), ['10.1.0.1', '10.1.0.2']);
    await c.client.patch(SVC, 'web', 'merge', { spec: { publishNotReadyAddresses: false } });
  });

  await t.test('a terminating pod is dropped; a deleted pod is dropped', async (t) => {
    await setStatus(c.client, 'w1', '10.1.0.1', true);
    await c.client.delete(PODS, 'w1', { gracePeriodSeconds: 30 });
    await waitFor('w1 gone from endpoints', async () => !JSON.stringify((await c.client.get(EP, 'web')).subsets ?? []).includes('10.1.0.1'));
    await c.client.delete(PODS, 'w1', { gracePeriodSeconds: 0 }).catch(() => undefined);
    await c.client.delete(PODS, 'w2', { gracePeriodSeconds: 0 });
    await waitFor('no subsets', async () => ((await c.client.get(EP, 'web')).subsets as unknown[] | undefined ?? []).length === 0);
    t.pass('both dropped');
  });

  await t.test('a service without selector keeps user endpoints; a deleted service loses its endpoints', async (t) => {
    await c.client.create(SVC, { apiVersion: 'v1', kind: 'Service', metadata: { name: 'manual' }, spec: { ports: [{ port: 80 }] } });
    await c.client.create(EP, { apiVersion: 'v1', kind: 'Endpoints', metadata: { name: 'manual' }, subsets: [{ addresses: [{ ip: '192.0.2.1' }], ports: [{ port: 80 }] }] });
    await c.client.delete(SVC, 'web');
    await waitFor('web endpoints removed', async () => {
      try { await c.client.get(EP, 'web'); return false; } catch { return true; }
    });
    const manual = await c.client.get(EP, 'manual');
    t.same(ips((manual.subsets as Dict[])[0]?.addresses), ['192.0.2.1'], 'user endpoints untouched');
    t.ok(await c.client.get(lockRef, 'lock'), 'the leader lock Endpoints were left alone');
  });
});

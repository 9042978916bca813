// The server's cluster DNS: the plan (what the node agent's --cluster-dns becomes), and a real
// `corectl server` answering cluster names, publishing the kube-dns Service at 10.0.0.10 with
// an EndpointSlice at the node's address, forwarding the rest.
import t from 'tap';
import { Resolver } from 'node:dns/promises';
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseServerArgs } from '../../src/flags/server.js';
import { loadCoreconfig } from '../../src/client/coreconfig.js';
import { RestClient } from '../../src/client/rest-client.js';
import { ensureObject, kubeDnsObjects, nthServiceIp } from '../../src/daemons/server/cluster-dns-setup.js';
import { startApiserver } from '../helpers/apiserver.js';
import { planServer } from '../../src/daemons/server/plan.js';
import { kubectl as kubectlBinary } from '../helpers/kubectl.js';
import { freePort, startServer } from '../helpers/corectl-server.js';
import { waitFor } from '../helpers/wait-for.js';

const dir = await mkdtemp(join(tmpdir(), 'corectl-server-dns-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));
const kubectl = kubectlBinary(33);

t.test('the tenth service address', async (t) => {
  t.equal(nthServiceIp('10.0.0.0/24', 10), '10.0.0.10');
  t.equal(nthServiceIp('10.96.0.0/12,fd00::/108', 10), '10.96.0.10');
  t.equal(nthServiceIp('fd00::/108', 10), 'fd00::a');
  t.equal(nthServiceIp('10.0.0.0/29', 10), undefined, 'a range too small');
});

t.test('the kube-dns objects', async (t) => {
  const { service, slice } = kubeDnsObjects({ nodeIp: '192.0.2.5', port: 53, serviceIp: '10.0.0.10' }, 'n1');
  t.match(service, { metadata: { name: 'kube-dns', namespace: 'kube-system', labels: { 'k8s-app': 'kube-dns' } }, spec: { clusterIP: '10.0.0.10', ports: [{ name: 'dns', port: 53, protocol: 'UDP' }, { name: 'dns-tcp', port: 53, protocol: 'TCP' }] } });
  t.notOk((service.spec as { selector?: unknown }).selector, 'no selector: the endpointslice controller leaves its slice alone');
  t.match(slice, { metadata: { labels: { 'kubernetes.io/service-name': 'kube-dns', 'endpointslice.kubernetes.io/managed-by': 'corectl-server' } }, addressType: 'IPv4', endpoints: [{ addresses: ['192.0.2.5'], conditions: { ready: true }, nodeName: 'n1' }] });
});

t.test('the plan: the node agent names the DNS unless told otherwise', async (t) => {
  const base = [`--data-dir=${join(dir, 'plan')}`, '--bind-address=192.0.2.5', '--node-name=n'];
  const p = await planServer(parseServerArgs(base).config);
  t.match(p.clusterDns, { nodeIp: '192.0.2.5', port: 53, serviceIp: '10.0.0.10', domain: 'cluster.local', agentClusterDns: ['192.0.2.5'] });
  t.same(p.nodeagent.config.clusterDns, ['192.0.2.5'], 'no service proxy: the node\'s address, port 53');
  t.equal(p.nodeagent.config.clusterDomain, 'cluster.local');
  const own = await planServer(parseServerArgs([...base, '--nodeagent-arg=--cluster-dns=1.1.1.1', '--nodeagent-arg=--cluster-domain=corp.local']).config);
  t.same(own.nodeagent.config.clusterDns, ['1.1.1.1'], 'the user\'s --cluster-dns wins');
  t.equal(own.clusterDns?.domain, 'corp.local', 'the DNS serves the user\'s domain');
  const other = await planServer(parseServerArgs([...base, '--cluster-dns-port=5353']).config);
  t.same(other.nodeagent.config.clusterDns, [], 'another port cannot be named in resolv.conf: host DNS');
  const loop = await planServer(parseServerArgs([`--data-dir=${join(dir, 'plan')}`, '--bind-address=127.0.0.1', '--node-name=n']).config);
  t.equal(loop.clusterDns?.nodeIp, '127.0.0.1', 'on loopback the DNS serves the host');
  t.same(loop.nodeagent.config.clusterDns, [], 'but pods cannot reach the node\'s loopback: host DNS');
  const off = await planServer(parseServerArgs([...base, '--disable-cluster-dns']).config);
  t.equal(off.clusterDns, undefined);
  t.same(off.nodeagent.config.clusterDns, []);
  await t.rejects(planServer(parseServerArgs([...base, '--cluster-dns-port=70000']).config), /--cluster-dns-port/);
});

t.test('corectl server answers cluster names and publishes kube-dns', { skip: kubectl ? false : 'no kubectl' }, async (t) => {
  const dataDir = join(dir, 'data');
  const port = await freePort();
  const s = startServer([
    `--data-dir=${dataDir}`, '--bind-address=127.0.0.1', `--secure-port=${await freePort()}`, '--node-name=dns-test', '--container-runtime=fake',
    `--nodeagent-arg=--port=${await freePort()}`, '--nodeagent-arg=--healthz-port=0', `--cluster-dns-port=${port}`,
  ]);
  t.teardown(() => s.stop());
  t.match(await s.waitFor(/corectl: cluster DNS /, 60_000), new RegExp(`cluster DNS on 127\\.0\\.0\\.1:${port} for cluster\\.local \\(kube-dns Service 10\\.0\\.0\\.10\\) \\(`));
  const r = new Resolver({ timeout: 2000, tries: 1 });
  r.setServers([`127.0.0.1:${port}`]);
  t.same(await waitFor('kubernetes.default', () => r.resolve4('kubernetes.default.svc.cluster.local'), 30_000), ['10.0.0.1'], 'the API server\'s service');
  t.same(await waitFor('kube-dns', () => r.resolve4('kube-dns.kube-system.svc.cluster.local'), 30_000), ['10.0.0.10'], 'its own Service');
  const admin = join(dataDir, 'admin.coreconfig');
  const svc = spawnSync(kubectl ?? 'kubectl', ['--kubeconfig', admin, 'get', 'service', 'kube-dns', '-n', 'kube-system', '-o', 'jsonpath={.spec.clusterIP} {.spec.ports[*].name} {.spec.ports[*].targetPort}'], { encoding: 'utf8' });
  t.equal(svc.stdout, `10.0.0.10 dns dns-tcp ${port} ${port}`, `the kube-dns Service (${svc.stderr})`);
  const slices = spawnSync(kubectl ?? 'kubectl', ['--kubeconfig', admin, 'get', 'endpointslices', '-n', 'kube-system', '-l', 'kubernetes.io/service-name=kube-dns', '-o', 'name'], { encoding: 'utf8' });
  t.equal(slices.stdout, '', 'on a loopback node address no EndpointSlice (Kubernetes refuses loopback endpoints)');
  t.same(await r.reverse('10.0.0.10'), ['kube-dns.kube-system.svc.cluster.local'], 'PTR of its ClusterIP');
});

t.test('a restart keeps the user\'s kube-dns Service and moves the EndpointSlice', async (t) => {
  const api = await startApiserver();
  t.teardown(() => api.stop());
  const client = new RestClient({ connection: await loadCoreconfig({ path: api.coreconfigPath }), qps: 0, contentType: 'application/json' });
  t.teardown(() => client.close());
  const svcRef = { group: '', version: 'v1', resource: 'services', namespace: 'kube-system' };
  const sliceRef = { group: 'discovery.k8s.io', version: 'v1', resource: 'endpointslices', namespace: 'kube-system' };
  await client.create({ group: '', version: 'v1', resource: 'namespaces' }, { metadata: { name: 'kube-system' } }).catch(() => undefined);
  const first = kubeDnsObjects({ nodeIp: '192.0.2.5', port: 53, serviceIp: '10.0.0.10' }, 'n1');
  await ensureObject(client, svcRef, first.service, false);
  await ensureObject(client, sliceRef, first.slice, true);
  await client.patch(svcRef, 'kube-dns', 'merge', { metadata: { labels: { mine: 'yes' } } });
  const second = kubeDnsObjects({ nodeIp: '192.0.2.6', port: 5353, serviceIp: '10.0.0.10' }, 'n1');
  await ensureObject(client, svcRef, second.service, false);
  await ensureObject(client, sliceRef, second.slice, true);
  const svc = await client.get(svcRef, 'kube-dns');
  t.equal(svc.metadata?.labels?.['mine'], 'yes', 'an existing Service is left alone');
  const slice = await client.get(sliceRef, 'kube-dns-corectl') as { endpoints?: Array<{ addresses: string[] }>; ports?: Array<{ port: number }> };
  t.same(slice.endpoints?.[0]?.addresses, ['192.0.2.6'], 'the slice follows the node\'s address');
  t.equal(slice.ports?.[0]?.port, 5353, 'and the port');
});

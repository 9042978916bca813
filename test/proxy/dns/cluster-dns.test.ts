/**
 * The cluster DNS against a real API server: every record kind read back with node's resolver
 * (c-ares, as a pod's stub resolver would ask), the rcodes and authority sections with raw
 * queries, forwarding to a fixture upstream, and UDP truncation followed by the TCP retry.
 */
import t from 'tap';
import { Resolver } from 'node:dns/promises';
import type { KubeObject } from '../../../src/api/resources/types.js';
import { loadCoreconfig } from '../../../src/client/coreconfig.js';
import { RestClient, type ResourceRef } from '../../../src/client/rest-client.js';
import { startClusterDns } from '../../../src/daemons/proxy/dns/cluster-dns.js';
import { startApiserver } from '../../helpers/apiserver.js';
import { waitFor } from '../../helpers/wait-for.js';
import { RCODE_NXDOMAIN, fixtureUpstream, rcode, tcpQuery, udpQuery } from './dns-fixtures.js';

const NS = 'dnstest';
const ref = (resource: string, namespace?: string, group = ''): ResourceRef => ({ group, version: group ? 'v1' : 'v1', resource, ...(namespace ? { namespace } : {}) });

function slice(name: string, service: string, endpoints: Array<{ ip: string; hostname?: string; ready?: boolean }>, ports: Array<{ name: string; port: number; protocol?: string }>): KubeObject {
  return {
    apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice',
    metadata: { name, namespace: NS, labels: { 'kubernetes.io/service-name': service } },
    addressType: 'IPv4',
    endpoints: endpoints.map((e) => ({ addresses: [e.ip], conditions: { ready: e.ready ?? true }, ...(e.hostname ? { hostname: e.hostname } : {}) })),
    ports,
  };
}

t.test('cluster DNS answers from the API and forwards the rest', async (t) => {
  const api = await startApiserver();
  t.teardown(() => api.stop());
  const client = new RestClient({ connection: await loadCoreconfig({ path: api.coreconfigPath }), qps: 0, contentType: 'application/json' });
  t.teardown(() => client.close());
  const upstream = await fixtureUpstream({ 'example.test': '192.0.2.7', 'target.example.test': '192.0.2.8' });
  t.teardown(() => upstream.close());

  await client.create(ref('namespaces'), { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
  const svc = (name: string, spec: Record<string, unknown>): Promise<KubeObject> => client.create(ref('services', NS), { apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: NS }, spec });
  await svc('web', { clusterIP: '10.0.0.50', ports: [{ name: 'http', port: 80, protocol: 'TCP' }, { name: 'metrics', port: 9090, protocol: 'TCP' }] });
  await svc('db', { clusterIP: 'None', ports: [{ name: 'pg', port: 5432 }] });
  await svc('ext', { type: 'ExternalName', externalName: 'target.example.test' });
  await svc('many', { clusterIP: 'None', ports: [{ name: 'x', port: 1 }] });
  const slices = ref('endpointslices', NS, 'discovery.k8s.io');
  await client.create(slices, slice('db-a', 'db', [{ ip: '10.1.0.10', hostname: 'db-0' }, { ip: '10.1.0.11', hostname: 'db-1' }, { ip: '10.1.0.12', hostname: 'db-2', ready: false }], [{ name: 'pg', port: 5432, protocol: 'TCP' }]));
  const many = Array.from({ length: 100 }, (_, i) => ({ ip: `10.2.${Math.floor(i / 200)}.${(i % 200) + 1}` }));
  await client.create(slices, slice('many-a', 'many', many, [{ name: 'x', port: 1, protocol: 'TCP' }]));

  const dns = await startClusterDns({ client, listen: [{ host: '127.0.0.1', port: 0 }], clusterDomain: 'cluster.local', upstreams: [{ host: '127.0.0.1', port: upstream.port }] });
  t.teardown(() => dns.stop());
  t.ok(await dns.synced(), 'caches synced');
  const port = dns.addresses[0]?.port ?? 0;
  const r = new Resolver({ timeout: 3000, tries: 1 });
  r.setServers([`127.0.0.1:${port}`]);
  const z = `${NS}.svc.cluster.local`;

  t.same(await waitFor('web A', () => r.resolve4(`web.${z}`)), ['10.0.0.50'], 'a ClusterIP service: its ClusterIP');
  t.same((await r.resolve4(`db.${z}`)).sort(), ['10.1.0.10', '10.1.0.11'], 'a headless service: its ready endpoints only');
  t.same(await r.resolve4(`db-1.db.${z}`), ['10.1.0.11'], 'a StatefulSet pod by hostname.subdomain');
  t.same(await r.resolve4(`10-2-0-7.many.${z}`), ['10.2.0.7'], 'an endpoint without a hostname: by its dashed address');
  await t.rejects(r.resolve4(`10-1-0-10.db.${z}`), { code: 'ENOTFOUND' }, 'an endpoint with a hostname goes by that name only (CoreDNS)');
  t.same(await r.resolve4(`10-244-1-5.${NS}.pod.cluster.local`), ['10.244.1.5'], 'a pod name by its dashed address');
  t.same(await r.resolveSrv(`_http._tcp.web.${z}`), [{ name: `web.${z}`, port: 80, priority: 0, weight: 100 }], 'SRV of a named port');
  t.same((await r.resolveSrv(`_pg._tcp.db.${z}`)).sort((a, b) => a.name.localeCompare(b.name)), [
    { name: `db-0.db.${z}`, port: 5432, priority: 0, weight: 50 }, { name: `db-1.db.${z}`, port: 5432, priority: 0, weight: 50 },
  ], 'SRV of a headless service names each endpoint');
  t.same(await r.reverse('10.0.0.50'), [`web.${z}`], 'PTR of a ClusterIP');
  t.same(await r.reverse('10.1.0.11'), [`db-1.db.${z}`], 'PTR of a headless endpoint');
  t.same(await r.resolveTxt('dns-version.cluster.local'), [['1.1.0']], 'the schema version');
  t.same(await r.resolve4('example.test'), ['192.0.2.7'], 'other names go to the upstream');
  t.same(await r.resolveCname(`ext.${z}`), ['target.example.test'], 'ExternalName: a CNAME');
  t.same(await r.resolve4(`ext.${z}`), ['192.0.2.8'], 'ExternalName: the target resolved upstream');

  await t.rejects(r.resolve4(`nope.${z}`), { code: 'ENOTFOUND' }, 'an unknown service: NXDOMAIN');
  await t.rejects(r.resolve6(`web.${z}`), { code: 'ENODATA' }, 'AAAA of an IPv4 service: NODATA');
  await t.rejects(r.resolve4(`web.nosuchns.svc.cluster.local`), { code: 'ENOTFOUND' }, 'a namespace that does not exist: NXDOMAIN');
  await t.rejects(r.resolve4(`web.${NS}.default.svc.cluster.local`), { code: 'ENOTFOUND' }, 'a search-path miss: NXDOMAIN');
  await t.rejects(r.resolve4('nothing.example.test'), { code: 'ENOTFOUND' }, 'the upstream\'s NXDOMAIN passes through');

  const nx = (await udpQuery(port, `nope.${z}`, 'A')).packet;
  t.equal(rcode(nx), RCODE_NXDOMAIN, 'raw: NXDOMAIN');
  t.match(nx.authorities, [{ type: 'SOA', name: 'cluster.local', data: { mname: 'ns.dns.cluster.local', rname: 'hostmaster.cluster.local' } }], 'NXDOMAIN carries the zone SOA');
  t.ok(nx.flag_aa, 'authoritative');
  const nodata = (await udpQuery(port, `web.${z}`, 'AAAA')).packet;
  t.equal(rcode(nodata), 0, 'NODATA is NOERROR');
  t.same(nodata.answers, [], 'with no answers');
  t.match(nodata.authorities, [{ type: 'SOA' }], 'and the SOA');
  t.equal(rcode((await udpQuery(port, `${NS}.svc.cluster.local`, 'A')).packet), 0, 'an existing namespace\'s name: NODATA');

  // 100 A records do not fit 512 bytes: TC over UDP, everything over TCP.
  const cut = await udpQuery(port, `many.${z}`, 'A');
  t.ok(cut.packet.flag_tc, 'UDP without EDNS: truncated');
  t.ok(cut.size <= 512, `fits 512 bytes (${cut.size})`);
  t.equal((await tcpQuery(port, `many.${z}`, 'A')).answers?.length, 100, 'TCP: all 100 records');
  // 100 records take about 1.7 kB (names compressed).
  const big = await udpQuery(port, `many.${z}`, 'A', { edns: 8192 });
  t.notOk(big.packet.flag_tc, 'UDP with EDNS 8192: whole');
  t.equal(big.packet.answers?.length, 100);
  t.match(big.packet.additionals, [{ type: 'OPT' }], 'EDNS answered with EDNS');
  const small = await udpQuery(port, `many.${z}`, 'A', { edns: 1024 });
  t.ok(small.packet.flag_tc && small.size <= 1024, `EDNS 1024: cut to fit (${small.size})`);
  t.equal((await r.resolve4(`many.${z}`)).length, 100, 'the resolver retries over TCP and gets all 100');

  // Answers follow the watch.
  await client.delete(ref('services', NS), 'web');
  await waitFor('web gone', async () => (await r.resolve4(`web.${z}`).then(() => false, (e: NodeJS.ErrnoException) => e.code === 'ENOTFOUND')));
  t.pass('a deleted service is NXDOMAIN');
});

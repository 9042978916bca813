/**
 * A pod's resolv.conf (the CRI DNSConfig) per dnsPolicy, as Kubernetes' node agent makes it:
 * ClusterFirst (cluster DNS, the three cluster search domains then the host's, ndots:5),
 * ClusterFirstWithHostNet, Default (the host's), None (dnsConfig only), dnsConfig merged.
 */
import t from 'tap';
import type { Pod } from '../../src/daemons/nodeagent/pod-types.js';
import { parseResolvConf, podDns, type DnsSettings } from '../../src/daemons/nodeagent/runtime-config.js';

const host = parseResolvConf('nameserver 192.168.1.1\nnameserver 192.168.1.2\ndomain ignored.example\nsearch lan. .\noptions edns0 timeout:2\n');
const s: DnsSettings = { host, clusterDns: ['10.0.0.10'], clusterDomain: 'cluster.local' };
const pod = (spec: Record<string, unknown>, namespace = 'shop'): Pod => ({ metadata: { name: 'p', namespace }, spec: { containers: [], ...spec } } as Pod);

t.test('the host file as the node agent reads it', async (t) => {
  t.same(host, { servers: ['192.168.1.1', '192.168.1.2'], searches: ['lan'], options: ['edns0', 'timeout:2'] });
});

t.test('ClusterFirst (the default)', async (t) => {
  const want = { servers: ['10.0.0.10'], searches: ['shop.svc.cluster.local', 'svc.cluster.local', 'cluster.local', 'lan'], options: ['ndots:5'] };
  t.same(podDns(pod({}), s), want, 'no dnsPolicy means ClusterFirst');
  t.same(podDns(pod({ dnsPolicy: 'ClusterFirst' }), s), want);
  t.same(podDns(pod({ dnsPolicy: 'ClusterFirst', hostNetwork: true }), s), { servers: host.servers, searches: host.searches, options: host.options }, 'on the host network: the host\'s');
  t.same(podDns(pod({ dnsPolicy: 'ClusterFirstWithHostNet', hostNetwork: true }), s), want, 'ClusterFirstWithHostNet: the cluster\'s');
  t.same(podDns(pod({}), { ...s, clusterDns: [] }), { servers: host.servers, searches: host.searches, options: host.options }, 'no --cluster-dns: falls back to the host\'s');
});

t.test('Default and None', async (t) => {
  t.same(podDns(pod({ dnsPolicy: 'Default' }), s), { servers: host.servers, searches: host.searches, options: host.options });
  t.same(podDns(pod({ dnsPolicy: 'None', dnsConfig: { nameservers: ['1.1.1.1'], searches: ['a.example'], options: [{ name: 'ndots', value: '2' }, { name: 'rotate' }] } }), s),
    { servers: ['1.1.1.1'], searches: ['a.example'], options: ['ndots:2', 'rotate'] });
});

t.test('dnsConfig is merged into the policy\'s', async (t) => {
  const got = podDns(pod({ dnsConfig: { nameservers: ['10.0.0.10', '9.9.9.9'], searches: ['extra.example'], options: [{ name: 'ndots', value: '1' }, { name: 'edns0' }] } }), s);
  t.same(got.servers, ['10.0.0.10', '9.9.9.9'], 'duplicates dropped');
  t.same(got.searches, ['shop.svc.cluster.local', 'svc.cluster.local', 'cluster.local', 'lan', 'extra.example']);
  t.same(got.options, ['ndots:1', 'edns0'], 'a dnsConfig option replaces the same-named one');
  t.equal(podDns(pod({ dnsPolicy: 'None', dnsConfig: { nameservers: ['1.1.1.1', '1.1.1.2', '1.1.1.3', '1.1.1.4'] } }), s).servers?.length, 3, 'at most three nameservers');
});

/**
 * IPv6 Services: a dual-stack Service gives one ServicePort per family from the EndpointSlices
 * of that address type; the nftables `ip6` table has the `ip` table's layout with IPv6 matches,
 * and is only created once there is a Service with an IPv6 ClusterIP; the iptables mode does the
 * same through ip6tables. In network namespaces of the test's, for both modes, curl from the
 * node reaches an IPv6 ClusterIP and NodePort, a pod reaches itself through its Service, and a
 * Service without endpoints is refused; the rules are read back (`nft list table ip6`,
 * ip6tables-save) and removed.
 */
import t from 'tap';
import { spawn, spawnSync } from 'node:child_process';
import { pino } from 'pino';
import { DualStackWriter, dualStackNft } from '../../src/daemons/proxy/dual-stack-writer.js';
import { IptablesWriter } from '../../src/daemons/proxy/iptables-writer.js';
import { NftCommand } from '../../src/daemons/proxy/nft-command.js';
import { desiredState } from '../../src/daemons/proxy/nft-rules.js';
import { Proxier } from '../../src/daemons/proxy/proxier.js';
import { buildServicePorts, type EndpointSliceObject, type ServiceObject } from '../../src/daemons/proxy/service-model.js';
import { createNetns, netnsSkipReason } from '../helpers/netns.js';
import { waitFor } from '../helpers/wait-for.js';
import { readTable } from './nft-readback.js';
import { service, slice, type Ep } from './fixtures.js';

const slice6 = (svc: string, eps: Ep[], port = 8080): EndpointSliceObject => ({ ...slice(svc, eps, port), addressType: 'IPv6', metadata: { name: `${svc}-v6`, namespace: 'default', labels: { 'kubernetes.io/service-name': svc } } });
const dual = (name: string, v4: string, v6: string, spec: Partial<NonNullable<ServiceObject['spec']>> = {}): ServiceObject =>
  service(name, v4, { clusterIPs: [v4, v6], ipFamilies: ['IPv4', 'IPv6'], ...spec });
const only6 = (name: string, v6: string, spec: Partial<NonNullable<ServiceObject['spec']>> = {}): ServiceObject =>
  service(name, v6, { ipFamilies: ['IPv6'], ...spec });

t.test('a dual-stack Service: one ServicePort per family, each from its own slices', async (t) => {
  const svc = dual('web', '10.0.0.50', 'fd00:96::50', { externalIPs: ['192.0.2.9', '2001:db8::9'] });
  const slices = [slice('web', [{ ip: '10.88.0.2' }]), slice6('web', [{ ip: 'fd00:88::2' }, { ip: 'fd00:88::3' }])];
  const [v4] = buildServicePorts([svc], slices, 'node-a', 4);
  const [v6] = buildServicePorts([svc], slices, 'node-a', 6);
  t.equal(v4?.clusterIp, '10.0.0.50');
  t.same(v4?.clusterEndpoints.map((e) => e.ip), ['10.88.0.2']);
  t.same(v4?.externalIps, ['192.0.2.9']);
  t.equal(v6?.clusterIp, 'fd00:96::50');
  t.same(v6?.clusterEndpoints.map((e) => e.ip), ['fd00:88::2', 'fd00:88::3']);
  t.same(v6?.externalIps, ['2001:db8::9']);
  t.same(buildServicePorts([service('v4only', '10.0.0.51')], [], 'node-a', 6), [], 'an IPv4-only Service has nothing for IPv6');
  t.same(buildServicePorts([only6('v6only', 'fd00:96::51')], [], 'node-a', 4), [], 'an IPv6-only Service has nothing for IPv4');

  const state = desiredState([v6!], { table: 't', family: 'ip6', masqueradeBit: 14, masqueradeAll: false, clusterCidrs: ['fd00:88::/64'], nodePortCidrs: [] });
  const sep = [...state.chains.keys()].find((c) => c.startsWith('sep_') && c.endsWith('__fd00-88--2_8080'));
  t.ok(sep, 'an endpoint chain named without colons');
  t.same(state.chains.get(sep!)?.rules, ['ip6 saddr fd00:88::2 jump mark-for-masquerade', 'meta l4proto tcp dnat to [fd00:88::2]:8080']);
  t.match(state.chains.get('services')?.rules.join('\n'), /^ip6 daddr \. meta l4proto \. th dport vmap @service-ips\nfib daddr type local ip6 daddr != ::1 /);
  t.same([...(state.maps.get('service-ips')?.keys() ?? [])].sort(), ['2001:db8::9 . tcp . 80', 'fd00:96::50 . tcp . 80']);
});

const skip = netnsSkipReason() ?? (spawnSync('curl', ['--version'], { stdio: 'ignore' }).status === 0 ? undefined : 'needs curl');
const noIp6tables = spawnSync('ip6tables-restore', ['--version'], { stdio: 'ignore' }).status === 0 ? false : 'needs ip6tables-restore';
for (const mode of ['nftables', 'iptables'] as const) t.test(`IPv6 ClusterIP and NodePort route (${mode}, network namespaces)`, { skip: skip ?? (mode === 'iptables' && noIp6tables) }, async (t) => {
  const node = createNetns('cpx6node');
  const pod = createNetns('cpx6pod');
  t.teardown(() => { pod.remove(); node.remove(); });
  const veth = `c6${node.name.slice(-6)}`;
  const sh = (...argv: string[]): void => {
    const r = spawnSync(argv[0] as string, argv.slice(1), { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`${argv.join(' ')}: ${r.stderr}`);
  };
  sh('ip', 'link', 'add', `${veth}n`, 'netns', node.name, 'type', 'veth', 'peer', 'name', `${veth}p`, 'netns', pod.name);
  node.run('sysctl', '-qw', 'net.ipv6.conf.all.forwarding=1');
  node.run('ip', '-6', 'addr', 'add', 'fd00:88::1/64', 'dev', `${veth}n`, 'nodad');
  node.run('ip', 'link', 'set', `${veth}n`, 'up');
  node.run('ip', 'link', 'add', 'uplink', 'type', 'veth', 'peer', 'name', 'uplink-peer');
  node.run('ip', '-6', 'addr', 'add', '2001:db8::100/64', 'dev', 'uplink', 'nodad');
  node.run('ip', 'link', 'set', 'uplink-peer', 'up');
  node.run('ip', 'link', 'set', 'uplink', 'up');
  node.run('ip', '-6', 'route', 'add', 'default', 'via', '2001:db8::1');
  pod.run('ip', '-6', 'addr', 'add', 'fd00:88::2/64', 'dev', `${veth}p`, 'nodad');
  pod.run('ip', 'link', 'set', `${veth}p`, 'up');
  pod.run('ip', '-6', 'route', 'add', 'default', 'via', 'fd00:88::1');
  const server = spawn('ip', ['netns', 'exec', pod.name, process.execPath, '-e',
    "require('http').createServer((q, s) => s.end('pod says hi to ' + q.socket.remoteAddress)).listen(8080, '::')"], { stdio: 'ignore' });
  t.teardown(() => { server.kill('SIGKILL'); });

  let services: ServiceObject[] = [service('v4', '10.0.0.50')];
  let slices: EndpointSliceObject[] = [slice('v4', [{ ip: '10.88.0.2' }])];
  const nft = new NftCommand([...node.exec, 'nft']);
  const rules = { table: 'corectl-proxy', masqueradeBit: 14, masqueradeAll: false, clusterCidrs: ['10.88.0.0/24'], nodePortCidrs: [] };
  const rules6 = { ...rules, family: 'ip6' as const, clusterCidrs: ['fd00:88::/64'] };
  const ipt6 = new IptablesWriter(rules6, 'node-a', node.exec);
  const writer = mode === 'nftables' ? dualStackNft(nft, rules, rules6, 'node-a')
    : new DualStackWriter(new IptablesWriter(rules, 'node-a', node.exec), ipt6, async () => (await ipt6.ourChains()).nat.length > 0);
  const save6 = (): string => node.run('ip6tables-save');
  const proxier = new Proxier({
    writer, nodeName: 'node-a', log: pino({ level: 'silent' }),
    services: () => services, slices: () => slices, minSyncPeriodMs: 0, syncPeriodMs: 3600_000,
  });
  await proxier.syncOnce(true);
  if (mode === 'nftables') {
    t.ok(readTable(node.exec).exists, 'the ip table');
    t.notOk(readTable(node.exec, 'corectl-proxy', 'ip6').exists, 'no IPv6 Service: no ip6 table');
  } else {
    t.match(node.run('iptables-save'), /CPX-SERVICES/, 'the iptables chains');
    t.notMatch(save6(), /CPX-/, 'no IPv6 Service: nothing in ip6tables');
  }

  services = [...services, dual('web', '10.0.0.60', 'fd00:96::50', { type: 'NodePort', sessionAffinity: 'ClientIP', ports: [{ name: 'http', port: 80, protocol: 'TCP', nodePort: 30080 }] }), only6('empty', 'fd00:96::51')];
  slices = [...slices, slice6('web', [{ ip: 'fd00:88::2' }])];
  await proxier.syncOnce(false);
  if (mode === 'nftables') {
    const view = readTable(node.exec, 'corectl-proxy', 'ip6');
    t.ok(view.exists, 'an IPv6 Service: the ip6 table');
    t.equal(view.maps.get('service-ips')?.get('fd00:96::50 . tcp . 80'), 'goto svc_default_web_tcp_http', 'the ClusterIP in the ip6 table');
    t.equal(view.maps.get('service-nodeports')?.get('tcp . 30080'), 'goto ext_default_web_tcp_http', 'the NodePort in the ip6 table');
    t.equal(view.maps.get('no-endpoint-services')?.get('fd00:96::51 . tcp . 80'), 'goto reject-chain', 'no endpoints: reject');
    t.ok(view.sets.has('aff_default_web_tcp_http__fd00-88--2_8080'), 'an IPv6 affinity set');
    t.equal(readTable(node.exec).maps.get('no-endpoint-services')?.get('10.0.0.60 . tcp . 80'), 'goto reject-chain', 'its IPv4 ClusterIP, without IPv4 endpoints, rejects in the ip table');
  } else {
    const saved = save6();
    t.match(saved, /-A CPX-SERVICES -d fd00:96::50\/128 -p tcp -m tcp --dport 80 .*-j CPX-SVC-/, 'the ClusterIP in ip6tables');
    t.match(saved, /-m recent --set --name CPX-SEP-\S+ --mask ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff --rsource -j DNAT --to-destination \[fd00:88::2\]:8080/, 'DNAT to the IPv6 endpoint, remembering the client (affinity)');
    t.match(saved, /-A CPX-SERVICES -d fd00:96::51\/128 .*-j REJECT --reject-with icmp6-port-unreachable/, 'no endpoints: ICMPv6 reject');
    t.match(saved, /-A PREROUTING .*-j CPX-SERVICES/, 'the jump from the built-in chain');
  }

  const curl = (ns: typeof node, url: string): { code: number | null; out: string } => {
    const r = spawnSync('ip', ['netns', 'exec', ns.name, 'curl', '-gsS', '--max-time', '10', url], { encoding: 'utf8' });
    return { code: r.status, out: r.stdout + r.stderr };
  };
  await waitFor('the pod\'s server', () => curl(node, 'http://[fd00:88::2]:8080/').code === 0, 10_000);
  t.match(curl(node, 'http://[fd00:96::50]/').out, /^pod says hi to (fd00:88::1|2001:db8::100)$/, 'the node reaches the IPv6 ClusterIP');
  t.match(curl(node, 'http://[2001:db8::100]:30080/').out, /^pod says hi to fd00:88::1$/, 'the node reaches the NodePort on its IPv6 address, masqueraded');
  t.match(curl(pod, 'http://[fd00:96::50]/').out, /^pod says hi to fd00:88::1$/, 'the pod reaches itself through its Service (hairpin, masqueraded)');
  const refused = curl(node, 'http://[fd00:96::51]/');
  t.equal(refused.code, 7, 'curl: failed to connect');
  t.match(refused.out, /Connection refused|Couldn't connect/, 'no endpoints: refused, not a timeout');

  // The IPv6 Services go: the ip6 table stays, emptied, as the ip one does.
  services = [services[0] as ServiceObject];
  slices = [slices[0] as EndpointSliceObject];
  await proxier.syncOnce(false);
  if (mode === 'nftables') {
    t.same([...(readTable(node.exec, 'corectl-proxy', 'ip6').maps.get('service-ips')?.keys() ?? [])], [], 'the ip6 table emptied');
    t.equal(await nft.deleteTable('corectl-proxy', 'ip6'), true, 'deleted');
    t.equal(await nft.deleteTable('corectl-proxy'), true);
  } else {
    t.notMatch(save6(), /fd00:96::/, 'the IPv6 Services\' rules gone from ip6tables');
    t.equal(await ipt6.cleanup(), true, 'cleaned up');
    t.notMatch(save6(), /CPX-/, 'nothing of ours left in ip6tables');
  }
});

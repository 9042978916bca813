/**
 * Stale UDP conntrack entries (conntrack.ts): which `conntrack -D` commands a change asks for,
 * and, in network namespaces of the test's with the real conntrack tool, that a UDP client
 * keeping its source port follows the Service to its new endpoint and reaches a Service that
 * got endpoints after its first packets. A control proxier without the cleaner shows the flow
 * staying on the old endpoint, so the test fails if the clearing stops working.
 */
import t from 'tap';
import { spawn, spawnSync } from 'node:child_process';
import { pino } from 'pino';
import { ConntrackCleaner, staleFlowDeletions } from '../../src/daemons/proxy/conntrack.js';
import { NftCommand } from '../../src/daemons/proxy/nft-command.js';
import { Proxier } from '../../src/daemons/proxy/proxier.js';
import { buildServicePorts, type EndpointSliceObject, type ServiceObject, type ServicePort } from '../../src/daemons/proxy/service-model.js';
import { createNetns, netnsSkipReason } from '../helpers/netns.js';
import { waitFor } from '../helpers/wait-for.js';
import { service, slice, type Ep } from './fixtures.js';

const udpService = (name: string, ip: string, spec: Partial<NonNullable<ServiceObject['spec']>> = {}): ServiceObject =>
  service(name, ip, { ports: [{ name: 'dns', port: 53, protocol: 'UDP', ...(spec.type === 'NodePort' ? { nodePort: 30053 } : {}) }], ...spec });
const udpSlice = (svc: string, eps: Ep[]): EndpointSliceObject => ({ ...slice(svc, eps, 5353, 'dns'), ports: [{ name: 'dns', port: 5353, protocol: 'UDP' }] });
const byId = (ports: ServicePort[]): Map<string, ServicePort> => new Map(ports.map((p) => [p.id, p]));
const deletions = (before: ServicePort[], after: ServicePort[]): string[] => staleFlowDeletions(byId(before), byId(after)).map((a) => a.join(' '));

t.test('the conntrack deletions a change asks for', async (t) => {
  const svc = udpService('dns', '10.0.0.10', { type: 'NodePort', externalIPs: ['192.0.2.50'] });
  const a = buildServicePorts([svc], [udpSlice('dns', [{ ip: '10.88.0.2' }, { ip: '10.88.0.3' }])], 'node-a');
  const b = buildServicePorts([svc], [udpSlice('dns', [{ ip: '10.88.0.3' }])], 'node-a');
  const none = buildServicePorts([svc], [], 'node-a');
  t.same(deletions(a, a), [], 'nothing changed: nothing to clear');
  t.same(deletions(a, b), [
    '-D -p udp --orig-dst 10.0.0.10 --orig-port-dst 53 --dst-nat 10.88.0.2:5353',
    '-D -p udp --orig-dst 192.0.2.50 --orig-port-dst 53 --dst-nat 10.88.0.2:5353',
    '-D -p udp --orig-port-dst 30053 --dst-nat 10.88.0.2:5353',
  ], 'an endpoint gone: the flows DNATed to it from each of the service\'s addresses');
  t.same(deletions(none, b), [
    '-D -p udp --orig-dst 10.0.0.10 --orig-port-dst 53',
    '-D -p udp --orig-dst 192.0.2.50 --orig-port-dst 53',
    '-D -p udp --orig-port-dst 30053',
  ], 'endpoints after none: the flows to the service\'s addresses that went nowhere');
  t.same(deletions([], b), deletions(none, b), 'a new Service with endpoints (or the first sync) as well');
  t.same(deletions(b, []), [
    '-D -p udp --orig-dst 10.0.0.10 --orig-port-dst 53 --dst-nat 10.88.0.3:5353',
    '-D -p udp --orig-dst 192.0.2.50 --orig-port-dst 53 --dst-nat 10.88.0.3:5353',
    '-D -p udp --orig-port-dst 30053 --dst-nat 10.88.0.3:5353',
  ], 'a Service deleted: the flows to its endpoints');
  const v6 = (ips: string[]): ServicePort[] => buildServicePorts([service('dns6', 'fd00:96::10', { ports: [{ name: 'dns', port: 53, protocol: 'UDP' }] })],
    [{ ...udpSlice('dns6', ips.map((ip) => ({ ip }))), addressType: 'IPv6' }], 'node-a', 6);
  t.same(deletions(v6(['fd00:88::2', 'fd00:88::3']), v6(['fd00:88::3'])), ['-D -f ipv6 -p udp --orig-dst fd00:96::10 --orig-port-dst 53 --dst-nat [fd00:88::2]:5353'], 'IPv6: the family and the bracketed endpoint');
  t.same(deletions(v6([]), v6(['fd00:88::3'])), ['-D -f ipv6 -p udp --orig-dst fd00:96::10 --orig-port-dst 53']);
  const tcp = buildServicePorts([service('web', '10.0.0.11')], [slice('web', [{ ip: '10.88.0.2' }])], 'node-a');
  t.same(deletions(tcp, []), [], 'TCP needs no clearing');
  t.same(deletions([], tcp), []);
});

const skip = netnsSkipReason() ?? (spawnSync('conntrack', ['--version'], { stdio: 'ignore' }).status === 0 ? undefined : 'needs the conntrack command (Debian package conntrack)');
t.test('a UDP client keeping its source port follows the Service (network namespaces)', { skip: skip ?? false }, async (t) => {
  const node = createNetns('cpxctn');
  const pod = createNetns('cpxctp');
  t.teardown(() => { pod.remove(); node.remove(); });
  const veth = `ct${node.name.slice(-6)}`;
  const sh = (...argv: string[]): void => {
    const r = spawnSync(argv[0] as string, argv.slice(1), { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`${argv.join(' ')}: ${r.stderr}`);
  };
  sh('ip', 'link', 'add', `${veth}n`, 'netns', node.name, 'type', 'veth', 'peer', 'name', `${veth}p`, 'netns', pod.name);
  node.run('ip', 'addr', 'add', '10.88.0.1/24', 'dev', `${veth}n`);
  node.run('ip', 'link', 'set', `${veth}n`, 'up');
  node.run('ip', 'link', 'add', 'uplink', 'type', 'veth', 'peer', 'name', 'uplink-peer');
  node.run('ip', 'addr', 'add', '192.0.2.100/24', 'dev', 'uplink');
  node.run('ip', 'link', 'set', 'uplink-peer', 'up');
  node.run('ip', 'link', 'set', 'uplink', 'up');
  node.run('ip', 'route', 'add', 'default', 'via', '192.0.2.1');
  node.run('sysctl', '-qw', 'net.ipv4.ip_forward=1');
  // Two endpoints in one pod namespace: each address answers with itself.
  pod.run('ip', 'addr', 'add', '10.88.0.2/24', 'dev', `${veth}p`);
  pod.run('ip', 'addr', 'add', '10.88.0.3/24', 'dev', `${veth}p`);
  pod.run('ip', 'link', 'set', `${veth}p`, 'up');
  pod.run('ip', 'route', 'add', 'default', 'via', '10.88.0.1');
  const server = spawn('ip', ['netns', 'exec', pod.name, process.execPath, '-e', `
    const dgram = require('dgram');
    for (const ip of ['10.88.0.2', '10.88.0.3']) {
      const s = dgram.createSocket('udp4');
      s.on('message', (m, r) => s.send(ip, r.port, r.address));
      s.bind(5353, ip);
    }`], { stdio: 'ignore' });
  t.teardown(() => { server.kill('SIGKILL'); });
  // One query from source port 40053 each time, so that every query is the same flow.
  const ask = (ip: string): string => {
    const r = spawnSync('ip', ['netns', 'exec', node.name, process.execPath, '-e', `
      const s = require('dgram').createSocket('udp4');
      const done = (out) => { process.stdout.write(out); process.exit(0); };
      s.on('message', (m) => done(m.toString()));
      s.bind(40053, () => s.send('q', 53, ${JSON.stringify(ip)}));
      setTimeout(() => done('timeout'), 1500);`], { encoding: 'utf8', timeout: 10_000 });
    return r.stdout.trim();
  };

  let services: ServiceObject[] = [udpService('dns', '10.0.0.60')];
  let slices: EndpointSliceObject[] = [udpSlice('dns', [{ ip: '10.88.0.2' }])];
  const rules = { table: 'corectl-proxy', masqueradeBit: 14, masqueradeAll: false, clusterCidrs: ['10.88.0.0/24'], nodePortCidrs: [] };
  const cleaner = new ConntrackCleaner([...node.exec, 'conntrack'], pino({ level: 'silent' }));
  const proxier = (withCleaner: boolean): Proxier => new Proxier({
    nft: new NftCommand([...node.exec, 'nft']), rules, nodeName: 'node-a', log: pino({ level: 'silent' }),
    services: () => services, slices: () => slices, minSyncPeriodMs: 0, syncPeriodMs: 3600_000,
    ...(withCleaner ? { conntrack: cleaner } : {}),
  });
  const withCleaner = proxier(true);
  await withCleaner.syncOnce(true);
  t.equal(await waitFor('the first endpoint to answer', () => { const r = ask('10.0.0.60'); return r !== 'timeout' && r; }, 10_000), '10.88.0.2');
  t.match(node.run('conntrack', '-L', '-p', 'udp', '--orig-port-src', '40053'), /dst=10\.0\.0\.60 .*src=10\.88\.0\.2 /, 'the flow is in the conntrack table, DNATed to the first endpoint');

  slices = [udpSlice('dns', [{ ip: '10.88.0.3' }])];
  await withCleaner.syncOnce(false);
  t.equal(ask('10.0.0.60'), '10.88.0.3', 'the endpoint changed: the same flow reaches the new one');

  // A Service asked before it existed: that flow went nowhere, and keeps going nowhere unless cleared.
  t.equal(ask('10.0.0.61'), 'timeout', 'no Service yet: no answer');
  services = [...services, udpService('late', '10.0.0.61')];
  slices = [...slices, udpSlice('late', [{ ip: '10.88.0.2' }])];
  await withCleaner.syncOnce(false);
  t.equal(ask('10.0.0.61'), '10.88.0.2', 'the Service programmed with an endpoint: the earlier flow reaches it');

  // The control: the same change without the cleaner leaves the flow on the old endpoint.
  const without = proxier(false);
  slices = [udpSlice('dns', [{ ip: '10.88.0.2' }]), udpSlice('late', [{ ip: '10.88.0.2' }])];
  await without.syncOnce(true);
  t.equal(ask('10.0.0.60'), '10.88.0.3', 'without the cleaner the flow stays on the endpoint that is gone');
  node.run('nft', 'delete', 'table', 'ip', 'corectl-proxy');
});

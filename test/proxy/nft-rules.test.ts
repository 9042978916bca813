/**
 * The proxy's nftables programming, applied for real in a private network namespace and read
 * back with `nft -j list table`: ClusterIP, NodePort, externalIPs and LoadBalancer IPs, no
 * endpoints (reject), ClientIP affinity, Local traffic policies, headless services (nothing),
 * terminating endpoints, partial updates, full resyncs that delete what is gone, cleanup.
 */
import t from 'tap';
import { pino } from 'pino';
import { NftCommand } from '../../src/daemons/proxy/nft-command.js';
import { NftProxier } from '../../src/daemons/proxy/proxier.js';
import type { EndpointSliceObject, ServiceObject } from '../../src/daemons/proxy/service-model.js';
import { createNetns, netnsSkipReason } from '../helpers/netns.js';
import { service, slice } from './fixtures.js';
import { pickedEndpoints, readTable } from './nft-readback.js';

const skip = netnsSkipReason();
if (skip) {
  t.plan(0, `nftables tests: ${skip}`);
} else {
  const ns = createNetns();
  t.teardown(() => ns.remove());
  const nft = new NftCommand([...ns.exec, 'nft']);
  let services: ServiceObject[] = [];
  let slices: EndpointSliceObject[] = [];
  const proxier = new NftProxier({
    nft, nodeName: 'node-a', log: pino({ level: 'silent' }),
    rules: { table: 'corectl-proxy', masqueradeBit: 14, masqueradeAll: false, clusterCidrs: ['10.88.0.0/16'], nodePortCidrs: [] },
    services: () => services, slices: () => slices, minSyncPeriodMs: 0, syncPeriodMs: 3600_000,
  });
  const view = () => readTable(ns.exec);

  t.test('ClusterIP: DNAT to a random ready endpoint, masquerade from off-cluster, hairpin', async (t) => {
    services = [service('web', '10.0.0.20')];
    slices = [slice('web', [{ ip: '10.88.0.2' }, { ip: '10.88.0.3' }, { ip: '10.88.0.4', ready: false }])];
    await proxier.syncOnce(true);
    const v = view();
    t.equal(v.maps.get('service-ips')?.get('10.0.0.20 . tcp . 80'), 'goto svc_default_web_tcp_http');
    t.same(pickedEndpoints(v, 'svc_default_web_tcp_http'), ['10.88.0.2:8080', '10.88.0.3:8080'], 'the not-ready endpoint is left out');
    t.match(JSON.stringify(v.rules.get('svc_default_web_tcp_http')?.[0]), /"op":"!=".*"addr":"10.88.0.0","len":16.*"jump":\{"target":"mark-for-masquerade"\}/, 'off-cluster clients masqueraded');
    const sep = v.rules.get('sep_default_web_tcp_http__10.88.0.2_8080') ?? [];
    t.match(JSON.stringify(sep[0]), /"field":"saddr"\}\},"right":"10.88.0.2"\}\},\{"jump":\{"target":"mark-for-masquerade"/, 'hairpin marked');
    t.match(JSON.stringify(sep.at(-1)), /"dnat":\{"addr":"10.88.0.2","port":8080\}/);
    t.same(JSON.stringify(v.rules.get('mark-for-masquerade')), JSON.stringify([[{ mangle: { key: { meta: { key: 'mark' } }, value: { '|': [{ meta: { key: 'mark' } }, 16384] } } }]]), 'bit 14');
    for (const c of ['nat-prerouting', 'nat-output', 'nat-postrouting', 'filter-input', 'filter-forward', 'filter-output']) t.ok(v.chains.has(c), c);
  });

  t.test('no endpoints: rejected so that clients fail fast; headless and ExternalName: nothing', async (t) => {
    services = [
      service('empty', '10.0.0.21'),
      service('headless', 'None'),
      { metadata: { name: 'ext', namespace: 'default' }, spec: { type: 'ExternalName', ports: [{ port: 80 }] } },
      service('down', '10.0.0.22'),
    ];
    slices = [slice('headless', [{ ip: '10.88.0.9' }]), slice('down', [{ ip: '10.88.0.5', ready: false, serving: false, terminating: true }])];
    await proxier.syncOnce(false);
    const v = view();
    t.equal(v.maps.get('no-endpoint-services')?.get('10.0.0.21 . tcp . 80'), 'goto reject-chain');
    t.equal(v.maps.get('no-endpoint-services')?.get('10.0.0.22 . tcp . 80'), 'goto reject-chain', 'a terminating, not serving endpoint is not used');
    t.same([...(v.maps.get('service-ips')?.keys() ?? [])], [], 'the earlier web service is gone from the map');
    t.notOk([...v.chains].some((c) => c.includes('headless') || c.includes('_ext_') || c.includes('web')), 'no chains for headless, ExternalName, or the removed service');
    t.same(v.rules.get('reject-chain'), [[{ reject: { type: 'icmp', expr: 'port-unreachable' } }]], 'ICMP port unreachable: connect() fails at once');
  });

  t.test('terminating but serving endpoints are used when none is ready', async (t) => {
    services = [service('roll', '10.0.0.23')];
    slices = [slice('roll', [{ ip: '10.88.0.6', ready: false, serving: true, terminating: true }])];
    await proxier.syncOnce(false);
    t.same(pickedEndpoints(view(), 'svc_default_roll_tcp_http'), ['10.88.0.6:8080']);
  });

  t.test('NodePort, externalIPs and LoadBalancer IPs go through the external chain, masqueraded', async (t) => {
    services = [service('np', '10.0.0.24', { type: 'LoadBalancer', ports: [{ name: 'http', port: 80, protocol: 'TCP', nodePort: 30080 }], externalIPs: ['192.0.2.10'] }, { loadBalancer: { ingress: [{ ip: '198.51.100.7' }] } })];
    slices = [slice('np', [{ ip: '10.88.0.7' }, { ip: '10.88.0.8', node: 'node-b' }])];
    await proxier.syncOnce(false);
    const v = view();
    t.equal(v.maps.get('service-nodeports')?.get('tcp . 30080'), 'goto ext_default_np_tcp_http');
    t.equal(v.maps.get('service-ips')?.get('192.0.2.10 . tcp . 80'), 'goto ext_default_np_tcp_http');
    t.equal(v.maps.get('service-ips')?.get('198.51.100.7 . tcp . 80'), 'goto ext_default_np_tcp_http');
    t.equal(v.maps.get('service-ips')?.get('10.0.0.24 . tcp . 80'), 'goto svc_default_np_tcp_http');
    t.same(v.rules.get('ext_default_np_tcp_http')?.[0], [{ jump: { target: 'mark-for-masquerade' } }]);
    t.same(pickedEndpoints(v, 'ext_default_np_tcp_http'), ['10.88.0.7:8080', '10.88.0.8:8080']);
    t.match(JSON.stringify(v.rules.get('services')?.[1]), /"fib".*"local"/, 'NodePorts only on local addresses');
  });

  t.test('externalTrafficPolicy and internalTrafficPolicy Local use this node\'s endpoints only', async (t) => {
    services = [
      service('elocal', '10.0.0.25', { type: 'NodePort', ports: [{ name: 'http', port: 80, protocol: 'TCP', nodePort: 30081 }], externalTrafficPolicy: 'Local' }),
      service('ilocal', '10.0.0.26', { internalTrafficPolicy: 'Local' }),
      service('ilocal-none', '10.0.0.27', { internalTrafficPolicy: 'Local' }),
    ];
    slices = [
      slice('elocal', [{ ip: '10.88.0.10' }, { ip: '10.88.0.11', node: 'node-b' }]),
      slice('ilocal', [{ ip: '10.88.0.12' }, { ip: '10.88.0.13', node: 'node-b' }]),
      slice('ilocal-none', [{ ip: '10.88.0.14', node: 'node-b' }]),
    ];
    await proxier.syncOnce(false);
    const v = view();
    t.same(pickedEndpoints(v, 'ext_default_elocal_tcp_http'), ['10.88.0.10:8080'], 'external: local only');
    t.notOk(JSON.stringify(v.rules.get('ext_default_elocal_tcp_http')?.at(-1)).includes('mark-for-masquerade'), 'client address kept');
    t.same(pickedEndpoints(v, 'svc_default_elocal_tcp_http'), ['10.88.0.10:8080', '10.88.0.11:8080'], 'ClusterIP traffic: every endpoint');
    t.same(pickedEndpoints(v, 'svc_default_ilocal_tcp_http'), ['10.88.0.12:8080'], 'internal Local: local only');
    t.equal(v.maps.get('no-endpoint-services')?.get('10.0.0.27 . tcp . 80'), 'drop', 'Local with none here: dropped, as kube-proxy');
  });

  t.test('ClientIP affinity: a timed set per endpoint, consulted before the random pick', async (t) => {
    services = [service('sticky', '10.0.0.28', { sessionAffinity: 'ClientIP', sessionAffinityConfig: { clientIP: { timeoutSeconds: 600 } } })];
    slices = [slice('sticky', [{ ip: '10.88.0.15' }, { ip: '10.88.0.16' }])];
    await proxier.syncOnce(false);
    const v = view();
    const set = v.sets.get('aff_default_sticky_tcp_http__10.88.0.15_8080');
    t.equal(set?.timeout, 600);
    t.ok(set?.flags?.includes('timeout'), 'entries time out');
    const rules = JSON.stringify(v.rules.get('svc_default_sticky_tcp_http'));
    t.match(rules, /"right":"@aff_default_sticky_tcp_http__10.88.0.15_8080"\}\},\{"goto":\{"target":"sep_default_sticky_tcp_http__10.88.0.15_8080"/);
    t.ok(rules.indexOf('@aff_') < rules.indexOf('numgen'), 'affinity first');
    t.match(JSON.stringify(v.rules.get('sep_default_sticky_tcp_http__10.88.0.16_8080')), /"op":"update".*"set":"@aff_default_sticky_tcp_http__10.88.0.16_8080"/);
    // An element learnt by the kernel survives a sync that changes nothing for the service.
    ns.run('nft', 'add', 'element', 'ip', 'corectl-proxy', 'aff_default_sticky_tcp_http__10.88.0.15_8080', '{ 10.88.5.5 }');
    services = [...services, service('other', '10.0.0.29')];
    await proxier.syncOnce(false);
    t.match(ns.run('nft', 'list', 'set', 'ip', 'corectl-proxy', 'aff_default_sticky_tcp_http__10.88.0.15_8080'), /10\.88\.5\.5/);
  });

  t.test('an endpoint change is a small partial transaction', async (t) => {
    services = [service('web', '10.0.0.30')];
    slices = [slice('web', [{ ip: '10.88.1.1' }, { ip: '10.88.1.2' }])];
    await proxier.syncOnce(false);
    const scripts: string[] = [];
    const apply = nft.apply.bind(nft);
    nft.apply = async (s: string) => { scripts.push(s); await apply(s); };
    try {
      slices = [slice('web', [{ ip: '10.88.1.1' }, { ip: '10.88.1.3' }])];
      await proxier.syncOnce(false);
    } finally {
      nft.apply = apply;
    }
    const v = view();
    t.same(pickedEndpoints(v, 'svc_default_web_tcp_http'), ['10.88.1.1:8080', '10.88.1.3:8080']);
    t.notOk(v.chains.has('sep_default_web_tcp_http__10.88.1.2_8080'), 'the old endpoint chain is deleted');
    const script = scripts[0] ?? '';
    t.notMatch(script, /10\.88\.1\.1_8080 /, 'the unchanged endpoint chain is not rewritten');
    t.notMatch(script, /flush map/, 'maps are not flushed');
    t.match(script, /delete chain ip corectl-proxy sep_default_web_tcp_http__10\.88\.1\.2_8080/);
  });

  t.test('a full sync deletes chains and sets of ours it no longer wants, and only ours', async (t) => {
    ns.run('nft', 'add', 'chain', 'ip', 'corectl-proxy', 'sep_stale_leftover');
    ns.run('nft', 'add', 'set', 'ip', 'corectl-proxy', 'aff_stale', '{ type ipv4_addr; }');
    ns.run('nft', 'add', 'table', 'ip', 'someone-else');
    ns.run('nft', 'add', 'chain', 'ip', 'someone-else', 'theirs');
    await proxier.syncOnce(true);
    const v = view();
    t.notOk(v.chains.has('sep_stale_leftover'));
    t.notOk(v.sets.has('aff_stale'));
    t.ok(v.chains.has('svc_default_web_tcp_http'));
    t.match(ns.run('nft', 'list', 'table', 'ip', 'someone-else'), /chain theirs/, 'another table is untouched');
  });

  t.test('--cleanup leaves nothing of ours', async (t) => {
    t.equal(await nft.deleteTable('corectl-proxy'), true);
    t.notOk(view().exists);
    t.equal(await nft.deleteTable('corectl-proxy'), false, 'a second cleanup is a no-op');
    t.match(ns.run('nft', 'list', 'tables'), /someone-else/);
  });
}

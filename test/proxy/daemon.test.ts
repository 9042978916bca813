/**
 * `corectl proxy` (run() from main.ts) against a real API server, programming nftables in a
 * private network namespace: rules follow Services and EndpointSlices (an endpoint change is
 * applied without a full rewrite), /healthz and /metrics answer, a missing nft is refused in
 * one line, and --cleanup removes the table.
 */
import t from 'tap';
import { pino } from 'pino';
import { loadCoreconfig } from '../../src/client/coreconfig.js';
import { RestClient } from '../../src/client/rest-client.js';
import { run } from '../../src/daemons/proxy/main.js';
import type { NftProxier } from '../../src/daemons/proxy/proxier.js';
import type { ProxyServers } from '../../src/daemons/proxy/servers.js';
import { parseProxyArgs } from '../../src/flags/proxy.js';
import type { KubeObject } from '../../src/api/resources/types.js';
import { startApiserver } from '../helpers/apiserver.js';
import { createNetns, netnsSkipReason } from '../helpers/netns.js';
import { waitFor } from '../helpers/wait-for.js';
import { service, slice } from './fixtures.js';
import { pickedEndpoints, readTable } from './nft-readback.js';

const SERVICES = { group: '', version: 'v1', resource: 'services', namespace: 'default' };
const SLICES = { group: 'discovery.k8s.io', version: 'v1', resource: 'endpointslices', namespace: 'default' };

t.test('a mode whose command is missing is refused in one line', async (t) => {
  const { config } = parseProxyArgs([]);
  const writes: string[] = [];
  const orig = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((s: string) => { writes.push(String(s)); return true; }) as typeof process.stderr.write;
  try {
    t.equal(await run(config, { log: pino({ level: 'silent' }), signal: new AbortController().signal, commandPrefix: ['env', 'PATH=/nonexistent'] }), 1);
  } finally {
    process.stderr.write = orig;
  }
  t.same(writes, ['proxy: --proxy-mode=nftables needs the nft command (Debian package nftables)\n']);
});

t.test('bad options are refused by the parser', async (t) => {
  t.throws(() => parseProxyArgs(['--iptables-masquerade-bit=32']), /--iptables-masquerade-bit/);
  t.throws(() => parseProxyArgs(['--min-sync-period=1m', '--sync-period=30s']), /--min-sync-period/);
  t.throws(() => parseProxyArgs(['--cluster-cidr=10.0.0.0']), /--cluster-cidr/);
  t.throws(() => parseProxyArgs(['--proxy-mode=ipvs']), /--proxy-mode/);
  t.throws(() => parseProxyArgs(['--healthz-bind-address=nope']), /--healthz-bind-address/);
});

const skip = netnsSkipReason();
if (skip) {
  t.test('nftables', async (t) => { t.plan(0, `nftables: ${skip}`); });
} else {
  t.test('programs Services and EndpointSlices from the API server', async (t) => {
    const ns = createNetns();
    t.teardown(() => ns.remove());
    const api = await startApiserver();
    t.teardown(() => api.stop());
    const client = new RestClient({ connection: await loadCoreconfig({ path: api.coreconfigPath }), qps: 0 });
    t.teardown(() => client.close());
    const { config } = parseProxyArgs([
      `--coreconfig=${api.coreconfigPath}`, '--hostname-override=node-a', '--cluster-cidr=10.88.0.0/16',
      '--healthz-bind-address=127.0.0.1:0', '--metrics-bind-address=127.0.0.1:0', '--min-sync-period=0s',
    ]);
    const stop = new AbortController();
    let servers: ProxyServers | undefined;
    let proxier: NftProxier | undefined;
    const running = run(config, {
      log: pino({ level: 'silent' }), signal: stop.signal, commandPrefix: ns.exec,
      onServing: (s) => { servers = s; }, onProxier: (p) => { proxier = p; },
    });
    t.teardown(async () => { stop.abort(); await running; });

    const svc = await client.create(SERVICES, service('web', '') as unknown as KubeObject);
    const clusterIp = (svc.spec as { clusterIP: string }).clusterIP;
    t.match(clusterIp, /^\d+\.\d+\.\d+\.\d+$/);
    await waitFor('the no-endpoints reject', () => readTable(ns.exec).maps.get('no-endpoint-services')?.get(`${clusterIp} . tcp . 80`) === 'goto reject-chain');

    await client.create(SLICES, slice('web', [{ ip: '10.88.0.2' }, { ip: '10.88.0.3' }]) as unknown as KubeObject);
    await waitFor('the ClusterIP rules', () => readTable(ns.exec).maps.get('service-ips')?.get(`${clusterIp} . tcp . 80`) === 'goto svc_default_web_tcp_http');
    t.same(pickedEndpoints(readTable(ns.exec), 'svc_default_web_tcp_http'), ['10.88.0.2:8080', '10.88.0.3:8080']);
    t.notOk(readTable(ns.exec).maps.get('no-endpoint-services')?.has(`${clusterIp} . tcp . 80`), 'no longer rejected');

    const full = (await (await fetch(`http://127.0.0.1:${servers?.metricsPort}/metrics`)).text()).match(/kubeproxy_sync_full_proxy_rules_duration_seconds_count (\d+)/)?.[1];
    const current = await client.get(SLICES, 'web-abc');
    await client.update(SLICES, { ...(slice('web', [{ ip: '10.88.0.2' }, { ip: '10.88.0.4' }]) as unknown as KubeObject), metadata: current.metadata });
    await waitFor('the endpoint change', () => pickedEndpoints(readTable(ns.exec), 'svc_default_web_tcp_http').join() === '10.88.0.2:8080,10.88.0.4:8080');
    t.notOk(readTable(ns.exec).chains.has('sep_default_web_tcp_http__10.88.0.3_8080'), 'the removed endpoint\'s chain is gone');

    const metrics = await (await fetch(`http://127.0.0.1:${servers?.metricsPort}/metrics`)).text();
    t.match(metrics, /kubeproxy_sync_proxy_rules_last_timestamp_seconds \d/);
    t.equal(metrics.match(/kubeproxy_sync_full_proxy_rules_duration_seconds_count (\d+)/)?.[1], full, 'the endpoint change was a partial sync');
    t.match(metrics, /kubeproxy_sync_partial_proxy_rules_duration_seconds_count [1-9]/);
    const health = await fetch(`http://127.0.0.1:${servers?.healthzPort}/healthz`);
    t.equal(health.status, 200);
    t.match(await health.json(), { lastUpdated: String, currentTime: String });
    t.equal(await (await fetch(`http://127.0.0.1:${servers?.metricsPort}/proxyMode`)).text(), 'nftables');
    t.ok(proxier && proxier.syncs >= 3);

    await client.delete(SERVICES, 'web');
    await waitFor('the service\'s rules to go', () => ![...readTable(ns.exec).chains].some((c) => c.includes('_web_')));

    stop.abort();
    t.equal(await running, 0);
    t.ok(readTable(ns.exec).exists, 'a normal stop leaves the rules in place');
    // --nodeport-addresses=primary: the Node's InternalIP only.
    await client.create({ group: '', version: 'v1', resource: 'nodes' }, { apiVersion: 'v1', kind: 'Node', metadata: { name: 'node-a' } } as unknown as KubeObject);
    const nodeObj = await client.get({ group: '', version: 'v1', resource: 'nodes' }, 'node-a');
    await client.update({ group: '', version: 'v1', resource: 'nodes' }, { ...nodeObj, status: { addresses: [{ type: 'InternalIP', address: '192.0.2.55' }, { type: 'Hostname', address: 'node-a' }] } } as unknown as KubeObject, { subresource: 'status' });
    const third = new AbortController();
    const primaryRun = run(parseProxyArgs([`--coreconfig=${api.coreconfigPath}`, '--hostname-override=node-a', '--nodeport-addresses=primary', '--healthz-bind-address=', '--metrics-bind-address=']).config, {
      log: pino({ level: 'silent' }), signal: third.signal, commandPrefix: ns.exec, onProxier: (p) => { void p.nextSync().then(() => third.abort()); },
    });
    t.equal(await primaryRun, 0);
    t.match(JSON.stringify(readTable(ns.exec).rules.get('services')?.[1]), /"daddr"\}\},"right":"192\.0\.2\.55"/, 'NodePorts on the node\'s InternalIP only');

    // An ip6 table left by an earlier run (IPv6 Services) is kept in step and removed with the ip one.
    ns.run('nft', 'add', 'table', 'ip6', 'corectl-proxy');
    const again = new AbortController();
    const second = run(parseProxyArgs([`--coreconfig=${api.coreconfigPath}`, '--cleanup-on-exit', '--healthz-bind-address=', '--metrics-bind-address=']).config, {
      log: pino({ level: 'silent' }), signal: again.signal, commandPrefix: ns.exec, onProxier: (p) => { void p.nextSync().then(() => again.abort()); },
    });
    t.equal(await second, 0);
    t.notOk(readTable(ns.exec).exists, '--cleanup-on-exit removed the table on stop');
    t.notOk(readTable(ns.exec, 'corectl-proxy', 'ip6').exists, '--cleanup-on-exit removed the ip6 table too');
    ns.run('nft', 'add', 'table', 'ip', 'corectl-proxy');
    ns.run('nft', 'add', 'table', 'ip6', 'corectl-proxy');
    const cleanup = parseProxyArgs(['--cleanup']).config;
    t.equal(await run(cleanup, { log: pino({ level: 'silent' }), signal: new AbortController().signal, commandPrefix: ns.exec }), 0);
    t.notOk(readTable(ns.exec).exists, '--cleanup removed the table');
    t.notOk(readTable(ns.exec, 'corectl-proxy', 'ip6').exists, '--cleanup removed the ip6 table');
  });
}

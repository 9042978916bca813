// pods/proxy and services/proxy: how a target is chosen and refused, by Kubernetes' rules. The
// proxied traffic itself (to real pod IPs) is tested with containerd in
// test/e2e/kubectl-exec.test.ts; nothing here connects anywhere.
import t from 'tap';
import { isGlobalUnicast } from '../../src/util/ip.js';
import { splitSchemeNamePort } from '../../src/daemons/apiserver/proxy/http-proxy.js';
import { isLongRunningRequest, type RequestInfo } from '../../src/daemons/apiserver/request-info.js';
import { startApiserver } from '../helpers/apiserver.js';
import { connectClient } from '../helpers/rest-client.js';

t.test('names and addresses', async (t) => {
  t.same(splitSchemeNamePort('web'), { scheme: '', name: 'web', port: '' });
  t.same(splitSchemeNamePort('web:8080'), { scheme: '', name: 'web', port: '8080' });
  t.same(splitSchemeNamePort('https:web:443'), { scheme: 'https', name: 'web', port: '443' });
  t.same(splitSchemeNamePort('https:web:'), { scheme: 'https', name: 'web', port: '' });
  t.equal(splitSchemeNamePort('ftp:web:21'), undefined, 'only http and https');
  t.equal(splitSchemeNamePort(':80'), undefined, 'a name is needed');
  t.equal(splitSchemeNamePort('a:b:c:d'), undefined);
  for (const ip of ['10.1.2.3', '192.168.0.9', '8.8.8.8', 'fd00::1', '2001:db8::1']) t.ok(isGlobalUnicast(ip), ip);
  for (const ip of ['127.0.0.1', '127.9.9.9', '0.0.0.0', '169.254.1.1', '224.0.0.1', '255.255.255.255', '::1', '::', 'fe80::1', 'ff02::1', '', 'nope']) t.notOk(isGlobalUnicast(ip), ip || '(empty)');
  const info = (subresource: string): RequestInfo => ({ isResourceRequest: true, path: '', verb: 'get', apiPrefix: 'api', apiGroup: '', apiVersion: 'v1', namespace: 'd', resource: 'pods', subresource, name: 'p', parts: [] });
  t.ok(isLongRunningRequest(info('proxy'), new URLSearchParams()), 'proxied requests are long-running (no request timeout, no in-flight seat)');
  t.notOk(isLongRunningRequest(info(''), new URLSearchParams()));
});

const a = await startApiserver();
const c = await connectClient(a);
t.teardown(async () => { c.close(); await a.stop(); });
const NS = '/api/v1/namespaces/default';

async function podWithIp(name: string, ip: string | undefined, ports: number[] = [8080]): Promise<void> {
  const r = await c.request('POST', `${NS}/pods`, { body: { apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { containers: [{ name: 'c', image: 'nginx', ports: ports.map((p) => ({ containerPort: p })) }] } } });
  if (r.status !== 201) throw new Error(`create ${name}: ${r.status}`);
  if (ip) {
    const s = await c.request('PATCH', `${NS}/pods/${name}/status`, { raw: JSON.stringify({ status: { podIP: ip, podIPs: [{ ip }] } }), contentType: 'application/merge-patch+json' });
    if (s.status !== 200) throw new Error(`status ${name}: ${s.status}`);
  }
}

t.test('pods/proxy refuses what Kubernetes refuses, before connecting', async (t) => {
  await podWithIp('no-ip', undefined);
  await podWithIp('loop', '127.0.0.1');
  await podWithIp('far', '10.99.0.7');
  const cases: [string, number, RegExp][] = [
    ['no-ip/proxy/', 400, /address not allowed/],
    ['loop:8080/proxy/', 400, /address not allowed/],
    ['far:0/proxy/', 400, /invalid port "0"/],
    ['far:http/proxy/', 400, /invalid port "http"/],
    ['far:70000/proxy/', 400, /invalid port "70000"/],
    ['ftp:far:21/proxy/', 400, /invalid pod request "ftp:far:21"/],
    ['missing:80/proxy/', 404, /pods "missing" not found/],
  ];
  for (const [path, code, message] of cases) {
    const r = await c.request('GET', `${NS}/pods/${path}`);
    t.equal(r.status, code, path);
    t.match(r.json?.message, message, path);
    t.equal(r.json?.kind, 'Status', `${path}: a Status`);
  }
  const bare = await c.request('GET', `${NS}/pods/far:8080/proxy?x=1`);
  t.equal(bare.status, 301, 'a bare .../proxy is sent to .../proxy/');
  t.equal(bare.headers['location'], `${NS}/pods/far:8080/proxy/?x=1`);
});

t.test('services/proxy finds a pod endpoint for the port, or says there is none', async (t) => {
  const svc = (name: string): Record<string, unknown> => ({ apiVersion: 'v1', kind: 'Service', metadata: { name }, spec: { ports: [{ name: 'web', port: 80, targetPort: 8080 }] } });
  for (const n of ['no-eps', 'empty-eps', 'foreign-eps', 'wrong-ip-eps']) t.equal((await c.request('POST', `${NS}/services`, { body: svc(n) })).status, 201);
  const eps = (name: string, subsets: unknown[]): Promise<unknown> => c.request('POST', `${NS}/endpoints`, { body: { apiVersion: 'v1', kind: 'Endpoints', metadata: { name }, subsets } });
  await eps('empty-eps', []);
  await eps('foreign-eps', [{ addresses: [{ ip: '10.99.0.7' }], ports: [{ name: 'web', port: 8080 }] }]);
  await eps('wrong-ip-eps', [{ addresses: [{ ip: '10.99.0.8', targetRef: { kind: 'Pod', name: 'far', namespace: 'default' } }], ports: [{ name: 'web', port: 8080 }] }]);
  const cases: [string, number, RegExp][] = [
    ['no-eps:80/proxy/', 404, /endpoints "no-eps" not found/],
    ['no-eps:81/proxy/', 503, /no service port 81 found for service "no-eps"/],
    ['empty-eps:80/proxy/', 503, /no endpoints available for service "empty-eps"/],
    ['foreign-eps:web/proxy/', 503, /no endpoints available for service "foreign-eps:web"/],
    ['wrong-ip-eps:80/proxy/', 503, /no endpoints available for service "wrong-ip-eps:80"/],
    ['a:b:c:d/proxy/', 400, /invalid service request "a:b:c:d"/],
    ['missing:80/proxy/', 404, /services "missing" not found/],
  ];
  for (const [path, code, message] of cases) {
    const r = await c.request('GET', `${NS}/services/${path}`);
    t.equal(r.status, code, path);
    t.match(r.json?.message, message, path);
    if (code === 503) t.equal(r.json?.reason, 'ServiceUnavailable', path);
  }
});

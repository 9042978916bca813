// The aggregation layer with real kubectl 1.33 and our extension API server fixture
// (test/helpers/extension-apiserver.ts): local APIServices for the built-in groups; a
// service-backed APIService goes Available, its group appears in discovery, and get, list and
// watch go through the API server to the fixture, which sees the caller's user and groups in
// the front-proxy headers; a user without RBAC permission is refused before anything is
// proxied; a stopped backend makes the APIService Available=False.
import { spawn } from 'node:child_process';
import * as https from 'node:https';
import { WebSocket } from 'ws';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { createCA, issueCert, writePemFile } from '../../../src/util/pki.js';
import { startApiserver } from '../../helpers/apiserver.js';
import { startExtensionApiserver, WARDLE_GROUP, WARDLE_VERSION, type ExtensionApiserver } from '../../helpers/extension-apiserver.js';
import { kubectl } from '../../helpers/kubectl.js';
import { kubectlRunner } from '../../helpers/kubectl-run.js';
import { waitFor } from '../../helpers/wait-for.js';

const bin = kubectl(33);
const hostIp = Object.values(networkInterfaces()).flat().find((a) => a && a.family === 'IPv4' && !a.internal)?.address;

function coreconfig(url: string, caPem: string, certPem: string, keyPem: string): string {
  const b64 = (s: string): string => Buffer.from(s).toString('base64');
  return ['apiVersion: v1', 'kind: Config', 'current-context: c', 'clusters:', '- name: c', '  cluster:', `    server: ${url}`,
    `    certificate-authority-data: ${b64(caPem)}`, 'users:', '- name: u', '  user:', `    client-certificate-data: ${b64(certPem)}`,
    `    client-key-data: ${b64(keyPem)}`, 'contexts:', '- name: c', '  context:', '    cluster: c', '    user: u', ''].join('\n');
}

/** A GET's body (the v2 document is larger than execFile's output buffer). */
function httpsGet(url: string, creds: { ca: string; cert: string; key: string }): Promise<string> {
  return new Promise((resolve, reject) => {
    https.get(url, { ...creds, headers: { accept: 'application/json' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    }).on('error', reject);
  });
}

t.test('aggregation through the API server to an extension server', { skip: !bin ? 'kubectl.1.33 not installed' : !hostIp ? 'no non-loopback IPv4 address' : false }, async (t) => {
  const frontCa = await createCA({ commonName: 'front-proxy-ca' });
  const proxyClient = await issueCert({ ca: frontCa, commonName: 'front-proxy-client', usages: 'client' });
  const dir = await mkdtemp(join(tmpdir(), 'aggregator-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const files = { ca: join(dir, 'front-ca.crt'), cert: join(dir, 'front-client.crt'), key: join(dir, 'front-client.key') };
  await Promise.all([writePemFile(files.ca, frontCa.certPem), writePemFile(files.cert, proxyClient.certPem), writePemFile(files.key, proxyClient.keyPem)]);
  const a = await startApiserver({ args: [
    '--authorization-mode=RBAC', '--enable-aggregator-routing=true',
    `--requestheader-client-ca-file=${files.ca}`, '--requestheader-allowed-names=front-proxy-client',
    '--requestheader-username-headers=X-Remote-User', '--requestheader-group-headers=X-Remote-Group', '--requestheader-extra-headers-prefix=X-Remote-Extra-',
    `--proxy-client-cert-file=${files.cert}`, `--proxy-client-key-file=${files.key}`,
  ] });
  t.teardown(() => a.stop());
  const k = kubectlRunner(bin!, a.coreconfigPath, join(a.dir, 'kcache'));
  const admin = await a.issueClient('admin', ['system:masters']);

  // Local APIServices for the built-in groups, Available (Local).
  const local = await waitFor('local APIServices', async () => {
    const r = await k.run(['get', 'apiservices']);
    return r.code === 0 && r.stdout.includes('v1.apps') && r.stdout.includes('Local') ? r.stdout : undefined;
  });
  t.match(local, /^NAME\s+SERVICE\s+AVAILABLE\s+AGE/m, 'kubectl shows NAME SERVICE AVAILABLE AGE');
  t.match(local, /^v1\.\s+Local\s+True/m, 'v1. is local and available');
  t.match(local, /^v1\.apiregistration\.k8s\.io\s+Local\s+True/m);

  // A CRD's group/version gets a local APIService too.
  await k.ok(t, ['apply', '-f', '-'], JSON.stringify({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'widgets.stable.example.com' },
    spec: { group: 'stable.example.com', scope: 'Namespaced', names: { plural: 'widgets', singular: 'widget', kind: 'Widget' },
      versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }] } }));
  await waitFor('the CRD\'s local APIService', async () => /^v1\.stable\.example\.com\s+Local\s+True/m.test((await k.run(['get', 'apiservices'])).stdout), 20_000);
  t.pass('v1.stable.example.com is a local APIService');

  let fx: ExtensionApiserver | undefined = await startExtensionApiserver({
    apiserverUrl: a.url, creds: { ca: a.ca.certPem, cert: admin.certPem, key: admin.keyPem }, serviceName: 'api', namespace: 'wardle',
  });
  t.teardown(() => fx?.close());
  fx.addFlunder('wardle', 'first');
  const manifest = [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'wardle' } },
    { apiVersion: 'v1', kind: 'Service', metadata: { name: 'api', namespace: 'wardle' }, spec: { ports: [{ name: 'https', port: 443, targetPort: 443 }] } },
    { apiVersion: 'v1', kind: 'Endpoints', metadata: { name: 'api', namespace: 'wardle' }, subsets: [{ addresses: [{ ip: hostIp }], ports: [{ name: 'https', port: fx.port }] }] },
    { apiVersion: 'apiregistration.k8s.io/v1', kind: 'APIService', metadata: { name: `${WARDLE_VERSION}.${WARDLE_GROUP}` },
      spec: { group: WARDLE_GROUP, version: WARDLE_VERSION, groupPriorityMinimum: 1000, versionPriority: 15, caBundle: fx.caBundle, service: { namespace: 'wardle', name: 'api' } } },
  ];
  await k.ok(t, ['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: manifest }));
  const available = await waitFor('the APIService to become available', async () => {
    const r = await k.run(['get', 'apiservice', `${WARDLE_VERSION}.${WARDLE_GROUP}`]);
    return /wardle\/api\s+True/.test(r.stdout) ? r.stdout : undefined;
  });
  t.match(available, /v1alpha1\.wardle\.example\.com\s+wardle\/api\s+True/, 'Available=True with the service shown');
  t.ok(fx.requests.some((r) => r.path === `/apis/${WARDLE_GROUP}/${WARDLE_VERSION}` && r.user === 'system:kube-aggregator'), 'the availability check asked the backend\'s discovery');

  // Discovery lists the group (legacy and aggregated: kubectl 1.33 uses the aggregated form).
  const resources = await k.ok(t, ['api-resources', `--api-group=${WARDLE_GROUP}`]);
  t.match(resources, /flunders\s+fl\s+wardle\.example\.com\/v1alpha1\s+true\s+Flunder/, 'api-resources shows the extension\'s resource');
  const groups = await k.ok(t, ['get', '--raw', '/apis']);
  t.ok((JSON.parse(groups) as { groups: { name: string }[] }).groups.some((g) => g.name === WARDLE_GROUP), 'legacy /apis lists the group');

  // OpenAPI: the extension's documents are merged (v3 for kubectl explain, v2 paths and definitions).
  const explained = await waitFor('kubectl explain of the extension\'s kind', async () => {
    const r = await k.run(['explain', 'flunders']);
    if (r.code !== 0) throw new Error(r.stderr);
    return r.stdout;
  });
  t.match(explained, /A flunder of the wardle fixture/, 'kubectl explain reads the extension\'s OpenAPI v3 document');
  const v2 = JSON.parse(await httpsGet(`${a.url}/openapi/v2`, { ca: a.ca.certPem, cert: admin.certPem, key: admin.keyPem })) as { paths: Record<string, unknown>; definitions: Record<string, unknown> };
  t.ok(v2.paths[`/apis/${WARDLE_GROUP}/${WARDLE_VERSION}/namespaces/{namespace}/flunders`] && v2.definitions['com.example.wardle.v1alpha1.Flunder'], '/openapi/v2 has the extension\'s paths and definitions');
  t.ok(v2.paths['/api/v1/namespaces/{namespace}/pods'], 'and still the built-in ones');

  // get and list through the API server, with the caller's identity in the front-proxy headers.
  const before = fx.requests.length;
  const list = await k.ok(t, ['get', 'flunders', '-n', 'wardle']);
  t.match(list, /first/, 'kubectl get lists the extension\'s objects');
  const got = await k.json(t, ['get', 'flunder', 'first', '-n', 'wardle']);
  t.equal(got.metadata.name, 'first', 'kubectl get of one object');
  const seen = fx.requests.slice(before).filter((r) => r.path.includes('/flunders'));
  t.ok(seen.length >= 2, 'the fixture served the requests');
  for (const r of seen) {
    t.equal(r.user, 'admin', 'the fixture sees the caller\'s user');
    t.same(r.groups, ['system:masters', 'system:authenticated'], 'and groups');
    t.ok(r.trusted, 'over a connection with the front-proxy client certificate');
  }

  // watch streams through.
  const watch = spawn(bin!, [`--kubeconfig=${a.coreconfigPath}`, `--cache-dir=${join(a.dir, 'kcache')}`, 'get', 'flunders', '-n', 'wardle', '--watch', '--no-headers'], { stdio: ['ignore', 'pipe', 'pipe'] });
  t.teardown(() => { watch.kill(); });
  let out = '';
  watch.stdout.on('data', (d: Buffer) => { out += d.toString(); });
  await waitFor('the watch to list the first flunder', () => out.includes('first'));
  // kubectl lists, then watches from the list's version: add once its watch is open.
  await waitFor('kubectl\'s watch to be open at the fixture', () => fx!.watching() > 0);
  fx.addFlunder('wardle', 'second');
  await waitFor('the watch to show the added flunder', () => out.includes('second'));
  t.pass('a watch event streamed through the API server');
  watch.kill();

  // A WebSocket watch (HTTP/1.1 upgrade) goes through too.
  const frames: string[] = [];
  const socket = new WebSocket(`${a.url.replace('https:', 'wss:')}/apis/${WARDLE_GROUP}/${WARDLE_VERSION}/namespaces/wardle/flunders?watch=true`,
    { ca: a.ca.certPem, cert: admin.certPem, key: admin.keyPem });
  socket.on('message', (d: Buffer) => frames.push(d.toString()));
  socket.on('error', () => undefined);
  await waitFor('the WebSocket watch to list the flunders', () => frames.some((f) => f.includes('"second"')));
  await waitFor('the WebSocket watch to be open at the fixture', () => fx!.watching() > 0);
  fx.addFlunder('wardle', 'third');
  await waitFor('the WebSocket watch to show the added flunder', () => frames.some((f) => f.includes('"third"')));
  t.ok(fx.requests.some((r) => r.method === 'WATCH' && r.user === 'admin' && r.trusted), 'the fixture saw the upgrade with the caller\'s identity');
  socket.close();

  // A user without RBAC permission is refused by the API server; the fixture sees no request for it.
  const bob = await a.issueClient('bob', ['devs']);
  const bobConfig = join(a.dir, 'bob.conf');
  await writeFile(bobConfig, coreconfig(a.url, a.ca.certPem, bob.certPem, bob.keyPem));
  const kb = kubectlRunner(bin!, bobConfig, join(a.dir, 'kcache-bob'));
  const refused = await kb.run(['get', 'flunders', '-n', 'wardle']);
  t.not(refused.code, 0);
  t.match(refused.stderr, /forbidden: User "bob" cannot list resource "flunders" in API group "wardle.example.com" in the namespace "wardle"/, 'Forbidden by the API server');
  t.notOk(fx.requests.some((r) => r.user === 'bob' && r.path.includes('/flunders')), 'nothing of bob\'s reached the extension\'s resources');

  // Stopped: the next request fails (503) and the APIService goes Available=False.
  await fx.close();
  fx = undefined;
  const down = await k.run(['get', 'flunders', '-n', 'wardle']);
  t.not(down.code, 0, 'requests fail while the backend is down');
  const unavailable = await waitFor('Available=False', async () => {
    const r = await k.json(t, ['get', 'apiservice', `${WARDLE_VERSION}.${WARDLE_GROUP}`]);
    const c = (r.status?.conditions ?? []).find((x: { type: string }) => x.type === 'Available');
    return c?.status === 'False' ? c : undefined;
  }, 30_000);
  t.equal(unavailable.reason, 'FailedDiscoveryCheck');
});

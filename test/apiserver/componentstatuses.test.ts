/**
 * componentstatuses (`kubectl get cs`) on a real API server: the handler is re-installed on
 * the server's REST layer with its probe targets pointed at HTTPS health servers this test
 * starts (one answering 200 "ok", one answering 500) and at a port nothing listens on, plus
 * the server's own storage entry. Checks list/get/404/405, the deprecation warning, the Table
 * kubectl prints, discovery, and real kubectl 1.33 when installed.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import * as https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { installComponentStatuses, storageComponents } from '../../src/daemons/apiserver/componentstatus/handler.js';
import { httpComponent } from '../../src/daemons/apiserver/componentstatus/probes.js';
import { createCA, issueCert } from '../../src/util/pki.js';
import { freePort, startApiserver } from '../helpers/apiserver.js';
import { kubectl } from '../helpers/kubectl.js';
import { kubectlRunner } from '../helpers/kubectl-run.js';
import { connectClient } from '../helpers/rest-client.js';

const WARNING = '299 - "v1 ComponentStatus is deprecated in v1.19+"';

/** An HTTPS health endpoint answering every request with `code` and `body`. */
async function healthServer(code: number, body: string): Promise<{ url: string; close(): Promise<void> }> {
  const ca = await createCA({ commonName: 'health-ca' });
  const pair = await issueCert({ ca, commonName: 'component', ips: ['127.0.0.1'], dnsNames: ['localhost'], usages: 'server' });
  const server = https.createServer({ cert: pair.certPem, key: pair.keyPem }, (_req, res) => { res.writeHead(code, { 'Content-Type': 'text/plain' }); res.end(body); });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `https://127.0.0.1:${(server.address() as AddressInfo).port}/healthz`,
    async close() { server.closeAllConnections(); await new Promise((r) => server.close(r)); },
  };
}

const a = await startApiserver();
const client = await connectClient(a);
const healthy = await healthServer(200, 'ok');
const failing = await healthServer(500, 'internal error');
const downPort = await freePort();
const downUrl = `https://127.0.0.1:${downPort}/healthz`;
t.teardown(async () => { client.close(); await healthy.close(); await failing.close(); await a.stop(); });

t.test('the server registers componentstatuses with its storage entry', async (t) => {
  // Only the storage entry is asked for: the default scheduler/controller-manager addresses
  // belong to whatever runs on this machine.
  const r = await client.request('GET', '/api/v1/componentstatuses/kvstore-0');
  t.equal(r.status, 200);
  t.same(r.json.conditions, [{ type: 'Healthy', status: 'True', message: 'ok' }], 'the embedded store is healthy');
});

// From here on the probes point at this test's servers.
const parts = a.parts!;
installComponentStatuses(parts.rest, {
  schedulerUrl: healthy.url,
  controllerManagerUrl: failing.url,
  storage: [...storageComponents([], [], parts.storage), httpComponent('etcd-1', downUrl)],
});

t.test('list probes every component', async (t) => {
  const r = await client.request('GET', '/api/v1/componentstatuses');
  t.equal(r.status, 200);
  t.equal(r.headers['warning'], WARNING, 'deprecation warning');
  t.equal(r.json.kind, 'ComponentStatusList');
  t.equal(r.json.apiVersion, 'v1');
  const byName = Object.fromEntries(r.json.items.map((i: { metadata: { name: string } }) => [i.metadata.name, i]));
  t.same(Object.keys(byName), ['scheduler', 'controller-manager', 'kvstore-0', 'etcd-1']);
  t.match(byName['scheduler'], { kind: 'ComponentStatus', apiVersion: 'v1', metadata: { name: 'scheduler' } });
  t.same(byName['scheduler'].conditions, [{ type: 'Healthy', status: 'True', message: 'ok' }], 'a 200 "ok" is healthy');
  t.same(byName['controller-manager'].conditions, [{ type: 'Healthy', status: 'False', message: 'HTTP probe failed with statuscode: 500' }],
    'a 500 is unhealthy with the prober\'s wording');
  t.same(byName['kvstore-0'].conditions, [{ type: 'Healthy', status: 'True', message: 'ok' }], 'storage healthy');
  t.same(byName['etcd-1'].conditions, [{
    type: 'Healthy', status: 'False', message: `Get "${downUrl}": dial tcp 127.0.0.1:${downPort}: connect: connection refused`,
  }], 'a refused connection is unhealthy with Go\'s request error');
});

t.test('get one, unknown names, other verbs', async (t) => {
  const one = await client.request('GET', '/api/v1/componentstatuses/scheduler');
  t.equal(one.status, 200);
  t.equal(one.headers['warning'], WARNING);
  t.same(one.json, { kind: 'ComponentStatus', apiVersion: 'v1', metadata: { name: 'scheduler', creationTimestamp: null }, conditions: [{ type: 'Healthy', status: 'True', message: 'ok' }] });

  const missing = await client.request('GET', '/api/v1/componentstatuses/etcd-9');
  t.equal(missing.status, 404);
  t.match(missing.json, { kind: 'Status', reason: 'NotFound', message: 'componentstatuses "etcd-9" not found' });
  t.equal(missing.headers['warning'], WARNING, 'errors carry the warning too');

  const body = { apiVersion: 'v1', kind: 'ComponentStatus', metadata: { name: 'x' }, conditions: [] };
  for (const [method, path] of [['POST', '/api/v1/componentstatuses'], ['PUT', '/api/v1/componentstatuses/scheduler'],
    ['PATCH', '/api/v1/componentstatuses/scheduler'], ['DELETE', '/api/v1/componentstatuses/scheduler'], ['DELETE', '/api/v1/componentstatuses']] as const) {
    const r = await client.request(method, path, { body, ...(method === 'PATCH' ? { contentType: 'application/merge-patch+json' } : {}) });
    t.equal(r.status, 405, `${method} ${path}`);
    t.equal(r.json?.reason, 'MethodNotAllowed', `${method} ${path} reason`);
  }
  const pb = await client.request('GET', '/api/v1/componentstatuses/scheduler', { accept: 'application/vnd.kubernetes.protobuf' });
  t.equal(pb.status, 200);
  t.equal(pb.headers['content-type'], 'application/vnd.kubernetes.protobuf', 'protobuf is served');
  const watch = await client.request('GET', '/api/v1/componentstatuses?watch=true');
  t.equal(watch.status, 405, 'watch is not served');
});

t.test('Table for kubectl', async (t) => {
  const r = await client.request('GET', '/api/v1/componentstatuses', { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json' });
  t.equal(r.status, 200);
  t.equal(r.headers['warning'], WARNING);
  t.equal(r.json.kind, 'Table');
  t.same(r.json.columnDefinitions.map((c: { name: string }) => c.name), ['Name', 'Status', 'Message', 'Error']);
  t.same(r.json.rows.map((x: { cells: unknown[] }) => x.cells), [
    ['scheduler', 'Healthy', 'ok', ''],
    ['controller-manager', 'Unhealthy', 'HTTP probe failed with statuscode: 500', ''],
    ['kvstore-0', 'Healthy', 'ok', ''],
    ['etcd-1', 'Unhealthy', `Get "${downUrl}": dial tcp 127.0.0.1:${downPort}: connect: connection refused`, ''],
  ]);
  t.match(r.json.rows[0].object, { kind: 'PartialObjectMetadata', metadata: { name: 'scheduler' } });
});

t.test('discovery lists componentstatuses as cs, get and list', async (t) => {
  const r = await client.request('GET', '/api/v1');
  t.equal(r.status, 200);
  const cs = r.json.resources.find((x: { name: string }) => x.name === 'componentstatuses');
  t.match(cs, { name: 'componentstatuses', singularName: 'componentstatus', namespaced: false, kind: 'ComponentStatus', shortNames: ['cs'] });
  t.same(cs.verbs, ['get', 'list']);
});

const k133 = kubectl(33);
t.test('kubectl 1.33 get cs', { skip: k133 ? false : 'kubectl.1.33 not installed' }, async (t) => {
  const cache = await mkdtemp(join(tmpdir(), 'corectl-cs-kubectl-'));
  t.teardown(() => rm(cache, { recursive: true, force: true }));
  const run = kubectlRunner(k133!, a.coreconfigPath, cache).run;
  const r = await run(['get', 'cs']);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stderr, 'Warning: v1 ComponentStatus is deprecated in v1.19+');
  const lines = r.stdout.trimEnd().split('\n').map((l) => l.trim().split(/\s{2,}/));
  t.same(lines, [
    ['NAME', 'STATUS', 'MESSAGE', 'ERROR'],
    ['scheduler', 'Healthy', 'ok'],
    ['controller-manager', 'Unhealthy', 'HTTP probe failed with statuscode: 500'],
    ['kvstore-0', 'Healthy', 'ok'],
    ['etcd-1', 'Unhealthy', `Get "${downUrl}": dial tcp 127.0.0.1:${downPort}: connect: connection refused`],
  ]);
  const one = await run(['get', 'componentstatus', 'scheduler', '-o', 'jsonpath={.conditions[0].status}']);
  t.equal(one.stdout, 'True');
  const missing = await run(['get', 'cs', 'nope']);
  t.not(missing.code, 0);
  t.match(missing.stderr, 'componentstatuses "nope" not found');
});

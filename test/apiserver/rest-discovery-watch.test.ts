import t from 'tap';
import { WebSocket } from 'ws';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as http2 from 'node:http2';
import { decodeWatchStream } from '../../src/api/codec/watch-frame.js';
import { startApiserver } from '../helpers/apiserver.js';
import { connectClient } from '../helpers/rest-client.js';

const a = await startApiserver({ args: ['--runtime-config=batch/v1beta1=false,policy/v1/poddisruptionbudgets=false', '--min-request-timeout=2'] });
const c = await connectClient(a);
t.teardown(async () => { c.close(); await a.stop(); });

const TBL = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json';

t.test('legacy discovery', async (t) => {
  const api = await c.request('GET', '/api');
  t.equal(api.headers['content-type'], 'application/json');
  t.match(api.json, { kind: 'APIVersions', versions: ['v1'] });
  t.ok(api.json.serverAddressByClientCIDRs[0].serverAddress);
  const apis = await c.request('GET', '/apis');
  t.equal(apis.json.kind, 'APIGroupList');
  const apps = apis.json.groups.find((g: { name: string }) => g.name === 'apps');
  t.same(apps.preferredVersion, { groupVersion: 'apps/v1', version: 'v1' });
  t.notOk(apis.json.groups.some((g: { name: string }) => g.name === ''), 'core group not listed under /apis');
  const autoscaling = apis.json.groups.find((g: { name: string }) => g.name === 'autoscaling');
  t.same(autoscaling.versions.map((v: { version: string }) => v.version), ['v2', 'v1']);
  const batch = apis.json.groups.find((g: { name: string }) => g.name === 'batch');
  t.same(batch.versions.map((v: { version: string }) => v.version), ['v1'], 'runtime-config switched batch/v1beta1 off');

  const v1 = (await c.request('GET', '/api/v1')).json;
  t.equal(v1.kind, 'APIResourceList');
  t.equal(v1.groupVersion, 'v1');
  const byName = new Map<string, Record<string, unknown>>(v1.resources.map((r: { name: string }) => [r.name, r]));
  t.match(byName.get('pods'), { singularName: 'pod', namespaced: true, kind: 'Pod', shortNames: ['po'], categories: ['all'] });
  t.same(byName.get('pods')!.verbs, ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch']);
  t.match(byName.get('pods/status'), { kind: 'Pod', verbs: ['get', 'patch', 'update'] });
  t.match(byName.get('pods/eviction'), { group: 'policy', version: 'v1', kind: 'Eviction' });
  t.ok(byName.has('pods/log') && byName.has('pods/exec') && byName.has('pods/binding'));
  t.match(byName.get('serviceaccounts/token'), { group: 'authentication.k8s.io', version: 'v1', kind: 'TokenRequest' });
  t.match(byName.get('namespaces'), { namespaced: false, shortNames: ['ns'] });
  t.notOk((byName.get('namespaces')!.verbs as string[]).includes('deletecollection'));

  const appsV1 = (await c.request('GET', '/apis/apps/v1')).json;
  const scale = appsV1.resources.find((r: { name: string }) => r.name === 'deployments/scale');
  t.match(scale, { group: 'autoscaling', version: 'v1', kind: 'Scale' });
  t.equal((await c.request('GET', '/apis/apps')).json.kind, 'APIGroup');
  t.equal((await c.request('GET', '/apis/policy/v1')).status, 404, 'only resource of policy/v1 switched off');
  t.equal((await c.request('GET', '/apis/batch/v1beta1')).status, 404);
  t.equal((await c.request('GET', '/apis/batch/v1beta1/namespaces/default/cronjobs')).status, 404);
  t.equal((await c.request('GET', '/apis/nope/v1')).status, 404);
});

t.test('aggregated discovery: v2 and v2beta1 from Accept', async (t) => {
  const v2 = await c.request('GET', '/apis', { accept: 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json' });
  t.equal(v2.headers['content-type'], 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList');
  t.equal(v2.json.kind, 'APIGroupDiscoveryList');
  t.equal(v2.json.apiVersion, 'apidiscovery.k8s.io/v2');
  const apps = v2.json.items.find((i: { metadata: { name: string } }) => i.metadata.name === 'apps');
  const deployments = apps.versions[0].resources.find((r: { resource: string }) => r.resource === 'deployments');
  t.match(deployments, { responseKind: { group: 'apps', version: 'v1', kind: 'Deployment' }, scope: 'Namespaced', singularResource: 'deployment', shortNames: ['deploy'], categories: ['all'] });
  t.match(deployments.subresources.find((s: { subresource: string }) => s.subresource === 'scale'), { responseKind: { group: 'autoscaling', version: 'v1', kind: 'Scale' } });
  t.equal(apps.versions[0].freshness, 'Current');

  const beta = await c.request('GET', '/api', { accept: 'application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json' });
  t.equal(beta.headers['content-type'], 'application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList');
  t.equal(beta.json.apiVersion, 'apidiscovery.k8s.io/v2beta1');
  t.equal(beta.json.items.length, 1);
  t.equal(beta.json.items[0].metadata.name, undefined, 'the core group has no name: omitted when empty, as Go\'s encoder does');
  t.ok(beta.json.items[0].versions[0].resources.some((r: { resource: string; scope: string }) => r.resource === 'nodes' && r.scope === 'Cluster'));
});

t.test('tables', async (t) => {
  await c.request('POST', '/api/v1/namespaces/default/pods', { body: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'tp', labels: { a: 'b' } }, spec: { containers: [{ name: 'c', image: 'nginx' }] } } });
  const tbl = await c.request('GET', '/api/v1/namespaces/default/pods', { accept: TBL });
  t.equal(tbl.json.kind, 'Table');
  t.equal(tbl.json.apiVersion, 'meta.k8s.io/v1');
  t.same(tbl.json.columnDefinitions.map((d: { name: string }) => d.name), ['Name', 'Ready', 'Status', 'Restarts', 'Age', 'IP', 'Node', 'Nominated Node', 'Readiness Gates']);
  t.same(tbl.json.columnDefinitions.map((d: { priority: number }) => d.priority), [0, 0, 0, 0, 0, 1, 1, 1, 1]);
  t.equal(tbl.json.columnDefinitions[0].format, 'name');
  const row = tbl.json.rows[0];
  t.same(row.cells.slice(0, 4), ['tp', '0/1', 'Pending', '0']);
  t.equal(row.object.kind, 'PartialObjectMetadata');
  t.same(row.object.metadata.labels, { a: 'b' });
  const full = await c.request('GET', '/api/v1/namespaces/default/pods?includeObject=Object', { accept: TBL });
  t.equal(full.json.rows[0].object.kind, 'Pod');
  t.ok(full.json.rows[0].object.spec);
  const one = await c.request('GET', '/api/v1/namespaces/default/pods/tp', { accept: TBL });
  t.equal(one.json.rows.length, 1);
  const svc = await c.request('GET', '/api/v1/namespaces/default/services', { accept: TBL });
  t.same(svc.json.columnDefinitions.map((d: { name: string }) => d.name), ['Name', 'Type', 'Cluster-IP', 'External-IP', 'Port(s)', 'Age', 'Selector']);
  t.same(svc.json.rows[0].cells.slice(0, 5), ['kubernetes', 'ClusterIP', '10.0.0.1', '<none>', '443/TCP']);
  const ns = await c.request('GET', '/api/v1/namespaces', { accept: TBL });
  t.same(ns.json.columnDefinitions.map((d: { name: string }) => d.name), ['Name', 'Status', 'Age']);
  const partial = await c.request('GET', '/api/v1/namespaces/default/pods', { accept: 'application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io' });
  t.equal(partial.json.kind, 'PartialObjectMetadataList');
});

t.test('watch: synthetic ADDED, live events, bookmarks, timeout', async (t) => {
  await c.request('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'w' } } });
  await c.request('POST', '/api/v1/namespaces/w/configmaps', { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'w0' } } });
  const w = c.stream('/api/v1/namespaces/w/configmaps?watch=True&timeoutSeconds=30');
  t.equal(await w.status(), 200);
  t.equal((await w.headers())['content-type'], 'application/json');
  const first = JSON.parse((await w.next())!);
  t.equal(first.type, 'ADDED');
  t.equal(first.object.metadata.name, 'w0');
  t.equal(first.object.kind, 'ConfigMap');
  await c.request('POST', '/api/v1/namespaces/w/configmaps', { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'w1' } } });
  const added = JSON.parse((await w.next())!);
  t.match(added, { type: 'ADDED', object: { metadata: { name: 'w1' } } });
  await c.request('PATCH', '/api/v1/namespaces/w/configmaps/w1', { raw: '{"data":{"x":"y"}}', contentType: 'application/merge-patch+json' });
  t.match(JSON.parse((await w.next())!), { type: 'MODIFIED', object: { data: { x: 'y' } } });
  await c.request('DELETE', '/api/v1/namespaces/w/configmaps/w1');
  t.match(JSON.parse((await w.next())!), { type: 'DELETED', object: { metadata: { name: 'w1' } } });
  w.close();

  const list = (await c.request('GET', '/api/v1/namespaces/w/configmaps')).json;
  const sel = c.stream(`/api/v1/namespaces/w/configmaps?watch=1&resourceVersion=${list.metadata.resourceVersion}&labelSelector=keep%3Dyes&timeoutSeconds=1`);
  await c.request('POST', '/api/v1/namespaces/w/configmaps', { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'skip' } } });
  await c.request('POST', '/api/v1/namespaces/w/configmaps', { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'keep', labels: { keep: 'yes' } } } });
  const only = JSON.parse((await sel.next())!);
  t.match(only, { type: 'ADDED', object: { metadata: { name: 'keep' } } }, 'from RV N: only later changes, filtered');
  t.equal(await sel.next(5000), undefined, 'stream ends at timeoutSeconds');

  const tw = c.stream('/api/v1/namespaces/w/configmaps?watch=true&timeoutSeconds=5', TBL);
  const te = JSON.parse((await tw.next())!);
  t.equal(te.object.kind, 'Table', 'table-wrapped events');
  t.equal(te.object.rows.length, 1);
  t.same(te.object.columnDefinitions.map((d: { name: string }) => d.name), ['Name', 'Data', 'Age']);
  tw.close();

  const dflt = c.stream('/api/v1/namespaces/w/configmaps?watch=true&resourceVersion=' + list.metadata.resourceVersion);
  t.equal(await dflt.status(), 200);
  const end = Date.now();
  let line: string | undefined;
  do { line = await dflt.next(10_000); } while (line !== undefined);
  t.ok(Date.now() - end < 10_000, 'default timeout derives from --min-request-timeout');
});

t.test('watch: expired resourceVersion gives ERROR 410 then closes', async (t) => {
  // Deterministic expiry: after a restart the watch history starts at the load revision (as in
  // Kubernetes), so a resourceVersion from before it is too old.
  const tmp = await mkdtemp(join(tmpdir(), 'corectl-410-'));
  t.teardown(() => rm(tmp, { recursive: true, force: true }));
  const args = [`--data-dir=${join(tmp, 'data')}`];
  const first = await startApiserver({ args });
  const fc = await connectClient(first);
  await fc.request('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'w' } } });
  const beforeRv = (await fc.request('POST', '/api/v1/namespaces/w/configmaps', { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'before' } } })).json.metadata.resourceVersion;
  // A later write, so that beforeRv lies before the revision the second server loads at.
  await fc.request('POST', '/api/v1/namespaces/w/configmaps', { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'after' } } });
  fc.close();
  await first.stop();
  const second = await startApiserver({ args });
  t.teardown(() => second.stop());
  const c = await connectClient(second);
  t.teardown(() => c.close());
  const old = c.stream(`/api/v1/namespaces/w/configmaps?watch=true&resourceVersion=${beforeRv}&timeoutSeconds=20`);
  t.equal(await old.status(), 200);
  const err = JSON.parse((await old.next())!);
  t.match(err, { type: 'ERROR', object: { kind: 'Status', status: 'Failure', reason: 'Expired', code: 410 } });
  t.match(err.object.message, new RegExp(`^too old resource version: ${beforeRv} \\(\\d+\\)$`));
  t.equal(await old.next(5000), undefined, 'closed right after the ERROR');
  const quiet = c.stream(`/api/v1/namespaces/w/configmaps?watch=true&resourceVersion=${(await c.request('GET', '/api/v1/namespaces/w/configmaps')).json.metadata.resourceVersion}&timeoutSeconds=60`);
  const early = await Promise.race([quiet.status(), new Promise<string>((r) => setTimeout(() => r('late'), 5000).unref())]);
  t.equal(early, 200, 'headers are sent before the first event');
  quiet.close();
  const bad = await c.request('GET', '/api/v1/namespaces/w/configmaps?watch=true&resourceVersion=abc');
  t.equal(bad.status, 400);
  const list = (await c.request('GET', '/api/v1/namespaces/w/configmaps')).json;
  const bw = c.stream(`/api/v1/namespaces/w/configmaps?watch=true&allowWatchBookmarks=true&resourceVersion=${list.metadata.resourceVersion}&timeoutSeconds=3`);
  t.equal(await bw.status(), 200);
  let l: string | undefined;
  const types: string[] = [];
  while ((l = await bw.next(6000)) !== undefined) types.push(JSON.parse(l).type);
  t.ok(types.every((x) => x === 'BOOKMARK'), 'only bookmarks on an idle watch');
});

t.test('protobuf watch: length-framed WatchEvents', async (t) => {
  const [ca, cert, key] = await Promise.all([readFile(a.caFile), readFile(a.clientCertFile), readFile(a.clientKeyFile)]);
  const session = http2.connect(a.url, { ca, cert, key });
  t.teardown(() => session.close());
  const req = session.request({ ':path': '/api/v1/namespaces/w/configmaps?watch=true&timeoutSeconds=2', accept: 'application/vnd.kubernetes.protobuf;stream=watch,application/json' });
  const headers = await new Promise<http2.IncomingHttpHeaders>((r) => req.on('response', r));
  t.equal(headers['content-type'], 'application/vnd.kubernetes.protobuf;stream=watch');
  const frames: { type: string; object: { kind?: string; metadata?: { name?: string } } }[] = [];
  for await (const f of decodeWatchStream(req as AsyncIterable<Uint8Array>)) frames.push(f as never);
  t.ok(frames.length >= 1);
  t.equal(frames[0]!.type, 'ADDED');
  t.equal(frames[0]!.object.kind, 'ConfigMap');
  t.ok(frames[0]!.object.metadata?.name);
});

t.test('websocket watch: one message per event', async (t) => {
  const [ca, cert, key] = await Promise.all([readFile(a.caFile), readFile(a.clientCertFile), readFile(a.clientKeyFile)]);
  const url = a.url.replace('https://', 'wss://') + '/api/v1/namespaces/w/configmaps?watch=true&timeoutSeconds=10';
  const ws = new WebSocket(url, { ca, cert, key });
  const messages: string[] = [];
  await new Promise<void>((resolve, reject) => {
    ws.on('message', (m) => { messages.push(m.toString()); if (messages.length >= 1) resolve(); });
    ws.on('error', reject);
  });
  const ev = JSON.parse(messages[0]!);
  t.equal(ev.type, 'ADDED');
  t.equal(ev.object.kind, 'ConfigMap');
  ws.close();
});

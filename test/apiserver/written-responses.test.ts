import t, { type Test } from 'tap';
import { startApiserver } from '../helpers/apiserver.js';
import { connectClient, type Reply, type RestClient } from '../helpers/rest-client.js';
import { goJsonText } from '../../src/api/codec/go-json.js';

// Creates, updates and patches answered in compact JSON splice the body from the bytes the store
// just wrote (served-json.ts) instead of encoding the object again. The body must be byte for
// byte what the general path writes: compared with a pretty GET of the same object (the pretty
// form takes the general path), re-serialized compactly, before anything else changes it.
// Kubernetes' encoder ends a compact body with a newline (an indented one without).
const compact = (pretty: Buffer): string => goJsonText(JSON.parse(pretty.toString('utf8'))) + '\n';

async function sameAsRead(t: Test, c: RestClient, reply: Reply, path: string, what: string): Promise<void> {
  const general = await c.request('GET', `${path}?pretty=true`);
  t.equal(general.status, 200, `${what}: readable`);
  t.equal(reply.body.toString('utf8'), compact(general.body), `${what}: the answer is the stored object, byte for byte`);
  t.equal(reply.headers['content-type'], 'application/json', `${what}: content type`);
}

t.test('create, update and patch answers equal the general path', async (t) => {
  const a = await startApiserver({});
  const c = await connectClient(a);
  t.teardown(async () => { c.close(); await a.stop(); });
  t.equal((await c.request('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'w' } } })).status, 201);

  const cases: Array<{ what: string; collection: string; body: Record<string, unknown> }> = [
    { what: 'configmap', collection: '/api/v1/namespaces/w/configmaps', body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm', labels: { a: 'b' } }, data: { s: 'ünïcødé ✓ "quoted" \\ \u2028' } } },
    { what: 'pod (defaults)', collection: '/api/v1/namespaces/w/pods', body: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: { containers: [{ name: 'c', image: 'busybox' }] } } },
    { what: 'service (allocations)', collection: '/api/v1/namespaces/w/services', body: { apiVersion: 'v1', kind: 'Service', metadata: { name: 'svc' }, spec: { type: 'NodePort', ports: [{ port: 80 }], selector: { app: 'x' } } } },
    { what: 'deployment (apps/v1)', collection: '/apis/apps/v1/namespaces/w/deployments', body: { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd' }, spec: { selector: { matchLabels: { app: 'd' } }, template: { metadata: { labels: { app: 'd' } }, spec: { containers: [{ name: 'c', image: 'nginx' }] } } } } },
    { what: 'cluster-scoped', collection: '/apis/rbac.authorization.k8s.io/v1/clusterroles', body: { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'r' }, rules: [] } },
    { what: 'served in an older version (converted)', collection: '/apis/autoscaling/v1/namespaces/w/horizontalpodautoscalers', body: { apiVersion: 'autoscaling/v1', kind: 'HorizontalPodAutoscaler', metadata: { name: 'h' }, spec: { scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'd' }, minReplicas: 1, maxReplicas: 3, targetCPUUtilizationPercentage: 50 } } },
    { what: 'stored as another resource (events.k8s.io)', collection: '/apis/events.k8s.io/v1/namespaces/w/events', body: { apiVersion: 'events.k8s.io/v1', kind: 'Event', metadata: { name: 'e' }, eventTime: '2026-01-02T03:04:05.000000Z', reportingController: 'x/y', reportingInstance: 'i', action: 'Do', reason: 'Because', type: 'Normal', regarding: { kind: 'Pod', name: 'p', namespace: 'w' } } },
  ];
  for (const k of cases) {
    const name = (k.body['metadata'] as { name: string }).name;
    const path = `${k.collection}/${name}`;
    const created = await c.request('POST', k.collection, { body: k.body });
    t.equal(created.status, 201, `${k.what}: created`);
    await sameAsRead(t, c, created, path, `${k.what} create`);

    const put = await c.request('PUT', path, { body: { ...created.json, metadata: { ...created.json.metadata, annotations: { changed: 'yes' } } } });
    t.equal(put.status, 200, `${k.what}: updated`);
    t.not(put.json.metadata.resourceVersion, created.json.metadata.resourceVersion, `${k.what}: a new version`);
    await sameAsRead(t, c, put, path, `${k.what} update`);

    const merge = await c.request('PATCH', path, { body: { metadata: { labels: { patched: 'merge' } } }, contentType: 'application/merge-patch+json' });
    t.equal(merge.status, 200, `${k.what}: merge-patched`);
    await sameAsRead(t, c, merge, path, `${k.what} merge patch`);

    const applied = await c.request('PATCH', `${path}?fieldManager=tester`, {
      raw: JSON.stringify({ apiVersion: k.body['apiVersion'], kind: k.body['kind'], metadata: { name, labels: { applied: 'yes' } } }),
      contentType: 'application/apply-patch+yaml',
    });
    t.equal(applied.status, 200, `${k.what}: applied`);
    await sameAsRead(t, c, applied, path, `${k.what} server-side apply`);
  }
  // A PUT that creates (configmaps are not created by PUT; leases are).
  const leasePath = '/apis/coordination.k8s.io/v1/namespaces/w/leases/l';
  const putCreated = await c.request('PUT', leasePath, { body: { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'l' }, spec: { holderIdentity: 'me' } } });
  t.equal(putCreated.status, 201, 'PUT created a lease');
  await sameAsRead(t, c, putCreated, leasePath, 'create by PUT');
});

t.test('answers that are not the plain stored object', async (t) => {
  const a = await startApiserver({});
  const c = await connectClient(a);
  t.teardown(async () => { c.close(); await a.stop(); });
  const base = '/api/v1/namespaces/default/configmaps';

  // Warnings travel with a spliced answer.
  const warned = await c.request('POST', `${base}?fieldValidation=Warn`, { raw: '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"warned"},"data":{"a":"1"},"bogus":1}' });
  t.equal(warned.status, 201);
  t.match(String(warned.headers['warning']), /^299 - "unknown field \\"bogus\\""$/, 'the warning header is sent');
  await sameAsRead(t, c, warned, `${base}/warned`, 'create with a warning');

  // Pretty, YAML, Table and dry runs take the general path and still answer correctly.
  const pretty = await c.request('POST', `${base}?pretty=true`, { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'pretty' } } });
  t.equal(pretty.status, 201);
  t.match(pretty.body.toString('utf8'), /^\{\n {2}"kind": "ConfigMap",\n {2}"apiVersion": "v1",/, 'pretty answer');
  const yaml = await c.request('POST', base, { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'yaml' } }, accept: 'application/yaml' });
  t.equal(yaml.status, 201);
  t.match(yaml.body.toString('utf8'), /^apiVersion: v1\n/m, 'YAML answer');
  t.equal(yaml.headers['content-type'], 'application/yaml');
  const table = await c.request('POST', base, { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'table' } }, accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' });
  t.equal(table.status, 201);
  t.equal(table.json.kind, 'Table', 'Table answer');
  const dry = await c.request('POST', `${base}?dryRun=All`, { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'dry' } } });
  t.equal(dry.status, 201);
  t.notOk(dry.json.metadata.resourceVersion, 'a dry run has no resourceVersion');
  t.equal((await c.request('GET', `${base}/dry`)).status, 404, 'a dry run stores nothing');

  // An update that completes a deletion answers with the deleted object, not the written one.
  const fin = await c.request('POST', base, { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'fin', finalizers: ['example.com/hold'] } } });
  t.equal(fin.status, 201);
  const marked = await c.request('DELETE', `${base}/fin`);
  t.equal(marked.status, 200);
  t.ok(marked.json.metadata.deletionTimestamp, 'marked for deletion');
  const released = await c.request('PATCH', `${base}/fin`, { body: [{ op: 'remove', path: '/metadata/finalizers' }], contentType: 'application/json-patch+json' });
  t.equal(released.status, 200);
  t.equal(released.json.metadata.name, 'fin');
  t.notOk(released.json.metadata.finalizers, 'the answer has no finalizers');
  t.equal((await c.request('GET', `${base}/fin`)).status, 404, 'the object is gone');
});

t.test('spliced answers with an at-rest transformer take the general path', async (t) => {
  // Encrypted values are not plain JSON: the store tells the writer nothing, and answers stay right.
  const { mkdtemp, writeFile, rm } = await import('node:fs/promises');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const dir = await mkdtemp(join(tmpdir(), 'written-enc-'));
  const cfg = join(dir, 'enc.yaml');
  await writeFile(cfg, [
    'apiVersion: apiserver.config.k8s.io/v1', 'kind: EncryptionConfiguration', 'resources:', '  - resources: ["configmaps"]', '    providers:',
    '      - aescbc:', '          keys:', '            - name: k1', `              secret: ${Buffer.alloc(32, 7).toString('base64')}`, '      - identity: {}', '',
  ].join('\n'));
  const a = await startApiserver({ args: [`--experimental-encryption-provider-config=${cfg}`] });
  const c = await connectClient(a);
  t.teardown(async () => { c.close(); await a.stop(); await rm(dir, { recursive: true, force: true }); });
  const base = '/api/v1/namespaces/default/configmaps';
  const created = await c.request('POST', base, { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'enc' }, data: { a: '1' } } });
  t.equal(created.status, 201);
  await sameAsRead(t, c, created, `${base}/enc`, 'create of an encrypted resource');
  const put = await c.request('PUT', `${base}/enc`, { body: { ...created.json, data: { a: '2' } } });
  t.equal(put.status, 200);
  await sameAsRead(t, c, put, `${base}/enc`, 'update of an encrypted resource');
});

// Restarting the API server on the same data directory keeps every object, with the same uid,
// resourceVersion and content; revisions continue from where they were.
import t from 'tap';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startApiserver } from '../helpers/apiserver.js';
import { connectClient } from '../helpers/rest-client.js';

const objects: Array<{ path: string; body: Record<string, unknown> }> = [
  { path: '/api/v1/namespaces', body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'keep' } } },
  { path: '/api/v1/namespaces/keep/configmaps', body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm', labels: { a: 'b' } }, data: { k: 'v' } } },
  { path: '/api/v1/namespaces/keep/secrets', body: { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'sec' }, data: { p: Buffer.from('x').toString('base64') } } },
  { path: '/api/v1/namespaces/keep/pods', body: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'pod' }, spec: { containers: [{ name: 'c', image: 'busybox' }] } } },
  { path: '/api/v1/namespaces/keep/services', body: { apiVersion: 'v1', kind: 'Service', metadata: { name: 'svc' }, spec: { selector: { app: 'x' }, ports: [{ port: 80 }] } } },
  { path: '/apis/apps/v1/namespaces/keep/deployments', body: { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'dep' }, spec: { selector: { matchLabels: { app: 'x' } }, template: { metadata: { labels: { app: 'x' } }, spec: { containers: [{ name: 'c', image: 'busybox' }] } } } } },
  { path: '/api/v1/nodes', body: { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' } } },
];

t.test('objects survive a restart unchanged', async (t) => {
  const tmp = await mkdtemp(join(tmpdir(), 'corectl-restart-'));
  t.teardown(() => rm(tmp, { recursive: true, force: true }));
  const dataDir = join(tmp, 'data');
  const args = [`--data-dir=${dataDir}`];

  const first = await startApiserver({ args });
  const c1 = await connectClient(first);
  const stored: Array<{ url: string; obj: Record<string, unknown> }> = [];
  for (const o of objects) {
    const r = await c1.request('POST', o.path, { body: o.body });
    t.equal(r.status, 201, `created ${o.path}`);
    const name = (o.body['metadata'] as { name: string }).name;
    const url = `${o.path}/${name}`;
    stored.push({ url, obj: (await c1.request('GET', url)).json });
  }
  const svcIp = stored.find((s) => s.url.includes('/services/'))!.obj['spec'] as { clusterIP: string };
  const listRv = Number((await c1.request('GET', '/api/v1/namespaces/keep/configmaps')).json.metadata.resourceVersion);
  c1.close();
  await first.stop();

  const second = await startApiserver({ args });
  t.teardown(() => second.stop());
  const c2 = await connectClient(second);
  t.teardown(() => c2.close());
  for (const s of stored) {
    const r = await c2.request('GET', s.url);
    t.equal(r.status, 200, `still there: ${s.url}`);
    const meta = r.json.metadata, was = s.obj['metadata'] as Record<string, unknown>;
    t.equal(meta.uid, was['uid'], `same uid: ${s.url}`);
    t.equal(meta.resourceVersion, was['resourceVersion'], `same resourceVersion: ${s.url}`);
    t.same(r.json.spec ?? r.json.data, s.obj['spec'] ?? s.obj['data'], `same content: ${s.url}`);
  }
  // The cluster IP stays reserved: a new service never gets the same address.
  const other = await c2.request('POST', '/api/v1/namespaces/keep/services', { body: { apiVersion: 'v1', kind: 'Service', metadata: { name: 'svc2' }, spec: { selector: { app: 'y' }, ports: [{ port: 80 }] } } });
  t.equal(other.status, 201);
  t.not(other.json.spec.clusterIP, svcIp.clusterIP, 'allocations survive the restart');
  // Revisions continue: a new write gets a higher resourceVersion than anything before.
  const cm2 = await c2.request('POST', '/api/v1/namespaces/keep/configmaps', { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm2' } } });
  t.ok(Number(cm2.json.metadata.resourceVersion) > listRv, 'revision counter recovered');
});

// --kvstore-count-metric-poll-period: /metrics reports object counts per resource.
import t from 'tap';
import { startApiserver } from '../helpers/apiserver.js';
import { connectClient, eventually } from '../helpers/rest-client.js';

t.test('apiserver_storage_objects follows the store', async (t) => {
  const api = await startApiserver({ args: ['--kvstore-count-metric-poll-period=100ms'] });
  t.teardown(() => api.stop());
  const c = await connectClient(api);
  t.teardown(() => c.close());
  await c.request('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'counted' } } });
  // The server keeps configmaps of its own (extension-apiserver-authentication): count on top of them.
  const own = ((await c.request('GET', '/api/v1/configmaps')).json.items as unknown[]).length;
  for (let i = 0; i < 3; i++) {
    const r = await c.request('POST', '/api/v1/namespaces/counted/configmaps', { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm${i}` } } });
    t.equal(r.status, 201);
  }
  const line = await eventually(async () => {
    const m = (await c.request('GET', '/metrics', { accept: 'text/plain' })).body.toString();
    const hit = /^apiserver_storage_objects\{resource="configmaps"\} (\d+)$/m.exec(m);
    return hit && Number(hit[1]) >= own + 3 ? hit[0] : undefined;
  });
  t.match(line, new RegExp(`\\} ${own + 3}$`), 'three configmaps counted on top of the server\'s own');
});

// A list or watch across all namespaces narrowed by `fieldSelector=metadata.name=...` is served
// (request info takes the name from the selector; it must not be mistaken for a GET of a
// namespaced object without a namespace), and finds the object in any namespace.
import t from 'tap';
import { loadCoreconfig } from '../../src/client/coreconfig.js';
import { RestClient } from '../../src/client/rest-client.js';
import { startApiserver } from '../helpers/apiserver.js';

const api = await startApiserver();
const client = new RestClient({ connection: await loadCoreconfig({ path: api.coreconfigPath }), contentType: 'application/json' });
t.teardown(async () => { client.close(); await api.stop(); });

const cm = (ns: string, name: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns }, data: { x: ns } });
await client.create({ group: '', version: 'v1', resource: 'namespaces' }, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'other' } });
await client.create({ group: '', version: 'v1', resource: 'configmaps', namespace: 'default' }, cm('default', 'a'));
await client.create({ group: '', version: 'v1', resource: 'configmaps', namespace: 'other' }, cm('other', 'a'));
await client.create({ group: '', version: 'v1', resource: 'configmaps', namespace: 'other' }, cm('other', 'b'));

t.test('across namespaces', async (t) => {
  const all = await client.list({ group: '', version: 'v1', resource: 'configmaps' }, { fieldSelector: 'metadata.name=a' });
  t.same(all.items.map((i) => `${i.metadata?.namespace}/${i.metadata?.name}`).sort(), ['default/a', 'other/a']);
  const none = await client.list({ group: '', version: 'v1', resource: 'configmaps' }, { fieldSelector: 'metadata.name=zz' });
  t.equal(none.items.length, 0);
});

t.test('in one namespace', async (t) => {
  const one = await client.list({ group: '', version: 'v1', resource: 'configmaps', namespace: 'other' }, { fieldSelector: 'metadata.name=b' });
  t.same(one.items.map((i) => i.metadata?.name), ['b']);
});

t.test('a watch across namespaces narrowed by name sees that name in every namespace', async (t) => {
  const ac = new AbortController();
  const start = await client.list({ group: '', version: 'v1', resource: 'configmaps' });
  const events = await client.watch({ group: '', version: 'v1', resource: 'configmaps' }, {
    fieldSelector: 'metadata.name=a', resourceVersion: start.metadata?.resourceVersion, signal: ac.signal,
  });
  const seen: string[] = [];
  const reading = (async () => {
    for await (const e of events) {
      seen.push(`${e.type} ${e.object.metadata?.namespace}/${e.object.metadata?.name}`);
      if (seen.length === 3) break;
    }
  })();
  const ref = (ns: string) => ({ group: '', version: 'v1', resource: 'configmaps', namespace: ns });
  await client.create(ref('other'), cm('other', 'c'));
  await client.delete(ref('other'), 'a');
  await client.create(ref('other'), cm('other', 'a'));
  await client.delete(ref('default'), 'a');
  await Promise.race([reading, new Promise((r) => setTimeout(r, 5000))]);
  ac.abort();
  t.same(seen, ['DELETED other/a', 'ADDED other/a', 'DELETED default/a'], 'events of other names are filtered out, none of this name is lost');
});

import t, { type Test } from 'tap';
import { startApiserver } from '../helpers/apiserver.js';
import { connectClient, type RestClient } from '../helpers/rest-client.js';
import { goJsonText } from '../../src/api/codec/go-json.js';

// GET and LIST as compact JSON are served from per-entry serializations (remembered bytes keyed
// by the stored entry). They must be byte for byte what the general path writes (compared with
// the pretty form, which takes the general path, re-serialized compactly), fresh after every
// change, and keep every list and read semantics (selectors, paging, resourceVersion, errors).
// A compact body ends with the newline Kubernetes' encoder writes (an indented one has none).
const compact = (pretty: Buffer): string => goJsonText(JSON.parse(pretty.toString('utf8'))) + '\n';

async function sameAsGeneral(t: Test, c: RestClient, path: string, what: string): Promise<unknown> {
  const fast = await c.request('GET', path);
  const general = await c.request('GET', `${path}${path.includes('?') ? '&' : '?'}pretty=true`);
  t.equal(fast.status, general.status, `${what}: same status`);
  t.equal(fast.body.toString('utf8'), compact(general.body), `${what}: same bytes as the general path`);
  t.equal(fast.headers['content-type'], general.headers['content-type'], `${what}: same content type`);
  return fast.json;
}

t.test('JSON GET and LIST fast paths', async (t) => {
  const a = await startApiserver({});
  const c = await connectClient(a);
  t.teardown(async () => { c.close(); await a.stop(); });
  t.equal((await c.request('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'fast' } } })).status, 201);
  const base = '/api/v1/namespaces/fast/configmaps';
  for (let i = 0; i < 7; i++) {
    const r = await c.request('POST', base, { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm${i}`, labels: { even: String(i % 2 === 0) } }, data: { i: String(i), s: 'ünïcødé ✓' } } });
    t.equal(r.status, 201);
  }

  for (let round = 0; round < 2; round++) {
    // The second round is answered from remembered bytes.
    const got = await sameAsGeneral(t, c, `${base}/cm3`, `GET (round ${round})`) as { data: Record<string, string>; kind: string };
    t.match(got, { kind: 'ConfigMap', apiVersion: 'v1', metadata: { name: 'cm3', namespace: 'fast' }, data: { i: '3', s: 'ünïcødé ✓' } });
    const list = await sameAsGeneral(t, c, base, `LIST (round ${round})`) as { kind: string; items: Array<Record<string, unknown>> };
    t.equal(list.kind, 'ConfigMapList');
    t.equal(list.items.length, 7);
    t.notOk('kind' in list.items[0]!, 'list items carry no kind');
  }
  await sameAsGeneral(t, c, `${base}?labelSelector=even%3Dtrue`, 'LIST with a label selector');
  await sameAsGeneral(t, c, `${base}?fieldSelector=metadata.name%3Dcm5`, 'LIST pinned to one name');
  const pinned = (await c.request('GET', `${base}?fieldSelector=metadata.name%3Dcm5`)).json;
  t.same(pinned.items.map((o: { metadata: { name: string } }) => o.metadata.name), ['cm5']);
  t.same((await c.request('GET', `${base}?fieldSelector=metadata.name%3Dcm5,metadata.namespace%3Dother`)).json.items, [], 'the rest of the selector still applies');
  await sameAsGeneral(t, c, `${base}?resourceVersion=0`, 'LIST resourceVersion=0');

  // Pages: the fast path keeps continue tokens and remainingItemCount.
  const p1 = await sameAsGeneral(t, c, `${base}?limit=3`, 'first page') as { metadata: { continue: string; remainingItemCount: number }; items: unknown[] };
  t.equal(p1.items.length, 3);
  t.equal(p1.metadata.remainingItemCount, 4);
  const p2 = (await c.request('GET', `${base}?limit=3&continue=${encodeURIComponent(p1.metadata.continue)}`)).json;
  t.same(p2.items.map((o: { metadata: { name: string } }) => o.metadata.name), ['cm3', 'cm4', 'cm5']);

  // Fresh after a change: the remembered bytes belong to the old entry.
  const before = (await c.request('GET', `${base}/cm3`)).json;
  const upd = await c.request('PUT', `${base}/cm3`, { body: { ...before, data: { i: 'three' } } });
  t.equal(upd.status, 200);
  const after = await sameAsGeneral(t, c, `${base}/cm3`, 'GET after an update') as { data: Record<string, string>; metadata: { resourceVersion: string } };
  t.same(after.data, { i: 'three' });
  t.equal(after.metadata.resourceVersion, upd.json.metadata.resourceVersion);
  const listed = (await c.request('GET', base)).json;
  t.same(listed.items.find((o: { metadata: { name: string } }) => o.metadata.name === 'cm3').data, { i: 'three' }, 'LIST sees the update');
  t.equal((await c.request('DELETE', `${base}/cm3`)).status, 200);
  const gone = await c.request('GET', `${base}/cm3`);
  t.equal(gone.status, 404);
  t.match(gone.json, { kind: 'Status', reason: 'NotFound', message: 'configmaps "cm3" not found', details: { name: 'cm3', kind: 'configmaps' } });
  t.equal((await c.request('GET', base)).json.items.length, 6, 'LIST after a delete');

  // resourceVersion semantics of GET.
  const rv = Number(after.metadata.resourceVersion);
  t.equal((await c.request('GET', `${base}/cm4?resourceVersion=0`)).status, 200);
  t.equal((await c.request('GET', `${base}/cm4?resourceVersion=${rv}`)).status, 200, 'not older than a past version');
  const future = await c.request('GET', `${base}/cm4?resourceVersion=${rv + 100000}`);
  t.equal(future.status, 504, 'a future resourceVersion times out');
  t.match(future.json, { reason: 'Timeout', message: /^Timeout: Too large resource version/ });
  t.equal((await c.request('GET', `${base}/cm4?resourceVersion=abc`)).status, 400);

  // Protobuf: the general path ignores pretty for protobuf, so ?pretty=true gives its bytes.
  const PB = 'application/vnd.kubernetes.protobuf';
  for (const path of [`${base}/cm4`, base, `${base}?limit=2`, `${base}?labelSelector=even%3Dtrue`, `${base}?fieldSelector=metadata.name%3Dcm6`, `${base}?fieldSelector=metadata.name%3Dnone`]) {
    for (let round = 0; round < 2; round++) {
      const fast = await c.request('GET', path, { accept: PB });
      const general = await c.request('GET', `${path}${path.includes('?') ? '&' : '?'}pretty=true`, { accept: PB });
      t.equal(fast.status, 200);
      t.equal(fast.headers['content-type'], PB, `protobuf ${path}`);
      t.ok(fast.body.equals(general.body), `protobuf ${path} (round ${round}): same bytes as the general path`);
    }
  }
  t.equal((await c.request('GET', `${base}/cm3`, { accept: PB })).status, 404, 'protobuf GET of a missing object');

  // Other forms keep the general path and still agree with it.
  const table = await c.request('GET', `${base}/cm4`, { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' });
  t.match(table.json, { kind: 'Table', rows: [{ object: { metadata: { name: 'cm4' } } }] });
  const yaml = await c.request('GET', `${base}/cm4`, { accept: 'application/yaml' });
  t.match(yaml.body.toString(), /name: cm4/);
});

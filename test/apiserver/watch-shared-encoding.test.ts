import t from 'tap';
import { WebSocket } from 'ws';
import { readFile } from 'node:fs/promises';
import { startApiserver } from '../helpers/apiserver.js';
import { connectClient } from '../helpers/rest-client.js';

// Watch events are serialized once per encoding and shared by watchers; watchers that ask for
// different encodings of the same event must still each get their own form.
t.test('concurrent watchers of one event get the encoding each asked for', async (t) => {
  const a = await startApiserver({});
  const c = await connectClient(a);
  t.teardown(async () => { c.close(); await a.stop(); });
  t.equal((await c.request('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'enc' } } })).status, 201);
  const rv = (await c.request('GET', '/api/v1/namespaces/enc/configmaps')).json.metadata.resourceVersion as string;
  const path = `/api/v1/namespaces/enc/configmaps?watch=true&resourceVersion=${rv}&timeoutSeconds=20`;
  const plain1 = c.stream(path);
  const plain2 = c.stream(path);
  // A label selector makes a watcher's events its own (entering and leaving the filter), so it
  // takes the unshared path in the fan-out; the bytes of an event are still the same.
  const selected = c.stream(`${path}&labelSelector=app%3Dshared`);
  const partial = c.stream(path, 'application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io');
  const table = c.stream(path, 'application/json;as=Table;v=v1;g=meta.k8s.io');
  const tableNone = c.stream(`${path}&includeObject=None`, 'application/json;as=Table;v=v1;g=meta.k8s.io');
  for (const s of [plain1, plain2, selected, partial, table, tableNone]) t.equal(await s.status(), 200);

  const [ca, cert, key] = await Promise.all([readFile(a.caFile), readFile(a.clientCertFile), readFile(a.clientKeyFile)]);
  const ws = new WebSocket(a.url.replace('https://', 'wss://') + path, { ca, cert, key });
  t.teardown(() => ws.close());
  const wsMessage = new Promise<{ text: string; binary: boolean }>((resolve, reject) => {
    ws.once('message', (m, isBinary) => resolve({ text: m.toString(), binary: isBinary }));
    ws.on('error', reject);
  });
  await new Promise<void>((resolve, reject) => { ws.once('open', () => resolve()); ws.once('error', reject); });

  const created = await c.request('POST', '/api/v1/namespaces/enc/configmaps', { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'shared', labels: { app: 'shared' } }, data: { k: 'v' } } });
  t.equal(created.status, 201);

  const line1 = (await plain1.next())!;
  const line2 = (await plain2.next())!;
  t.equal(line2, line1, 'two plain JSON watchers get the same bytes');
  t.equal((await selected.next())!, line1, 'so does a watcher with a label selector');
  const ev = JSON.parse(line1);
  t.match(ev, { type: 'ADDED', object: { kind: 'ConfigMap', apiVersion: 'v1', metadata: { name: 'shared' }, data: { k: 'v' } } });

  const pm = JSON.parse((await partial.next())!);
  t.match(pm, { type: 'ADDED', object: { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: { name: 'shared' } } });
  t.notOk('data' in pm.object, 'metadata only');

  const tb = JSON.parse((await table.next())!);
  t.match(tb, { type: 'ADDED', object: { kind: 'Table', apiVersion: 'meta.k8s.io/v1' } });
  t.equal(tb.object.rows.length, 1);
  t.match(tb.object.rows[0].object, { kind: 'PartialObjectMetadata', metadata: { name: 'shared' } }, 'includeObject defaults to Metadata');
  const tn = JSON.parse((await tableNone.next())!);
  t.match(tn, { type: 'ADDED', object: { kind: 'Table' } });
  t.notOk(tn.object.rows[0].object, 'includeObject=None has no object');

  const m = await wsMessage;
  t.equal(m.binary, false, 'a text message');
  t.equal(m.text, line1.trimEnd(), 'the WebSocket message is the JSON line without its newline');
  for (const s of [plain1, plain2, selected, partial, table, tableNone]) s.close();
});

// The audit webhook backend of a full API server, batch mode, against a local HTTPS receiver
// that checks the API server's client certificate: EventList batches; a receiver failing with
// 503 and recovering loses nothing (exponential retries); a receiver that stalls lets events
// gather in the buffer, the ones beyond it are dropped and counted
// (apiserver_audit_error_total{plugin="buffered"}) while requests keep being answered, and
// everything within the buffer arrives once it answers again.
import * as https from 'node:https';
import type { AddressInfo } from 'node:net';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { createCA, issueCert } from '../../src/util/pki.js';
import { h2request, startApiserver } from '../helpers/apiserver.js';
import { waitFor } from '../helpers/wait-for.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;

const dir = await mkdtemp(join(tmpdir(), 'audit-webhook-'));
const ca = await createCA({ commonName: 'audit-receiver-ca' });
const serving = await issueCert({ ca, commonName: 'receiver', ips: ['127.0.0.1'], usages: 'server' });
const client = await issueCert({ ca, commonName: 'apiserver-audit', usages: 'client' });

let mode: 'ok' | { fail: number } | 'stall' = 'ok';
const stalled: Array<() => void> = [];
const received: Any[] = [];
const calls: { status: number; peer: string | undefined }[] = [];
const receiver = https.createServer({ cert: serving.certPem, key: serving.keyPem, ca: ca.certPem, requestCert: true, rejectUnauthorized: true }, (req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const peer = String((req.socket as import('node:tls').TLSSocket).getPeerCertificate().subject?.CN ?? '');
    const answer = (): void => {
      if (typeof mode === 'object' && mode.fail > 0) {
        mode.fail--;
        calls.push({ status: 503, peer });
        res.writeHead(503).end('down for a moment');
        return;
      }
      calls.push({ status: 200, peer });
      received.push(JSON.parse(Buffer.concat(chunks).toString()));
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    };
    if (mode === 'stall') stalled.push(answer); else answer();
  });
});
await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
const port = (receiver.address() as AddressInfo).port;
const b64 = (s: string): string => Buffer.from(s).toString('base64');
await writeFile(join(dir, 'webhook.yaml'), [
  'apiVersion: v1', 'kind: Config', 'current-context: audit',
  'clusters:', '- name: receiver', '  cluster:', `    server: https://127.0.0.1:${port}/audit`, `    certificate-authority-data: ${b64(ca.certPem)}`,
  'users:', '- name: apiserver', '  user:', `    client-certificate-data: ${b64(client.certPem)}`, `    client-key-data: ${b64(client.keyPem)}`,
  'contexts:', '- name: audit', '  context:', '    cluster: receiver', '    user: apiserver', '',
].join('\n'));
await writeFile(join(dir, 'policy.yaml'), [
  'apiVersion: audit.k8s.io/v1', 'kind: Policy', 'omitStages: [RequestReceived]', 'rules:',
  '- level: Metadata', '  namespaces: [wh]', '  verbs: [list]', '- level: None', '',
].join('\n'));

const api = await startApiserver({
  args: [
    `--audit-policy-file=${join(dir, 'policy.yaml')}`, `--audit-webhook-config-file=${join(dir, 'webhook.yaml')}`,
    '--audit-webhook-batch-buffer-size=20', '--audit-webhook-batch-max-size=5', '--audit-webhook-batch-max-wait=100ms',
    '--audit-webhook-initial-backoff=100ms', '--audit-webhook-batch-throttle-enable=false',
  ],
});
t.teardown(async () => {
  for (const a of stalled.splice(0)) a();
  await api.stop();
  receiver.closeAllConnections();
  receiver.close();
  await rm(dir, { recursive: true, force: true });
});
const admin = { ca: await readFile(api.caFile), cert: await readFile(api.clientCertFile), key: await readFile(api.clientKeyFile) };
const list = async (): Promise<string> => {
  const r = await h2request(api.url, { ...admin, path: '/api/v1/namespaces/wh/configmaps' });
  if (r.status !== 200) throw new Error(`list: ${r.status} ${r.body}`);
  return r.headers['audit-id'] as string;
};
const delivered = (): string[] => received.flatMap((l) => l.items.map((e: Any) => e.auditID));
const metric = async (): Promise<number> => {
  const m = await h2request(api.url, { ...admin, path: '/metrics' });
  return Number(/^apiserver_audit_error_total\{plugin="buffered"\} (\d+)$/m.exec(m.body)?.[1] ?? 0);
};

t.test('EventList batches to the receiver, with the client certificate', async (t) => {
  const ids = [await list(), await list()];
  await waitFor('two events delivered', () => ids.every((id) => delivered().includes(id)));
  const first = received[0];
  t.equal(first.kind, 'EventList');
  t.equal(first.apiVersion, 'audit.k8s.io/v1');
  t.equal(first.items[0].kind, 'Event');
  t.equal(first.items[0].stage, 'ResponseComplete');
  t.equal(first.items[0].verb, 'list');
  t.equal(calls[0]!.peer, 'apiserver-audit');
});

t.test('a receiver failing with 503 and recovering loses nothing', async (t) => {
  received.length = 0;
  calls.length = 0;
  mode = { fail: 3 };
  const ids: string[] = [];
  for (let i = 0; i < 12; i++) ids.push(await list());
  await waitFor('all 12 delivered', () => ids.every((id) => delivered().includes(id)));
  t.equal(calls.filter((c) => c.status === 503).length, 3, 'three failed calls, retried');
  t.same([...new Set(delivered())].sort(), [...ids].sort(), 'each event once');
  t.equal(delivered().length, ids.length, 'no duplicates');
  t.equal(await metric(), 0, 'nothing dropped');
  const m = await h2request(api.url, { ...admin, path: '/metrics' });
  t.ok(Number(/^apiserver_audit_event_total (\d+)$/m.exec(m.body)?.[1]) >= 14, 'apiserver_audit_event_total counts the events');
});

t.test('a stalled receiver: the buffer fills, the rest is dropped and counted; requests go on', async (t) => {
  received.length = 0;
  mode = 'stall';
  const ids: string[] = [];
  ids.push(await list());
  await waitFor('the first batch is in flight', () => stalled.length === 1);
  for (let i = 0; i < 30; i++) ids.push(await list());
  t.equal(await metric(), 10, 'one in flight, 20 buffered, 10 dropped and counted');
  mode = 'ok';
  for (const a of stalled.splice(0)) a();
  await waitFor('the buffered events delivered', () => delivered().length === 21);
  t.same(delivered(), ids.slice(0, 21), 'the in-flight one and the whole buffer, in order');
});

t.test('blocking mode: the answer waits for the receiver, retries included', async (t) => {
  const blocking = await startApiserver({
    args: [
      `--audit-policy-file=${join(dir, 'policy.yaml')}`, `--audit-webhook-config-file=${join(dir, 'webhook.yaml')}`,
      '--audit-webhook-mode=blocking', '--audit-webhook-initial-backoff=50ms',
    ],
  });
  t.teardown(() => blocking.stop());
  const tls = { ca: await readFile(blocking.caFile), cert: await readFile(blocking.clientCertFile), key: await readFile(blocking.clientKeyFile) };
  received.length = 0;
  calls.length = 0;
  mode = { fail: 2 };
  const r = await h2request(blocking.url, { ...tls, path: '/api/v1/namespaces/wh/configmaps' });
  t.equal(r.status, 200);
  t.same(delivered(), [r.headers['audit-id']], 'delivered before the answer came back');
  t.equal(received[0].items.length, 1, 'one event per call');
  t.same(calls.map((c) => c.status), [503, 503, 200]);
});

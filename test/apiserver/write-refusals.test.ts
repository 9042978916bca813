// Writes Kubernetes refuses, refused with its codes and words: mutated protobuf bodies (always
// 400 BadRequest, never a 500), a create that sets metadata.resourceVersion (storage's
// ErrResourceVersionSetOnCreate), and Endpoints addresses in the special ranges (ValidateEndpoints).
import t from 'tap';
import { encodeProtobuf, PROTOBUF_MEDIA_TYPE } from '../../src/api/codec/protobuf.js';
import { startApiserver } from '../helpers/apiserver.js';
import { connectClient } from '../helpers/rest-client.js';

const a = await startApiserver();
const c = await connectClient(a);
t.teardown(async () => { c.close(); await a.stop(); });
const CM = '/api/v1/namespaces/default/configmaps';

t.test('mutated protobuf bodies are 400 BadRequest in Kubernetes words, never 5xx', async (t) => {
  const good = encodeProtobuf({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'pb', labels: { a: 'b' } }, data: { k: 'v' } });
  const send = (raw: Buffer): ReturnType<typeof c.request> => c.request('POST', CM, { raw, contentType: PROTOBUF_MEDIA_TYPE });

  // A tag with field number 0 inside the ConfigMap message (after the envelope's raw header).
  const rawAt = good.indexOf(Buffer.from([0x12]), 4 + 2 + good[5]!) + 2;
  const zeroTag = Buffer.from(good);
  zeroTag[rawAt] = 0x00;
  const r0 = await send(zeroTag);
  t.equal(r0.status, 400, r0.body.toString());
  t.match(r0.json, { kind: 'Status', status: 'Failure', reason: 'BadRequest', code: 400 });
  t.match(r0.json.message, /^ConfigMap in version "v1" cannot be handled as a ConfigMap: /, 'the inner message fails as Kubernetes words it');

  const noMagic = await send(Buffer.from('{"kind":"ConfigMap"}'));
  t.equal(noMagic.status, 400);
  t.equal(noMagic.json.message, 'the object provided is unrecognized (must be of type ConfigMap): provided data does not appear to be a protobuf message, expected prefix [107 56 115 0] ({"kind":"ConfigMap"})');
  const empty = await send(Buffer.from('k8s\0'));
  t.equal(empty.status, 400);
  t.match(empty.json.message, /^the object provided is unrecognized \(must be of type ConfigMap\): empty body \(6b387300\)$/);
  const badEnvelope = await send(Buffer.from('k8s\0\x0a\x05garbage'));
  t.equal(badEnvelope.status, 400);
  t.match(badEnvelope.json.message, /^the object provided is unrecognized \(must be of type ConfigMap\): /);

  const del = await c.request('DELETE', `${CM}/whatever`, { raw: Buffer.from('k8s\0\x0a\x05garbage'), contentType: PROTOBUF_MEDIA_TYPE });
  t.equal(del.status, 400, 'a bad protobuf DeleteOptions too');
  t.match(del.json.message, /^the object provided is unrecognized \(must be of type DeleteOptions\): /);

  // Every byte set to a few values: whatever the answer, it is not a 5xx and an error is a Status.
  let fiveHundreds = 0, nonStatus = 0, sent = 0;
  for (let i = 4; i < good.length; i++) {
    for (const v of [0x00, 0x03, 0x07, 0x0b, 0x0c, 0x0f, 0x80, 0xff]) {
      if (good[i] === v) continue;
      const m = Buffer.from(good);
      m[i] = v;
      const r = await send(m);
      sent++;
      if (r.status >= 500) { fiveHundreds++; t.comment(`byte ${i} = ${v}: ${r.status} ${r.body.toString()}`); }
      if (r.status >= 400 && r.json?.kind !== 'Status') nonStatus++;
      if (r.status === 201) await c.request('DELETE', `${CM}/${r.json.metadata.name}`);
    }
  }
  const truncations = await Promise.all(Array.from({ length: good.length - 5 }, (_, n) => send(good.subarray(0, n + 5))));
  fiveHundreds += truncations.filter((r) => r.status >= 500).length;
  t.ok(sent > 100, `${sent} mutated bodies sent`);
  t.equal(fiveHundreds, 0, 'no 5xx');
  t.equal(nonStatus, 0, 'every error is a Status');
});

t.test('a create that sets metadata.resourceVersion is refused as Kubernetes storage refuses it', async (t) => {
  const cm = (name: string, rv: string): Record<string, unknown> => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, resourceVersion: rv } });
  const r = await c.request('POST', CM, { body: cm('rv-set', '5') });
  t.equal(r.status, 500);
  t.same(r.json, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'resourceVersion should not be set on objects to be created', code: 500 }, 'no reason, as Kubernetes answers a plain storage error');
  t.equal((await c.request('GET', `${CM}/rv-set`)).status, 404, 'nothing stored');
  for (const [name, rv] of [['rv-zero', '0'], ['rv-negative', '-1'], ['rv-text', 'abc']]) {
    const ok = await c.request('POST', CM, { body: cm(name!, rv!) });
    t.equal(ok.status, 201, `resourceVersion ${JSON.stringify(rv)} does not parse as a version other than 0: ignored`);
    t.not(ok.json.metadata.resourceVersion, rv, 'and replaced');
  }
  const dry = await c.request('POST', `${CM}?dryRun=All`, { body: cm('rv-dry', '5') });
  t.equal(dry.status, 201, 'a dry run never reaches storage, which is where Kubernetes refuses it');
  const invalid = await c.request('POST', CM, { body: { ...cm('Not_A_Name', '5') } });
  t.equal(invalid.status, 422, 'validation comes first');
});

t.test('Endpoints refuse unspecified, loopback and link-local addresses', async (t) => {
  const ep = (name: string, subset: Record<string, unknown>): Record<string, unknown> => ({ apiVersion: 'v1', kind: 'Endpoints', metadata: { name }, subsets: [{ ports: [{ port: 80 }], ...subset }] });
  const EP = '/api/v1/namespaces/default/endpoints';
  const cases: [string, Record<string, unknown>, string, string][] = [
    ['loop4', { addresses: [{ ip: '127.0.0.1' }] }, 'subsets[0].addresses[0].ip', 'Invalid value: "127.0.0.1": may not be in the loopback range (127.0.0.0/8, ::1/128)'],
    ['loop6', { notReadyAddresses: [{ ip: '::1' }] }, 'subsets[0].notReadyAddresses[0].ip', 'Invalid value: "::1": may not be in the loopback range (127.0.0.0/8, ::1/128)'],
    ['unspec', { addresses: [{ ip: '10.0.0.1' }, { ip: '0.0.0.0' }] }, 'subsets[0].addresses[1].ip', 'Invalid value: "0.0.0.0": may not be unspecified (0.0.0.0)'],
    ['linklocal', { addresses: [{ ip: '169.254.169.254' }] }, 'subsets[0].addresses[0].ip', 'Invalid value: "169.254.169.254": may not be in the link-local range (169.254.0.0/16, fe80::/10)'],
    ['llmulticast', { addresses: [{ ip: '224.0.0.1' }] }, 'subsets[0].addresses[0].ip', 'Invalid value: "224.0.0.1": may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)'],
    ['notip', { addresses: [{ ip: 'not-an-ip' }] }, 'subsets[0].addresses[0].ip', 'Invalid value: "not-an-ip": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)'],
  ];
  for (const [name, subset, field, message] of cases) {
    const r = await c.request('POST', EP, { body: ep(name, subset) });
    t.equal(r.status, 422, `${name}: ${r.body.toString()}`);
    t.match(r.json, { reason: 'Invalid', details: { kind: 'Endpoints', causes: [{ reason: 'FieldValueInvalid', field, message }] } }, name);
    t.equal(r.json.message, `Endpoints "${name}" is invalid: ${field}: ${message}`);
  }
  const ok = await c.request('POST', EP, { body: ep('fine', { addresses: [{ ip: '10.1.2.3' }, { ip: '2001:db8::1' }] }) });
  t.equal(ok.status, 201, ok.body.toString());
  const upd = await c.request('PATCH', `${EP}/fine`, { raw: JSON.stringify({ subsets: [{ addresses: [{ ip: '127.0.0.2' }], ports: [{ port: 80 }] }] }), contentType: 'application/merge-patch+json' });
  t.equal(upd.status, 422, 'an update to a loopback address is refused too');
});

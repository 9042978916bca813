import t from 'tap';
import { decodeBody } from '../../src/api/codec/body.js';
import { decodeJson, encodeJson } from '../../src/api/codec/json.js';
import { decodeProtobuf, encodeProtobuf } from '../../src/api/codec/protobuf.js';
import { decodeWatchStream, encodeWatchEventJson, encodeWatchEventProtobuf, WatchFrameDecoder } from '../../src/api/codec/watch-frame.js';
import { decodeYaml, encodeYaml } from '../../src/api/codec/yaml.js';
import { ApiError, isApiError } from '../../src/api/meta/status.js';

function codeOf(fn: () => unknown): number | string {
  try { fn(); return 'no error'; } catch (e) { return isApiError(e) ? e.code : String(e); }
}

t.test('JSON and YAML bodies', async (t) => {
  t.same(decodeJson(encodeJson({ a: [1, 'x'] })), { a: [1, 'x'] });
  t.equal(codeOf(() => decodeJson(Buffer.from('{"a":'))), 400, 'malformed JSON is a 400');
  t.equal(codeOf(() => decodeJson(Buffer.from('['.repeat(20000) + ']'.repeat(20000)))), 400, 'deep nesting is a 400');
  t.same(decodeYaml(Buffer.from('a: 1\nb: [x, "2026-01-02T03:04:05Z"]\n')), { a: 1, b: ['x', '2026-01-02T03:04:05Z'] }, 'no timestamps become Dates');
  t.same(decodeYaml(Buffer.from('mode: 0644\nhostNetwork: yes\nbase: &b {k: 1}\nmerged:\n  <<: *b\n  j: 2\n')),
    { mode: 420, hostNetwork: true, base: { k: 1 }, merged: { k: 1, j: 2 } }, 'YAML 1.1 scalars and merge keys, as Go reads them');
  t.equal(decodeYaml(Buffer.from('---\n')), null, 'an empty document');
  t.equal(encodeYaml({ v: 'yes', l: ['a'], t: '2026-01-02T03:04:05Z' }).toString(), 'l:\n- a\nt: "2026-01-02T03:04:05Z"\nv: "yes"\n', 'as Go\'s YAML: keys sorted, list items at the key\'s indent, strings YAML 1.1 would read otherwise double-quoted');
  t.equal(codeOf(() => decodeYaml(Buffer.from('a: 1\n---\nb: 2\n'))), 400, 'multi-document YAML is a 400');
  t.equal(codeOf(() => decodeYaml(Buffer.from('a: [1\n'))), 400, 'malformed YAML is a 400');
  const bomb = ['a: &a ["x","x","x","x","x","x","x","x","x","x"]'];
  for (let i = 1; i < 9; i++) bomb.push(`${String.fromCharCode(97 + i)}: &${String.fromCharCode(97 + i)} [${Array(10).fill('*' + String.fromCharCode(96 + i)).join(',')}]`);
  t.equal(codeOf(() => decodeYaml(Buffer.from(bomb.join('\n')))), 400, 'an alias bomb is refused');
  t.same(decodeYaml(encodeYaml({ k: 'v', n: [1, 2] })), { k: 'v', n: [1, 2] });
});

t.test('bodies by content type', async (t) => {
  t.same(decodeBody(undefined, Buffer.from('{"a":1}')), { a: 1 });
  t.same(decodeBody('application/json; charset=utf-8', Buffer.from('{"a":1}')), { a: 1 });
  t.same(decodeBody('application/yaml', Buffer.from('a: 1')), { a: 1 });
  t.equal(decodeBody('application/json', Buffer.alloc(0)), undefined);
  const pb = encodeProtobuf({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' }, data: { k: 'v' } });
  t.same(decodeBody('application/vnd.kubernetes.protobuf', pb), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' }, data: { k: 'v' } });
  t.equal(codeOf(() => decodeBody('text/plain', Buffer.from('x'))), 415);
});

t.test('protobuf envelope and Go writing rules', async (t) => {
  const pod = encodeProtobuf({ apiVersion: 'v1', kind: 'Pod', metadata: {} });
  t.same([...pod.subarray(0, 4)], [0x6b, 0x38, 0x73, 0x00], 'k8s\\0 magic');
  t.same([...pod.subarray(4, 15)], [0x0a, 0x09, 0x0a, 0x02, 0x76, 0x31, 0x12, 0x03, 0x50, 0x6f, 0x64], 'typeMeta v1/Pod');
  t.same([...pod.subarray(pod.length - 4)], [0x1a, 0x00, 0x22, 0x00], 'empty contentEncoding and contentType');
  t.same(decodeProtobuf(pod), { apiVersion: 'v1', kind: 'Pod', metadata: {}, spec: {}, status: {} }, 'zero values read back as absent');
  // The SelfSubjectAccessReview kubectl 1.32 sends for `auth can-i get pods -n default`.
  const ssar = { apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview', metadata: {},
    spec: { resourceAttributes: { namespace: 'default', verb: 'get', resource: 'pods' } }, status: { allowed: false } };
  const bytes = encodeProtobuf(ssar);
  t.equal(bytes.length, 122, 'same size as the body kubectl sends');
  t.same(decodeProtobuf(bytes).spec, { resourceAttributes: { namespace: 'default', verb: 'get', resource: 'pods' } });
  t.same(decodeProtobuf(bytes).status, { allowed: false }, 'a zero that Go always writes to JSON (no omitempty) is kept');
  const d0 = decodeProtobuf(encodeProtobuf({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd' }, spec: { replicas: 0 } }));
  t.equal((d0.spec as { replicas?: number }).replicas, 0, 'an optional zero survives');
  const d1 = decodeProtobuf(encodeProtobuf({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd' }, spec: {} }));
  t.notOk('replicas' in (d1.spec as object), 'an absent optional stays absent');
  const unknown = decodeProtobuf(encodeProtobuf({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, notAField: 1 } as never));
  t.notOk('notAField' in unknown, 'fields the schema does not declare are not written');
  t.equal(codeOf(() => encodeProtobuf({ apiVersion: 'meta.k8s.io/v1', kind: 'Table' })), 406, 'Table has no protobuf form');
  t.equal(codeOf(() => encodeProtobuf({ apiVersion: 'example.com/v1', kind: 'Widget' })), 406, 'custom kinds have none either');
  const status = new ApiError(404, 'NotFound', 'pods "x" not found', { name: 'x', kind: 'pods' }).status;
  t.same(decodeProtobuf(encodeProtobuf(status as never)), { ...status, metadata: {} }, 'Status round-trips');
  t.equal(codeOf(() => decodeProtobuf(Buffer.from('k8s\0\x0a\x05garbage'))), 400, 'malformed envelope is a 400');
  t.equal(codeOf(() => decodeProtobuf(Buffer.from('{"kind":"Pod"}'))), 400, 'missing magic is a 400');
  const list = { apiVersion: 'v1', kind: 'PodList', metadata: { resourceVersion: '7' },
    items: [{ metadata: { name: 'a', creationTimestamp: '2026-01-02T03:04:05Z' }, spec: { containers: [{ name: 'c', image: 'i' }] }, status: { phase: 'Running' } }] };
  const back = decodeProtobuf(encodeProtobuf(list));
  t.same((back.items as unknown[])[0], { metadata: { name: 'a', creationTimestamp: '2026-01-02T03:04:05Z' },
    spec: { containers: [{ name: 'c', image: 'i', resources: {} }] }, status: { phase: 'Running' } }, 'list items are bare messages');
});

t.test('watch framing', async (t) => {
  const obj = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', resourceVersion: '5' }, data: { a: 'b' } };
  const f1 = encodeWatchEventProtobuf('ADDED', obj);
  const f2 = encodeWatchEventProtobuf('DELETED', obj);
  t.equal(f1.readUInt32BE(0), f1.length - 4, 'big-endian length prefix');
  const all = Buffer.concat([f1, f2]);
  const d = new WatchFrameDecoder();
  const events = [];
  for (let i = 0; i < all.length; i += 7) events.push(...d.push(all.subarray(i, i + 7)));
  t.same(events.map((e) => e.type), ['ADDED', 'DELETED']);
  t.same(events[0].object, obj);
  t.ok(d.idle);
  async function* chunks() { yield all.subarray(0, 3); yield all.subarray(3); }
  const got = [];
  for await (const e of decodeWatchStream(chunks())) got.push(e.type);
  t.same(got, ['ADDED', 'DELETED']);
  t.equal(encodeWatchEventJson('MODIFIED', obj).toString(), `${JSON.stringify({ type: 'MODIFIED', object: obj })}\n`);
});

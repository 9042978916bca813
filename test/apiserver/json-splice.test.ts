import t from 'tap';
import { scanStored, spliceServed, splicePlan, splicedLength, writeSpliced } from '../../src/daemons/apiserver/rest/json-splice.js';

// The splice must equal what decoding and re-serializing gives, for any object the JSON codec
// can have written; anything outside that canonical form is refused (the caller decodes).
type Obj = Record<string, unknown>;

const BEFORE_RV = new Set(['name', 'generateName', 'namespace', 'selfLink', 'uid']);

/**
 * What the general path serves: metadata.resourceVersion set where ObjectMeta declares it
 * (after uid, before the rest), kind/apiVersion dropped, optional head.
 */
function general(stored: Obj, rv: number, head?: { kind: string; apiVersion: string }): string {
  const o = JSON.parse(JSON.stringify(stored)) as Obj;
  const meta: Obj = {};
  let placed = false;
  for (const [k, v] of Object.entries(o['metadata'] as Obj)) {
    if (!placed && !BEFORE_RV.has(k)) { meta['resourceVersion'] = String(rv); placed = true; }
    meta[k] = v;
  }
  if (!placed) meta['resourceVersion'] = String(rv);
  o['metadata'] = meta;
  const { kind: _k, apiVersion: _a, ...rest } = o;
  void _k; void _a;
  return JSON.stringify(head ? { ...head, ...rest } : rest);
}

const tricky: Obj[] = [
  { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a', namespace: 'ns' }, data: { k: 'v' } },
  { metadata: {}, kind: 'X', spec: { a: [1, 2.5, -3e-7, true, false, null, { b: '}' }], s: '"quoted" {brace} [bracket] \\ back' } },
  { kind: 'Pod', metadata: { name: 'ü✓', labels: { 'a/b': 'c"d' }, annotations: { x: '\n\t\u0001' } }, apiVersion: 'v1', status: {} },
  { metadata: { name: 'n', finalizers: [] }, data: { empty: '', nested: { deep: [[[]], [{}]] } } },
  { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: { a: 1 }, status: { phase: 'Running' }, extra: [1], more: 'x' },
  { a: 1, b: { c: 2 }, metadata: { name: 'q' }, c: 3, kind: 'K', d: [4], e: 'five' },
  { apiVersion: 'v1', metadata: { name: 'm2' }, kind: 'K', spec: {} },
  { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'd', uid: 'u', creationTimestamp: '2026-01-01T00:00:00Z', labels: { a: 'b' } }, spec: {} },
  { apiVersion: 'v1', kind: 'Pod', metadata: { generation: 2, name: 'late' }, spec: {} },
  { kind: 'Pod', metadata: { creationTimestamp: null }, apiVersion: 'v1' },
  { apiVersion: 'apps/v1', metadata: { name: 'm', ownerReferences: [{ apiVersion: 'v1', kind: 'K', name: 'o', uid: 'u', controller: true }] }, spec: { replicas: 0 } },
];

t.test('splice equals decode + stringify', async (t) => {
  for (const o of tricky) {
    const bytes = Buffer.from(JSON.stringify(o), 'utf8');
    const s = scanStored(bytes);
    t.ok(s, `scans ${JSON.stringify(o).slice(0, 40)}`);
    if (!s) continue;
    // A whole body ends with the newline Kubernetes' encoder writes.
    t.equal(spliceServed(s, 42).toString('utf8'), general(o, 42) + '\n', 'list item form');
    const head = { kind: 'Thing', apiVersion: 'g/v9' };
    t.equal(spliceServed(s, 7, Buffer.from(`"kind":"Thing","apiVersion":"g/v9"`)).toString('utf8'), general(o, 7, head) + '\n', 'object form');
    t.equal(s.apiVersion, o['apiVersion'] as string | undefined, 'the stored apiVersion');
  }
});

t.test('anything but the canonical stored form is refused', async (t) => {
  const refuse = (text: string, why: string): void => { t.equal(scanStored(Buffer.from(text)), undefined, why); };
  refuse('{"kind":"X","spec":{}}', 'no metadata');
  refuse('{"metadata":"x"}', 'metadata not an object');
  refuse('{"metadata":{"resourceVersion":"3"}}', 'a stored resourceVersion');
  refuse('{ "metadata":{}}', 'whitespace');
  refuse('{"metadata":{},"a":1 }', 'whitespace after a number');
  refuse('{"metadata":{}', 'truncated');
  refuse('{"metadata":{}}x', 'trailing bytes');
  refuse('{"apiVersion":1,"metadata":{}}', 'a non-string apiVersion');
  refuse('[1]', 'not an object');
  refuse('{"metadata":{"a":"unterminated}}', 'unterminated string');
});

t.test('splice plans: the length computed up front is the length written, at any revision', async (t) => {
  for (const o of tricky) {
    const s = scanStored(Buffer.from(JSON.stringify(o), 'utf8'));
    if (!s) continue;
    const plan = splicePlan(s);
    for (const rv of [0, 1, 9, 10, 99, 100, 123_456_789, 2 ** 40, Number.MAX_SAFE_INTEGER]) {
      const out = Buffer.alloc(splicedLength(plan, rv) + 8, 0x23);
      const end = writeSpliced(plan, s.bytes, rv, out, 4);
      t.equal(end - 4, splicedLength(plan, rv), `length at ${rv}`);
      t.equal(out.subarray(4, end).toString('utf8'), general(o, rv), `bytes at ${rv}`);
      t.equal(out[3], 0x23, 'nothing written before');
      t.equal(out[end], 0x23, 'nothing written after');
    }
  }
});

t.test('members after kind, apiVersion and metadata are kept as stored, unscanned', async (t) => {
  // Once the three are seen the rest cannot hold them again (JSON.stringify writes a key once),
  // so the splice copies it whole: what it holds is not checked.
  const stored = '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"a":[1,{"b":"}"}]}, "status": {}}';
  const s = scanStored(Buffer.from(stored));
  t.ok(s, 'scanned');
  t.equal(spliceServed(s!, 5).toString(), '{"metadata":{"name":"p","resourceVersion":"5"},"spec":{"a":[1,{"b":"}"}]}, "status": {}}\n');
  t.equal(scanStored(Buffer.from('{"kind":"Pod","metadata":{"name":"p"}, "spec":{}}')), undefined, 'before all three are seen, whitespace still refuses');
  t.equal(scanStored(Buffer.from('{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":"x"')), undefined, 'not ending in a brace');
});

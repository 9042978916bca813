// The fast path of strict field validation: the raw text is only scanned key by key when it holds
// more keys than the decoded object (or unknown fields need ordering). Every finding of the full
// scan must still be reported: duplicates anywhere (nested, in lists, in maps, under escaped
// text, next to whitespace), with the same paths and messages as the full scan gives.
import t from 'tap';
import { checkFields, countJsonKeys, scanJsonKeys } from '../../src/api/codec/strict.js';
import { schema } from '../../src/api/schema/registry.js';

const pod = schema.forKind('', 'v1', 'Pod')!;
const configMap = schema.forKind('', 'v1', 'ConfigMap')!;

t.test('countJsonKeys counts keys, not value strings', async (t) => {
  t.equal(countJsonKeys('{}'), 0);
  t.equal(countJsonKeys('{"a":"b"}'), 1);
  t.equal(countJsonKeys('{"a" : "b:c", "d":["e","f"], "g":{"h":null}}'), 4);
  // Escaped quotes and backslashes inside strings, and a key spelled with escapes.
  t.equal(countJsonKeys('{"a\\"b":"x\\\\","c":"\\"d\\":1","e\\\\":"y"}'), 3);
  t.equal(countJsonKeys('{\n  "a"\n  :\t1,\r\n "b": [ {"c": true} ]\n}'), 3);
  t.equal(countJsonKeys('["a", "b", {"c": "d"}]'), 1);
  t.equal(countJsonKeys('{"__proto__": {"x": 1}}'), 2);
});

t.test('duplicates are found wherever they are, with the full scan\'s paths and wording', async (t) => {
  const bodies = [
    '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","name":"b"}}',
    '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","labels":{"x":"1","x":"2"}}}',
    '{"apiVersion":"v1","kind":"Pod","spec":{"containers":[{"name":"c","image":"i"},{"name":"d","image":"i","image":"j"}]}}',
    '{"apiVersion":"v1","kind":"Pod","kind":"Pod"}',
    '{"apiVersion":"v1","kind":"Pod","metadata":{"annotations":{"a\\"b":"\\"c\\":1","a\\"b":"2"}}}',
    '{ "apiVersion" : "v1" , "kind" : "Pod" , "metadata" : { "name" : "a" } , "metadata" : { "name" : "b" } }',
    // A duplicate inside an unknown field is reported once, as the unknown field.
    '{"apiVersion":"v1","kind":"Pod","spec":{"bogus":{"a":1,"a":2}}}',
    // Unknown fields alone (ordered by their place in the text).
    '{"apiVersion":"v1","kind":"Pod","zzz":1,"metadata":{"name":"a","yyy":2}}',
  ];
  for (const raw of bodies) {
    const obj = JSON.parse(raw) as unknown;
    const r = checkFields(obj, pod, schema, { rawJson: Buffer.from(raw) });
    t.ok(r.messages.length > 0, `findings for ${raw}`);
    // The full scan's duplicate paths (minus those under unknown fields) are what is reported.
    const full = scanJsonKeys(raw).duplicates.map((d) => d.path).filter((p) => !r.unknown.some((u) => p === u || p.startsWith(u + '.') || p.startsWith(u + '[')));
    t.same(r.duplicate, full, raw);
  }
  const dup = checkFields(JSON.parse(bodies[2]!), pod, schema, { rawJson: bodies[2]! });
  t.same(dup.messages, ['duplicate field "spec.containers[1].image"']);
  const order = checkFields(JSON.parse(bodies[7]!), pod, schema, { rawJson: bodies[7]! });
  t.same(order.messages, ['unknown field "zzz"', 'unknown field "metadata.yyy"']);
});

t.test('clean bodies report nothing, with or without raw text', async (t) => {
  const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'n', labels: { a: 'b' } }, data: { k: 'v:"x"', '__proto__': 'y' } };
  const raw = JSON.stringify(cm, null, 2);
  const obj = JSON.parse(raw) as unknown;
  t.same(checkFields(obj, configMap, schema, { rawJson: raw }), { unknown: [], duplicate: [], typeErrors: [], messages: [] });
  t.same(checkFields(obj, configMap, schema, {}), { unknown: [], duplicate: [], typeErrors: [], messages: [] });
  // Wrong types are still found when nothing else is.
  const bad = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: { k: 1 } };
  t.same(checkFields(bad, configMap, schema, { rawJson: JSON.stringify(bad) }).typeErrors.map((e) => e.field), ['data.k']);
});

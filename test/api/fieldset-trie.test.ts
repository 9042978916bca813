// FieldSet as a trie: set operations that share branches never let one set change another,
// FieldsV1 round trips keep Kubernetes' order, and the managed-fields entry points agree.
import t from 'tap';
import { FieldSet, pathToString } from '../../src/api/patch/fieldpath.js';
import { formatTime, managedFieldsAfterUpdate, updateManagedFields } from '../../src/api/patch/managed-fields.js';
import { messageForObject, schema } from '../../src/api/schema/registry.js';
import type { KubeObject } from '../../src/api/resources/types.js';

const keys = (s: FieldSet): string[] => s.paths().map((p) => p.join('/'));

t.test('insert after an operation never changes the operands or the result', async (t) => {
  const a = new FieldSet([['f:a'], ['f:b', 'f:c']]);
  const b = new FieldSet([['f:b', 'f:d']]);
  const u = a.union(b);
  u.insert(['f:b', 'f:e']);
  a.insert(['f:b', 'f:x']);
  b.insert(['f:b', 'f:y']);
  t.same(keys(u), ['f:a', 'f:b/f:c', 'f:b/f:d', 'f:b/f:e']);
  t.same(keys(a), ['f:a', 'f:b/f:c', 'f:b/f:x']);
  t.same(keys(b), ['f:b/f:d', 'f:b/f:y']);

  const d = a.difference(new FieldSet([['f:zzz']])); // nothing removed: shares all of `a`
  d.insert(['f:q']);
  t.notOk(a.has(['f:q']), 'difference result is its own set');
  t.ok(d.has(['f:b', 'f:x']));
  const e = new FieldSet().union(b);
  e.insert(['f:only-e']);
  t.notOk(b.has(['f:only-e']), 'union with an empty set is its own set too');
  t.equal(u.size, 4);
  t.equal(d.size, 4);
});

t.test('membership of inner nodes and empty branches', async (t) => {
  const s = new FieldSet([['f:spec'], ['f:spec', 'f:replicas']]);
  t.ok(s.has(['f:spec']));
  t.notOk(s.has([]));
  const only = s.difference(new FieldSet([['f:spec', 'f:replicas']]));
  t.same(keys(only), ['f:spec']);
  t.same(only.toFieldsV1(), { 'f:spec': {} });
  const none = s.difference(s);
  t.ok(none.isEmpty());
  t.equal(none.size, 0);
  t.notOk(none.hasSelfOrDescendant([]));
  t.ok(s.hasSelfOrDescendant([]));
  t.ok(s.equals(new FieldSet([['f:spec', 'f:replicas'], ['f:spec']])));
  t.notOk(s.equals(only));
  t.same(keys(s.intersection(new FieldSet([['f:spec', 'f:replicas'], ['f:status']]))), ['f:spec/f:replicas']);
  t.same(keys(s.withoutPrefixes([['f:spec', 'f:replicas']])), ['f:spec']);
  t.ok(s.withoutPrefixes([[]]).isEmpty());
});

t.test('FieldsV1 order: fields, keys, values, then indexes by number', async (t) => {
  const s = new FieldSet([['f:z'], ['i:10'], ['v:"b"'], ['k:{"a":1}'], ['i:9'], ['f:a', 'f:x'], ['f:a']]);
  t.same(Object.keys(s.toFieldsV1()), ['f:a', 'f:z', 'k:{"a":1}', 'v:"b"', 'i:9', 'i:10']);
  t.same(s.toFieldsV1()['f:a'], { '.': {}, 'f:x': {} });
  t.same(s.paths().map((p) => pathToString(p)), ['.a', '.a.x', '.z', '[a=1]', '[="b"]', '[9]', '[10]']);
  const back = FieldSet.fromFieldsV1(JSON.parse(JSON.stringify(s.toFieldsV1())));
  t.ok(back.equals(s));
  // A leaf written with an explicit "." decodes to the same member.
  t.ok(FieldSet.fromFieldsV1({ 'f:a': { '.': {} } }).equals(new FieldSet([['f:a']])));
  // Well-formed elements are remembered, malformed ones are still refused every time.
  for (let i = 0; i < 2; i++) t.throws(() => FieldSet.fromFieldsV1({ 'k:{bad': {} }), /invalid key element/);
  t.ok(FieldSet.fromFieldsV1({ 'k:{"name":"c"}': {} }).has(['k:{"name":"c"}']));
});

t.test('managedFieldsAfterUpdate gives what updateManagedFields puts in its copy', async (t) => {
  const msg = messageForObject('v1', 'ConfigMap');
  const opts = { msg, reg: schema, resetFields: [['status']] };
  const old = updateManagedFields(undefined, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a', labels: { x: 'y' } }, data: { k: 'v' } }, 'one', 'Update', 'v1', 0, opts);
  const next: KubeObject = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a', labels: { x: 'z' }, managedFields: old.metadata!.managedFields }, data: { k: 'v', k2: 'w' } };
  const copy = updateManagedFields(old, next, 'two', 'Update', 'v1', 5000, opts);
  const entries = managedFieldsAfterUpdate(old, next, 'two', 'Update', 'v1', 5000, opts);
  t.same(copy.metadata!.managedFields, entries);
  t.same(entries.map((e) => [e.manager, e.time, e.fieldsV1]), [
    ['one', '1970-01-01T00:00:00Z', { 'f:data': { '.': {}, 'f:k': {} }, 'f:metadata': { 'f:labels': {} } }],
    ['two', '1970-01-01T00:00:05Z', { 'f:data': { 'f:k2': {} }, 'f:metadata': { 'f:labels': { 'f:x': {} } } }],
  ], 'the changed label and the new key belong to "two" now');
});

t.test('formatTime: whole seconds, for dates, numbers and strings', async (t) => {
  t.equal(formatTime(new Date('2026-01-02T03:04:05.999Z')), '2026-01-02T03:04:05Z');
  t.equal(formatTime(Date.parse('2026-01-02T03:04:06.001Z')), '2026-01-02T03:04:06Z');
  t.equal(formatTime(Date.parse('2026-01-02T03:04:06.500Z')), '2026-01-02T03:04:06Z', 'same second again');
  t.equal(formatTime('2026-01-02T03:04:07.123Z'), '2026-01-02T03:04:07Z');
  t.equal(formatTime(new Date('2026-01-02T03:04:05.000Z')), '2026-01-02T03:04:05Z', 'an earlier second after a later one');
  t.throws(() => formatTime(new Date(Number.NaN)), RangeError);
});

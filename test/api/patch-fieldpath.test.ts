import t from 'tap';
import { FieldSet, canonicalJson, pathElement, pathToString } from '../../src/api/patch/fieldpath.js';

t.test('path elements and their human form', async (t) => {
  t.equal(pathElement.field('spec'), 'f:spec');
  t.equal(pathElement.key({ protocol: 'TCP', containerPort: 80 }), 'k:{"containerPort":80,"protocol":"TCP"}');
  t.equal(pathElement.value('example.com/x'), 'v:"example.com/x"');
  t.equal(pathElement.index(3), 'i:3');
  t.equal(pathToString(['f:spec', 'f:template', 'f:spec', 'f:containers', 'k:{"name":"c"}', 'f:image']), '.spec.template.spec.containers[name="c"].image');
  t.equal(pathToString(['f:spec', 'f:ports', 'k:{"port":80,"protocol":"TCP"}']), '.spec.ports[port=80,protocol="TCP"]');
  t.equal(pathToString(['f:metadata', 'f:finalizers', 'v:"a"']), '.metadata.finalizers[="a"]');
  t.equal(pathToString(['f:x', 'i:0']), '.x[0]');
  t.equal(canonicalJson({ b: [1, { d: 1, c: 2 }], a: null }), '{"a":null,"b":[1,{"c":2,"d":1}]}');
});

t.test('FieldsV1 encoding: leaves, "." markers, Kubernetes order', async (t) => {
  const s = new FieldSet([
    ['f:spec', 'f:replicas'],
    ['f:spec', 'f:template', 'f:spec', 'f:containers', 'k:{"name":"c"}'],
    ['f:spec', 'f:template', 'f:spec', 'f:containers', 'k:{"name":"c"}', 'f:image'],
    ['f:spec', 'f:template', 'f:spec', 'f:containers', 'k:{"name":"c"}', 'f:name'],
    ['f:metadata', 'f:labels', 'f:app'],
    ['f:metadata', 'f:finalizers', 'v:"b"'],
    ['f:metadata', 'f:finalizers', 'v:"a"'],
    ['f:spec', 'f:selector'],
  ]);
  const v1 = s.toFieldsV1();
  t.same(v1, {
    'f:metadata': { 'f:finalizers': { 'v:"a"': {}, 'v:"b"': {} }, 'f:labels': { 'f:app': {} } },
    'f:spec': {
      'f:replicas': {},
      'f:selector': {},
      'f:template': { 'f:spec': { 'f:containers': { 'k:{"name":"c"}': { '.': {}, 'f:image': {}, 'f:name': {} } } } },
    },
  });
  t.same(Object.keys(v1['f:spec'] as object), ['f:replicas', 'f:selector', 'f:template'], 'sorted');
  const c = (((v1['f:spec'] as Record<string, any>)['f:template']['f:spec']['f:containers']) as Record<string, object>)['k:{"name":"c"}']!;
  t.same(Object.keys(c), ['.', 'f:image', 'f:name'], '"." first');
  const back = FieldSet.fromFieldsV1(JSON.parse(JSON.stringify(v1)));
  t.ok(back.equals(s), 'round trip');
  t.same(back.paths().map((p) => pathToString(p)), [
    '.metadata.finalizers[="a"]', '.metadata.finalizers[="b"]', '.metadata.labels.app', '.spec.replicas', '.spec.selector',
    '.spec.template.spec.containers[name="c"]', '.spec.template.spec.containers[name="c"].image', '.spec.template.spec.containers[name="c"].name',
  ]);
});

t.test('element types sort fields, keys, values, indexes', async (t) => {
  const s = new FieldSet([['i:10'], ['v:1'], ['k:{"a":1}'], ['f:z'], ['i:9']]);
  t.same(Object.keys(s.toFieldsV1()), ['f:z', 'k:{"a":1}', 'v:1', 'i:9', 'i:10']);
});

t.test('set algebra', async (t) => {
  const a = new FieldSet([['f:a'], ['f:b', 'f:c']]);
  const b = new FieldSet([['f:b', 'f:c'], ['f:d']]);
  t.same(a.union(b).paths(), [['f:a'], ['f:b', 'f:c'], ['f:d']]);
  t.same(a.intersection(b).paths(), [['f:b', 'f:c']]);
  t.same(a.difference(b).paths(), [['f:a']]);
  t.ok(a.hasSelfOrDescendant(['f:b']));
  t.notOk(a.hasSelfOrDescendant(['f:c']));
  t.same(a.withoutPrefixes([['f:b']]).paths(), [['f:a']]);
  t.ok(new FieldSet().isEmpty());
  t.equal(a.size, 2);
});

t.test('malformed FieldsV1', async (t) => {
  t.throws(() => FieldSet.fromFieldsV1({ 'x:y': {} }), /invalid path element/);
  t.throws(() => FieldSet.fromFieldsV1({ 'k:{bad': {} }), /invalid key element/);
  t.throws(() => FieldSet.fromFieldsV1({ 'f:a': 1 }), /expected an object/);
  t.throws(() => FieldSet.fromFieldsV1({ '.': {} }), /not allowed at the root/);
  t.throws(() => FieldSet.fromFieldsV1({ 'i:-1': {} }), /invalid index/);
  t.ok(FieldSet.fromFieldsV1(undefined).isEmpty());
});

import t from 'tap';
import { prune } from '../../../src/api/crd/prune.js';
import type { JSONSchemaProps } from '../../../src/api/crd/schema-types.js';

const schema: JSONSchemaProps = {
  type: 'object',
  properties: {
    spec: {
      type: 'object',
      properties: {
        replicas: { type: 'integer' },
        items: { type: 'array', items: { type: 'object', properties: { name: { type: 'string' } } } },
        labels: { type: 'object', additionalProperties: { type: 'string' } },
        nested: { type: 'object', additionalProperties: { type: 'object', properties: { a: { type: 'string' } } } },
        open: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true, properties: { known: { type: 'object', properties: { k: { type: 'string' } } } } },
        anyMap: { type: 'object', additionalProperties: true },
        template: { type: 'object', 'x-kubernetes-embedded-resource': true, properties: { spec: { type: 'object', properties: { x: { type: 'string' } } } } },
      },
    },
  },
};

t.test('prunes what the schema does not specify and reports it', async (t) => {
  const cases: Array<[string, Record<string, unknown>, Record<string, unknown>, string[]]> = [
    ['known fields stay', { spec: { replicas: 1 } }, { spec: { replicas: 1 } }, []],
    ['an unknown field', { spec: { replicas: 1, foo: 'x' } }, { spec: { replicas: 1 } }, ['spec.foo']],
    ['unknown top-level fields, but never apiVersion/kind/metadata', { apiVersion: 'a/v1', kind: 'K', metadata: { name: 'n', whatever: 1 }, extra: 1 },
      { apiVersion: 'a/v1', kind: 'K', metadata: { name: 'n', whatever: 1 } }, ['extra']],
    ['inside array items', { spec: { items: [{ name: 'a', bad: 1 }, { bad: 2 }] } }, { spec: { items: [{ name: 'a' }, {}] } }, ['spec.items[0].bad', 'spec.items[1].bad']],
    ['map values are kept, unknown fields inside them are not', { spec: { labels: { a: 'b' }, nested: { k: { a: 'x', b: 'y' } } } },
      { spec: { labels: { a: 'b' }, nested: { k: { a: 'x' } } } }, ['spec.nested.k.b']],
    ['preserve-unknown-fields keeps unknowns but still prunes known subtrees', { spec: { open: { anything: { deep: 1 }, known: { k: 'v', z: 1 } } } },
      { spec: { open: { anything: { deep: 1 }, known: { k: 'v' } } } }, ['spec.open.known.z']],
    ['additionalProperties: true keeps scalars, not structure inside', { spec: { anyMap: { s: 'x', o: { deep: 1 } } } }, { spec: { anyMap: { s: 'x', o: {} } } }, ['spec.anyMap.o.deep']],
    ['embedded resources keep their TypeMeta and ObjectMeta', { spec: { template: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: { x: 'y', z: 1 }, other: 1 } } },
      { spec: { template: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: { x: 'y' } } } }, ['spec.template.other', 'spec.template.spec.z']],
  ];
  for (const [name, input, want, paths] of cases) {
    const got = structuredClone(input);
    t.same(prune(got, schema), paths, `${name}: paths`);
    t.same(got, want, `${name}: result`);
  }
});

t.test('paths come back sorted; a part of an object prunes everything unknown', async (t) => {
  const obj = { spec: { zeta: 1, alpha: 2, replicas: 3 } };
  t.same(prune(obj, schema), ['spec.alpha', 'spec.zeta']);
  const part = { replicas: 1, metadata: { x: 1 } };
  t.same(prune(part, schema.properties!.spec, { isResourceRoot: false }), ['metadata']);
  t.same(part, { replicas: 1 });
});

t.test('no schema, or preserve-unknown-fields at the root', async (t) => {
  const a = { spec: { x: 1 }, metadata: { name: 'n' } };
  t.same(prune(a, undefined), ['spec']);
  t.same(a, { metadata: { name: 'n' } });
  const b = { spec: { x: 1 } };
  t.same(prune(b, { type: 'object', 'x-kubernetes-preserve-unknown-fields': true }), []);
  t.same(b, { spec: { x: 1 } });
});

import t from 'tap';
import { applyDefaults } from '../../../src/api/crd/defaults.js';
import type { JSONSchemaProps } from '../../../src/api/crd/schema-types.js';

const schema: JSONSchemaProps = {
  type: 'object',
  properties: {
    spec: {
      type: 'object',
      default: {},
      properties: {
        replicas: { type: 'integer', default: 1 },
        strategy: { type: 'object', default: { type: 'Rolling' }, properties: { type: { type: 'string' }, maxSurge: { type: 'integer', default: 25 } } },
        ports: { type: 'array', items: { type: 'object', properties: { name: { type: 'string' }, protocol: { type: 'string', default: 'TCP' } } } },
        tags: { type: 'array', items: { type: 'string', default: 'none' } },
        limits: { type: 'object', additionalProperties: { type: 'object', properties: { max: { type: 'integer', default: 10 } } } },
        plain: { type: 'string' },
        nullableWithDefault: { type: 'string', nullable: true, default: 'x' },
        list: { type: 'array', default: ['a'], items: { type: 'string' } },
      },
    },
  },
};

t.test('absent fields get deep copies of their defaults, recursively', async (t) => {
  const cases: Array<[string, Record<string, unknown>, Record<string, unknown>]> = [
    ['an empty object gets spec and everything under it', {},
      { spec: { replicas: 1, strategy: { type: 'Rolling', maxSurge: 25 }, nullableWithDefault: 'x', list: ['a'] } }],
    ['present values win', { spec: { replicas: 5, strategy: { type: 'Recreate' }, list: [] } },
      { spec: { replicas: 5, strategy: { type: 'Recreate', maxSurge: 25 }, nullableWithDefault: 'x', list: [] } }],
    ['inside array items and map values', { spec: { ports: [{ name: 'http' }, { protocol: 'UDP' }], limits: { cpu: {}, mem: { max: 2 } } } },
      { spec: { replicas: 1, strategy: { type: 'Rolling', maxSurge: 25 }, nullableWithDefault: 'x', list: ['a'],
        ports: [{ name: 'http', protocol: 'TCP' }, { protocol: 'UDP' }], limits: { cpu: { max: 10 }, mem: { max: 2 } } } }],
  ];
  for (const [name, input, want] of cases) {
    const got = structuredClone(input);
    applyDefaults(got, schema);
    t.same(got, want, name);
  }
  const a: Record<string, unknown> = {};
  const b: Record<string, unknown> = {};
  applyDefaults(a, schema);
  applyDefaults(b, schema);
  ((a.spec as Record<string, unknown>).list as string[]).push('changed');
  t.same((b.spec as Record<string, unknown>).list, ['a'], 'defaults are copies');
  t.same(schema.properties!.spec!.properties!.list!.default, ['a'], 'the schema is untouched');
});

t.test('nulls: non-nullable with a default get it, without one are dropped, nullable stay', async (t) => {
  const obj = { spec: { replicas: null, plain: null, nullableWithDefault: null, tags: ['x', null] } };
  applyDefaults(obj, schema);
  t.same(obj, { spec: { replicas: 1, nullableWithDefault: null, tags: ['x', 'none'], strategy: { type: 'Rolling', maxSurge: 25 }, list: ['a'] } });
});

t.test('a value of the wrong shape is left for validation', async (t) => {
  const obj = { spec: { strategy: 'Rolling', ports: 'x' } };
  applyDefaults(obj, schema);
  t.same(obj.spec.strategy, 'Rolling');
  t.same(obj.spec.ports, 'x');
});

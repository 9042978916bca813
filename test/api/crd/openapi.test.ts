import t from 'tap';
import { toOpenApiV2, toOpenApiV3 } from '../../../src/api/crd/openapi.js';
import type { JSONSchemaProps } from '../../../src/api/crd/schema-types.js';

const gvk = { group: 'stable.example.com', version: 'v1', kind: 'CronTab' };
const META_V3 = { allOf: [{ $ref: '#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta' }], description: 'Standard object metadata.' };
const META_V2 = { $ref: '#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta', description: 'Standard object metadata.' };
const API_VERSION = { type: 'string', description: 'The versioned schema of this representation of an object.' };
const KIND = { type: 'string', description: 'The REST resource this object represents.' };

const schema: JSONSchemaProps = {
  type: 'object',
  description: 'A CronTab.',
  properties: {
    metadata: { type: 'object' },
    spec: {
      type: 'object',
      required: ['cronSpec', 'note'],
      example: { cronSpec: '* * * * *' },
      externalDocs: { url: 'https://example.com' },
      'x-kubernetes-validations': [{ rule: 'self.replicas >= 0', message: 'no negatives' }],
      properties: {
        cronSpec: { type: 'string', pattern: '^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$' },
        replicas: { type: 'integer', minimum: 1, default: 1 },
        port: { 'x-kubernetes-int-or-string': true },
        port2: { 'x-kubernetes-int-or-string': true, anyOf: [{ type: 'integer' }, { type: 'string' }] },
        port3: { 'x-kubernetes-int-or-string': true, anyOf: [{ pattern: '^\\d+$' }, { minLength: 3 }] },
        note: { type: 'string', nullable: true },
        nullableObject: { type: 'object', nullable: true, properties: { a: { type: 'string' } } },
        free: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true, properties: { a: { type: 'string' } } },
        freeList: { type: 'array', 'x-kubernetes-preserve-unknown-fields': true, items: { type: 'string' } },
        template: { type: 'object', 'x-kubernetes-embedded-resource': true, 'x-kubernetes-preserve-unknown-fields': true },
        ports: { type: 'array', 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['name'], items: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } } },
      },
    },
  },
};

t.test('OpenAPI v3: the structural schema plus what the server adds', async (t) => {
  const before = structuredClone(schema);
  const v3 = toOpenApiV3(schema, gvk) as Record<string, any>;
  t.same(schema, before, 'the input is not changed');
  t.same(v3['x-kubernetes-group-version-kind'], [gvk]);
  t.equal(v3.description, 'A CronTab.');
  t.same(v3.properties.metadata, META_V3);
  t.same(v3.properties.apiVersion, API_VERSION);
  t.same(v3.properties.kind, KIND);
  const spec = v3.properties.spec;
  t.notOk('example' in spec, 'example dropped');
  t.notOk('externalDocs' in spec, 'externalDocs dropped');
  t.same(spec['x-kubernetes-validations'], [{ rule: 'self.replicas >= 0', message: 'no negatives' }]);
  t.same(spec.properties.replicas, { type: 'integer', default: 1, minimum: 1 });
  t.same(spec.properties.port, { anyOf: [{ type: 'integer' }, { type: 'string' }], 'x-kubernetes-int-or-string': true });
  t.same(spec.properties.port2, { anyOf: [{ type: 'integer' }, { type: 'string' }], 'x-kubernetes-int-or-string': true });
  t.same(spec.properties.port3, {
    allOf: [{ anyOf: [{ type: 'integer' }, { type: 'string' }] }], anyOf: [{ pattern: '^\\d+$' }, { minLength: 3 }], 'x-kubernetes-int-or-string': true,
  });
  t.same(spec.properties.note, { type: 'string', nullable: true });
  t.same(spec.properties.ports['x-kubernetes-list-map-keys'], ['name']);
  t.same(spec.properties.template, {
    type: 'object', required: ['kind', 'apiVersion'], properties: { apiVersion: API_VERSION, kind: KIND, metadata: META_V3 },
    'x-kubernetes-preserve-unknown-fields': true, 'x-kubernetes-embedded-resource': true,
  });
});

t.test('OpenAPI v2: what v2 and kubectl can cope with', async (t) => {
  const v2 = toOpenApiV2(schema, gvk) as Record<string, any>;
  t.same(v2.properties.metadata, META_V2);
  const spec = v2.properties.spec;
  t.same(spec.required, ['cronSpec'], 'nullable fields are not required in v2');
  t.same(spec.properties.port, { 'x-kubernetes-int-or-string': true }, 'junctors dropped, extension kept');
  t.same(spec.properties.port3, { 'x-kubernetes-int-or-string': true });
  t.same(spec.properties.note, {}, 'nullable fields are untyped');
  t.same(spec.properties.nullableObject, {}, 'and lose their properties');
  t.same(spec.properties.free, { 'x-kubernetes-preserve-unknown-fields': true });
  t.same(spec.properties.freeList, { 'x-kubernetes-preserve-unknown-fields': true });
  t.same(spec.properties.template, { 'x-kubernetes-preserve-unknown-fields': true, 'x-kubernetes-embedded-resource': true },
    'no TypeMeta/ObjectMeta under preserve-unknown-fields in v2');
  t.same(spec['x-kubernetes-validations'], [{ rule: 'self.replicas >= 0', message: 'no negatives' }]);
});

t.test('schemas that publish as an open object', async (t) => {
  t.same(toOpenApiV2({ type: 'object', 'x-kubernetes-preserve-unknown-fields': true }, gvk), { type: 'object', 'x-kubernetes-group-version-kind': [gvk] });
  t.same(toOpenApiV3(undefined, gvk), { type: 'object', 'x-kubernetes-group-version-kind': [gvk] });
  const v3 = toOpenApiV3({ type: 'object', 'x-kubernetes-preserve-unknown-fields': true }) as Record<string, any>;
  t.same(Object.keys(v3.properties), ['metadata', 'apiVersion', 'kind'], 'v3 keeps the TypeMeta/ObjectMeta properties');
  t.notOk('x-kubernetes-group-version-kind' in v3, 'no GVK extension without a GVK');
});

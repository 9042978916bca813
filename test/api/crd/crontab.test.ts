/**
 * End to end through the library with a CronTab custom resource (the example kind of the
 * Kubernetes CRD walkthrough, written out here): schema accepted, object pruned, defaulted,
 * validated, printed and published.
 */
import t from 'tap';
import { applyDefaults } from '../../../src/api/crd/defaults.js';
import { toOpenApiV3 } from '../../../src/api/crd/openapi.js';
import { columnCell } from '../../../src/api/crd/printer-columns.js';
import { prune } from '../../../src/api/crd/prune.js';
import type { JSONSchemaProps } from '../../../src/api/crd/schema-types.js';
import { validateSchema } from '../../../src/api/crd/validate-schema.js';
import { validateValue } from '../../../src/api/crd/validate-value.js';

const cronTabSchema: JSONSchemaProps = {
  type: 'object',
  properties: {
    spec: {
      type: 'object',
      required: ['cronSpec', 'image'],
      properties: {
        cronSpec: { type: 'string', pattern: '^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$' },
        image: { type: 'string', minLength: 1 },
        replicas: { type: 'integer', minimum: 1, maximum: 10, default: 1 },
        schedulePolicy: { type: 'string', enum: ['Allow', 'Forbid', 'Replace'], default: 'Allow' },
      },
    },
    status: {
      type: 'object',
      properties: {
        replicas: { type: 'integer' },
        lastScheduleTime: { type: 'string', format: 'date-time' },
      },
    },
  },
};

const columns = [
  { name: 'Spec', type: 'string', jsonPath: '.spec.cronSpec' },
  { name: 'Replicas', type: 'integer', jsonPath: '.spec.replicas' },
  { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
];

const P = 'spec.versions[0].schema.openAPIV3Schema';

t.test('a CronTab goes through schema check, pruning, defaulting, validation and printing', async (t) => {
  t.same(validateSchema(cronTabSchema, P, { statusSubresource: true }), [], 'the schema is accepted');

  const obj: Record<string, any> = {
    apiVersion: 'stable.example.com/v1',
    kind: 'CronTab',
    metadata: { name: 'my-new-cron-object', creationTimestamp: '2024-05-01T10:00:00Z', somethingNew: true },
    spec: { cronSpec: '* * * * */5', image: 'my-awesome-cron-image', unknownField: 'dropped', nested: { deep: 1 } },
  };
  t.same(prune(obj, cronTabSchema), ['spec.nested', 'spec.unknownField'], 'unknown fields are pruned and reported');
  t.same(obj.metadata.somethingNew, true, 'metadata is left to the API server');
  applyDefaults(obj, cronTabSchema);
  t.same(obj.spec, { cronSpec: '* * * * */5', image: 'my-awesome-cron-image', replicas: 1, schedulePolicy: 'Allow' }, 'defaults applied after pruning');
  t.same(validateValue(obj, cronTabSchema), [], 'the object is valid');

  const now = new Date('2024-05-01T12:30:00Z');
  t.same(columns.map((c) => columnCell(obj, c, now)), ['* * * * */5', 1, '150m'], 'printer column cells');

  const bad = { apiVersion: 'stable.example.com/v1', kind: 'CronTab', metadata: { name: 'bad' }, spec: { cronSpec: 'every minute', replicas: 'many', schedulePolicy: 'Sometimes' } };
  applyDefaults(bad, cronTabSchema);
  t.same(validateValue(bad, cronTabSchema).map((e) => `${e.field}: ${e.message}`), [
    "spec.cronSpec: Invalid value: \"every minute\": spec.cronSpec in body should match '^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$'",
    'spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"',
    'spec.schedulePolicy: Unsupported value: "Sometimes": supported values: "Allow", "Forbid", "Replace"',
    'spec.image: Required value',
  ], 'invalid objects get Kubernetes messages');

  const status = { replicas: 2, lastScheduleTime: 'noon' };
  t.same(validateValue(status, cronTabSchema.properties!.status!, 'status').map((e) => `${e.field}: ${e.message}`), [
    'status.lastScheduleTime: Invalid value: "noon": status.lastScheduleTime in body must be of type date-time: "noon"',
  ], 'status validated on its own');

  const published = toOpenApiV3(cronTabSchema, { group: 'stable.example.com', version: 'v1', kind: 'CronTab' }) as Record<string, any>;
  t.same(published.properties.spec.properties.replicas, { type: 'integer', default: 1, maximum: 10, minimum: 1 }, 'published with its default');
  t.same(Object.keys(published.properties).sort(), ['apiVersion', 'kind', 'metadata', 'spec', 'status']);
});

t.test('a broken CronTab schema is refused with Kubernetes paths', async (t) => {
  const broken: JSONSchemaProps = structuredClone(cronTabSchema);
  const spec = broken.properties!.spec!;
  delete spec.properties!.image!.type;
  spec.properties!.replicas!.default = 0;
  spec.additionalProperties = { type: 'string' };
  t.same(validateSchema(broken, P).map((e) => `${e.field}: ${e.message}`), [
    `${P}.properties[spec].properties[image].type: Required value: must not be empty for specified object fields`,
    `${P}.properties[spec].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive`,
  ], 'defaults are checked only once the schema is structural');
  delete spec.additionalProperties;
  spec.properties!.image!.type = 'string';
  t.same(validateSchema(broken, P).map((e) => `${e.field}: ${e.message}`), [
    `${P}.properties[spec].properties[replicas].default: Invalid value: 0:  in body should be greater than or equal to 1`,
  ]);
});

import t from 'tap';
import type { JSONSchemaProps } from '../../../src/api/crd/schema-types.js';
import { validateSchema, type ValidateSchemaOptions } from '../../../src/api/crd/validate-schema.js';

const P = 'spec.versions[0].schema.openAPIV3Schema';

function check(schema: JSONSchemaProps, opts?: ValidateSchemaOptions): string[] {
  return validateSchema(schema, P, opts).map((e) => `${e.field}: ${e.message}`);
}

/** A valid root holding `props` under spec. */
const withSpec = (spec: JSONSchemaProps): JSONSchemaProps => ({ type: 'object', properties: { spec } });

interface Case { name: string; schema: JSONSchemaProps; want: string[]; opts?: ValidateSchemaOptions }

t.test('structural rules', async (t) => {
  const cases: Case[] = [
    { name: 'a typed tree is fine', schema: withSpec({ type: 'object', properties: { replicas: { type: 'integer', minimum: 1 } } }), want: [] },
    { name: 'root needs a type', schema: { properties: { spec: { type: 'object' } } }, want: [`${P}.type: Required value: must not be empty at the root`] },
    {
      name: 'root must be an object', schema: { type: 'string' },
      want: [`${P}.type: Invalid value: "string": must be object at the root`],
    },
    {
      name: 'fields need a type', schema: withSpec({ properties: { a: { type: 'string' } } }),
      want: [`${P}.properties[spec].type: Required value: must not be empty for specified object fields`],
    },
    {
      name: 'arrays need items, items need a type',
      schema: withSpec({ type: 'object', properties: { l: { type: 'array' }, m: { type: 'array', items: { minLength: 1 } } } }),
      want: [
        `${P}.properties[spec].properties[l].items: Required value: must be specified`,
        `${P}.properties[spec].properties[m].items.type: Required value: must not be empty for specified array items`,
      ],
    },
    {
      name: 'int-or-string and preserve-unknown-fields need no type',
      schema: withSpec({
        type: 'object', properties: {
          port: { 'x-kubernetes-int-or-string': true },
          port2: { 'x-kubernetes-int-or-string': true, anyOf: [{ type: 'integer' }, { type: 'string' }] },
          port3: { 'x-kubernetes-int-or-string': true, allOf: [{ anyOf: [{ type: 'integer' }, { type: 'string' }] }, { pattern: '^[0-9a-z]+$' }] },
          anything: { 'x-kubernetes-preserve-unknown-fields': true },
        },
      }),
      want: [],
    },
    {
      name: 'int-or-string excludes preserve-unknown-fields and embedded-resource',
      schema: withSpec({ type: 'object', properties: { x: { 'x-kubernetes-int-or-string': true, 'x-kubernetes-preserve-unknown-fields': true } } }),
      want: [`${P}.properties[spec].properties[x].x-kubernetes-preserve-unknown-fields: Invalid value: true: must be false if x-kubernetes-int-or-string is true`],
    },
    {
      name: 'embedded resources are objects with properties or preserve-unknown-fields',
      schema: withSpec({ type: 'object', properties: { a: { 'x-kubernetes-embedded-resource': true }, b: { type: 'object', 'x-kubernetes-embedded-resource': true, 'x-kubernetes-preserve-unknown-fields': true } } }),
      want: [
        `${P}.properties[spec].properties[a].properties: Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields`,
        `${P}.properties[spec].properties[a].type: Required value: must be object if x-kubernetes-embedded-resource is true`,
      ],
    },
    {
      name: 'root metadata may only restrict name and generateName',
      schema: { type: 'object', properties: { metadata: { type: 'object', properties: { labels: { type: 'object' } } } } },
      want: [`${P}.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified`],
    },
    {
      name: 'name and generateName restrictions are fine',
      schema: { type: 'object', properties: { metadata: { type: 'object', properties: { name: { type: 'string', maxLength: 20 }, generateName: { type: 'string' } } } } },
      want: [],
    },
    {
      name: 'kind and apiVersion at the root are strings',
      schema: { type: 'object', properties: { kind: { type: 'integer' }, metadata: { type: 'string' } } },
      want: [
        `${P}.properties[kind].type: Invalid value: "integer": must be string`,
        `${P}.properties[metadata].type: Invalid value: "string": must be object`,
      ],
    },
    {
      name: 'no additionalProperties at the root',
      schema: { type: 'object', additionalProperties: { type: 'string' } },
      want: [`${P}.additionalProperties: Forbidden: must not be used at the root`],
    },
    {
      name: 'value validations must not declare types, descriptions, defaults or extensions',
      schema: withSpec({
        type: 'object', properties: { a: { type: 'string' } },
        anyOf: [{ type: 'object', properties: { a: { description: 'x', nullable: true } } }],
        oneOf: [{ 'x-kubernetes-int-or-string': true, default: 1 }],
        allOf: [{ 'x-kubernetes-validations': [{ rule: 'true' }], title: 't' }],
      }),
      want: [
        `${P}.properties[spec].allOf[0].title: Forbidden: must be empty to be structural`,
        `${P}.properties[spec].allOf[0].x-kubernetes-validations: Forbidden: must be empty to be structural`,
        `${P}.properties[spec].anyOf[0].properties[a].description: Forbidden: must be empty to be structural`,
        `${P}.properties[spec].anyOf[0].properties[a].nullable: Forbidden: must be false to be structural`,
        `${P}.properties[spec].anyOf[0].type: Forbidden: must be empty to be structural`,
        `${P}.properties[spec].oneOf[0].default: Forbidden: must be undefined to be structural`,
        `${P}.properties[spec].oneOf[0].x-kubernetes-int-or-string: Forbidden: must be false to be structural`,
      ],
    },
    {
      // Kubernetes checks this for the value validations of the root only.
      name: 'value validations only mention specified fields',
      schema: { type: 'object', properties: { spec: { type: 'object' } }, anyOf: [{ properties: { spec: { required: ['b'], properties: { b: { minLength: 1 } } } } }] },
      want: [`${P}.properties[spec].properties[b]: Required value: because it is defined in ${P}.anyOf[0].properties[spec].properties[b]`],
    },
    {
      name: 'metadata in a nested context',
      schema: { type: 'object', properties: { metadata: { type: 'object' } }, anyOf: [{ properties: { metadata: { required: ['name'] } } }] },
      want: [`${P}.anyOf[0].properties[metadata]: Forbidden: must not be specified in a nested context`],
    },
    {
      name: 'patterns are Go regular expressions',
      schema: withSpec({ type: 'object', properties: { a: { type: 'string', pattern: '^(?=x)' }, b: { type: 'string', pattern: '(?i)^[a-z]+$' } } }),
      want: [`${P}.properties[spec].properties[a].pattern: Invalid value: "^(?=x)": must be a valid regular expression, but isn't: error parsing regexp: invalid or unsupported Perl syntax: \`(?=\``],
    },
  ];
  for (const c of cases) t.same(check(c.schema, c.opts), c.want, c.name);
});

t.test('keywords apiextensions v1 does not support', async (t) => {
  const cases: Case[] = [
    { name: '$ref', schema: withSpec({ $ref: '#/definitions/x' }), want: [`${P}.properties[spec].$ref: Forbidden: $ref is not supported`] },
    {
      name: 'definitions and dependencies',
      schema: { type: 'object', definitions: { x: { type: 'string' } }, dependencies: { a: ['b'] } },
      want: [`${P}.definitions: Forbidden: definitions is not supported`, `${P}.dependencies: Forbidden: dependencies is not supported`],
    },
    {
      name: 'id, patternProperties, additionalItems',
      schema: withSpec({ type: 'object', id: 'x', patternProperties: { '^a': { type: 'string' } }, additionalItems: false }),
      want: [
        `${P}.properties[spec].id: Forbidden: id is not supported`,
        `${P}.properties[spec].additionalItems: Forbidden: additionalItems is not supported`,
        `${P}.properties[spec].patternProperties: Forbidden: patternProperties is not supported`,
      ],
    },
    {
      name: 'items as an array',
      schema: withSpec({ type: 'array', items: [{ type: 'string' }] }),
      want: [`${P}.properties[spec].items: Forbidden: items must be a schema object and not an array`],
    },
    { name: '$schema alone', schema: { type: 'object', $schema: 'http://json-schema.org/schema#' }, want: [`${P}: Invalid value: "": OpenAPIV3Schema 'schema' is not supported`] },
    {
      name: 'uniqueItems', schema: withSpec({ type: 'array', items: { type: 'string' }, uniqueItems: true }),
      want: [`${P}.properties[spec].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic`],
    },
    {
      name: 'type null and unknown types',
      schema: withSpec({ type: 'null' }),
      want: [
        `${P}.properties[spec].type: Unsupported value: "null": supported values: "array", "boolean", "integer", "number", "object", "string"`,
        `${P}.properties[spec].type: Forbidden: type cannot be set to null, use nullable as an alternative`,
      ],
    },
    {
      name: 'properties and additionalProperties together',
      schema: withSpec({ type: 'object', properties: { a: { type: 'string' } }, additionalProperties: { type: 'string' } }),
      want: [`${P}.properties[spec].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive`],
    },
    {
      name: 'preserve-unknown-fields false',
      schema: withSpec({ type: 'object', 'x-kubernetes-preserve-unknown-fields': false }),
      want: [`${P}.properties[spec].x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined`],
    },
    { name: 'nullable root', schema: { type: 'object', nullable: true }, want: [`${P}.nullable: Forbidden: nullable cannot be true at the root`] },
    {
      name: 'embedded resources inside metadata',
      schema: { type: 'object', properties: { metadata: { type: 'object', properties: { name: { type: 'object', 'x-kubernetes-embedded-resource': true, 'x-kubernetes-preserve-unknown-fields': true } } } } },
      want: [`${P}.properties[metadata].properties[name].x-kubernetes-embedded-resource: Forbidden: must not be used inside of resource meta`],
    },
  ];
  for (const c of cases) t.same(check(c.schema, c.opts), c.want, c.name);
});

t.test('defaults', async (t) => {
  const cases: Case[] = [
    {
      name: 'defaults in top-level metadata, kind, apiVersion',
      schema: { type: 'object', properties: { metadata: { type: 'object', default: {} }, kind: { type: 'string', default: 'X' } } },
      want: [
        `${P}.properties[metadata].default: Forbidden: must not be set in top-level metadata`,
        `${P}.properties[kind].default: Forbidden: must not be set in top-level kind`,
      ],
    },
    {
      name: 'a default of the wrong type',
      schema: withSpec({ type: 'object', properties: { replicas: { type: 'integer', default: 'three' } } }),
      want: [`${P}.properties[spec].properties[replicas].default: Invalid value: "string":  in body must be of type integer: "string"`],
    },
    {
      name: 'a default out of range, and one inside a default object',
      schema: withSpec({ type: 'object', default: { n: 'x' }, properties: { n: { type: 'integer', maximum: 10, default: 20 } } }),
      want: [
        `${P}.properties[spec].default.n: Invalid value: "string": n in body must be of type integer: "string"`,
        `${P}.properties[spec].properties[n].default: Invalid value: 20:  in body should be less than or equal to 10`,
      ],
    },
    {
      name: 'defaults may not carry unknown fields',
      schema: withSpec({ type: 'object', properties: { a: { type: 'string' } }, default: { a: 'x', b: 1 } }),
      want: [`${P}.properties[spec].default: Invalid value: map[string]interface {}{"a":"x", "b":1}: must not have unknown fields`],
    },
    {
      name: 'embedded resource defaults need apiVersion and kind',
      schema: withSpec({ type: 'object', properties: { tpl: { type: 'object', 'x-kubernetes-embedded-resource': true, 'x-kubernetes-preserve-unknown-fields': true, default: { kind: 'Pod' } } } }),
      want: [`${P}.properties[spec].properties[tpl].default.apiVersion: Required value`],
    },
    {
      name: 'valid defaults, including enums and nested ones',
      schema: withSpec({ type: 'object', default: {}, properties: { mode: { type: 'string', enum: ['a', 'b'], default: 'a' }, l: { type: 'array', items: { type: 'string', default: 'x' } } } }),
      want: [],
    },
  ];
  for (const c of cases) t.same(check(c.schema, c.opts), c.want, c.name);
});

t.test('list and map types', async (t) => {
  const items = (extra: JSONSchemaProps = {}): JSONSchemaProps => ({ type: 'object', required: ['name'], properties: { name: { type: 'string' }, port: { type: 'integer' } }, ...extra });
  const cases: Case[] = [
    {
      name: 'a well formed map list and set', schema: withSpec({
        type: 'object', properties: {
          ports: { type: 'array', 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['name'], items: items() },
          tags: { type: 'array', 'x-kubernetes-list-type': 'set', items: { type: 'string' } },
          labels: { type: 'object', 'x-kubernetes-map-type': 'atomic', additionalProperties: { type: 'string' } },
        },
      }),
      want: [],
    },
    {
      name: 'map lists need keys that are required scalar item properties',
      schema: withSpec({ type: 'object', properties: { l: { type: 'array', 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['port', 'nope'], items: items() } } }),
      want: [
        `${P}.properties[spec].properties[l].x-kubernetes-list-map-keys: Invalid value: []interface {}{"port", "nope"}: entries must all be names of item properties`,
        `${P}.properties[spec].properties[l].items.properties[port].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property`,
      ],
    },
    {
      name: 'map list without keys, list-type on an object, unknown list type',
      schema: withSpec({ type: 'object', properties: {
        a: { type: 'array', 'x-kubernetes-list-type': 'map', items: items() },
        b: { type: 'object', 'x-kubernetes-list-type': 'set' },
        c: { type: 'array', 'x-kubernetes-list-type': 'bag', items: { type: 'string' } },
        d: { type: 'array', 'x-kubernetes-list-map-keys': ['name'], items: items() },
      } }),
      want: [
        `${P}.properties[spec].properties[a].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map`,
        `${P}.properties[spec].properties[b].type: Invalid value: "object": must be array if x-kubernetes-list-type is specified`,
        `${P}.properties[spec].properties[c].x-kubernetes-list-type: Unsupported value: "bag": supported values: "atomic", "set", "map"`,
        `${P}.properties[spec].properties[d].x-kubernetes-list-type: Required value: must be map if x-kubernetes-list-map-keys is non-empty`,
      ],
    },
    {
      name: 'set items must be atomic',
      schema: withSpec({ type: 'object', properties: { s: { type: 'array', 'x-kubernetes-list-type': 'set', items: items() } } }),
      want: [`${P}.properties[spec].properties[s].items.x-kubernetes-map-type: Invalid value: "null": must be atomic as item of a list with x-kubernetes-list-type=set`],
    },
    {
      name: 'map-type values',
      schema: withSpec({ type: 'object', properties: { m: { type: 'object', 'x-kubernetes-map-type': 'flat' } } }),
      want: [`${P}.properties[spec].properties[m].x-kubernetes-map-type: Unsupported value: "flat": supported values: "atomic", "granular"`],
    },
  ];
  for (const c of cases) t.same(check(c.schema, c.opts), c.want, c.name);
});

t.test('x-kubernetes-validations and the status subresource root', async (t) => {
  const rules = check(withSpec({
    type: 'object', properties: { a: { type: 'string' } },
    'x-kubernetes-validations': [
      { rule: ' ' },
      { rule: 'self.a != ""', reason: 'FieldValueBogus' },
      { rule: 'self.a != ""', fieldPath: '.nope' },
      { rule: 'self.a != ""', fieldPath: '.a', message: 'a must be set' },
      { rule: 'self.a\n != ""' },
    ],
  }));
  t.same(rules, [
    `${P}.properties[spec].x-kubernetes-validations[0].rule: Required value: rule is not specified`,
    `${P}.properties[spec].x-kubernetes-validations[1].reason: Unsupported value: "FieldValueBogus": supported values: "FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"`,
    `${P}.properties[spec].x-kubernetes-validations[2].fieldPath: Invalid value: ".nope": fieldPath must be a valid path`,
    `${P}.properties[spec].x-kubernetes-validations[4].message: Required value: message must be specified if rule contains line breaks`,
  ]);

  t.same(check({ type: 'object', properties: { status: { type: 'object' } } }, { statusSubresource: true }), []);
  const junctor = check({ type: 'object', properties: { a: { type: 'string' } }, anyOf: [{ required: ['a'] }] }, { statusSubresource: true });
  t.equal(junctor.length, 1);
  t.match(junctor[0], /^spec\.versions\[0\]\.schema\.openAPIV3Schema: Invalid value: map\[string\]interface \{\}\{.*\}: only \[Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum MaxLength MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items Properties ExternalDocs Example XPreserveUnknownFields XValidations\] fields are allowed at the root of the schema if the status subresource is enabled$/);
});

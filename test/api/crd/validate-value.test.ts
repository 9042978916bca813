import t from 'tap';
import { checkFormat, isSupportedFormat } from '../../../src/api/crd/formats.js';
import { compileGoRegexp } from '../../../src/api/crd/go-regexp.js';
import type { JSONSchemaProps } from '../../../src/api/crd/schema-types.js';
import { validateValue } from '../../../src/api/crd/validate-value.js';

const schema: JSONSchemaProps = {
  type: 'object',
  properties: {
    metadata: { type: 'object' },
    spec: {
      type: 'object',
      required: ['replicas'],
      properties: {
        replicas: { type: 'integer', minimum: 1, maximum: 10 },
        name: { type: 'string', minLength: 2, maxLength: 5, pattern: '^[a-z]+$' },
        mode: { type: 'string', enum: ['a', 'b'] },
        level: { type: 'integer', enum: [1, 2] },
        ratio: { type: 'number', maximum: 1, exclusiveMaximum: true, multipleOf: 0.25 },
        tags: { type: 'array', minItems: 1, maxItems: 2, items: { type: 'string' } },
        labels: { type: 'object', minProperties: 1, maxProperties: 2, additionalProperties: { type: 'string' } },
        strict: { type: 'object', additionalProperties: false },
        when: { type: 'string', format: 'date-time' },
        size: { type: 'integer', format: 'int32' },
        port: { 'x-kubernetes-int-or-string': true, anyOf: [{ type: 'integer' }, { type: 'string' }] },
        note: { type: 'string', nullable: true },
        choice: { type: 'object', properties: { a: { type: 'string' }, b: { type: 'string' } }, oneOf: [{ required: ['a'] }, { required: ['b'] }] },
        notBoth: { type: 'object', properties: { a: { type: 'string' } }, not: { required: ['a'] } },
        template: { type: 'object', 'x-kubernetes-embedded-resource': true, 'x-kubernetes-preserve-unknown-fields': true },
        set: { type: 'array', 'x-kubernetes-list-type': 'set', items: { type: 'string' } },
        ports: {
          type: 'array', 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['name'],
          items: { type: 'object', required: ['name'], properties: { name: { type: 'string' }, port: { type: 'integer' } } },
        },
      },
    },
    status: { type: 'object', properties: { ready: { type: 'integer' } } },
  },
};

const errorsOf = (spec: Record<string, unknown>): string[] =>
  validateValue({ apiVersion: 'x/v1', kind: 'X', metadata: { name: 'x' }, spec: { replicas: 1, ...spec } }, schema).map((e) => `${e.field}: ${e.message}`);

t.test('kube-openapi messages for the common failures', async (t) => {
  const cases: Array<[string, Record<string, unknown>, string[]]> = [
    ['valid', { name: 'abc', mode: 'a', level: 2, ratio: 0.5, tags: ['x'], labels: { a: 'b' }, when: '2024-01-02T03:04:05Z', size: 2 ** 40, port: 'http', note: null }, []],
    ['wrong type', { replicas: 'three' }, ['spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"']],
    ['minimum', { replicas: 0 }, ['spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1']],
    ['maximum', { replicas: 11 }, ['spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10']],
    ['enum', { mode: 'c' }, ['spec.mode: Unsupported value: "c": supported values: "a", "b"']],
    ['numeric enum', { level: 3 }, ['spec.level: Unsupported value: 3: supported values: "1", "2"']],
    ['maxLength', { name: 'abcdef' }, ['spec.name: Too long: may not be more than 5 bytes']],
    ['minLength', { name: 'a' }, ['spec.name: Invalid value: "a": spec.name in body should be at least 2 chars long']],
    ['pattern', { name: 'AB' }, ["spec.name: Invalid value: \"AB\": spec.name in body should match '^[a-z]+$'"]],
    ['exclusive maximum', { ratio: 1 }, ['spec.ratio: Invalid value: 1: spec.ratio in body should be less than 1']],
    ['multipleOf', { ratio: 0.3 }, ['spec.ratio: Invalid value: 0.3: spec.ratio in body should be a multiple of 0.25']],
    ['minItems', { tags: [] }, ['spec.tags: Invalid value: 0: spec.tags in body should have at least 1 items']],
    ['maxItems', { tags: ['a', 'b', 'c'] }, ['spec.tags: Too many: 3: must have at most 2 items']],
    ['item type', { tags: [1] }, ['spec.tags[0]: Invalid value: "integer": spec.tags[0] in body must be of type string: "integer"']],
    ['minProperties', { labels: {} }, ['spec.labels: Invalid value: 0: spec.labels in body should have at least 1 properties']],
    ['maxProperties', { labels: { a: 'a', b: 'b', c: 'c' } }, ['spec.labels: Too many: 3: must have at most 2 items']],
    ['additionalProperties schema', { labels: { a: 1 } }, ['spec.labels.a: Invalid value: "integer": spec.labels.a in body must be of type string: "integer"']],
    ['additionalProperties false', { strict: { x: 1 } }, ['spec.strict: Invalid value: "x": spec.strict.x in body is a forbidden property']],
    ['format', { when: 'yesterday' }, ['spec.when: Invalid value: "yesterday": spec.when in body must be of type date-time: "yesterday"']],
    ['nullable is not the default', { name: null }, ['spec.name: Invalid value: "null": spec.name in body must be of type string: "null"']],
    ['int-or-string', { port: true }, [
      'spec.port: Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean"',
      '<nil>: Invalid value: "": "spec.port" must validate at least one schema (anyOf)',
      'spec.port: Invalid value: "boolean": spec.port in body must be of type integer: "boolean"',
    ]],
    ['oneOf', { choice: { a: 'x', b: 'y' } }, ['<nil>: Invalid value: "": "spec.choice" must validate one and only one schema (oneOf). Found 2 valid alternatives']],
    ['oneOf none', { choice: {} }, [
      '<nil>: Invalid value: "": "spec.choice" must validate one and only one schema (oneOf). Found none valid',
      'spec.choice.a: Required value',
    ]],
    ['not', { notBoth: { a: 'x' } }, ['<nil>: Invalid value: "": "spec.notBoth" must not validate the schema (not)']],
  ];
  for (const [name, spec, want] of cases) t.same(errorsOf(spec), want, name);
  const missing = validateValue({ spec: {} }, schema).map((e) => `${e.field}: ${e.message}`);
  t.same(missing, ['spec.replicas: Required value'], 'required');
  t.same(validateValue({ spec: {} }, schema)[0]?.type, 'FieldValueRequired');
  t.same(validateValue('x', schema).map((e) => `${e.field}: ${e.message}`), ['<nil>: Invalid value: "string":  in body must be of type object: "string"'], 'root type');
});

t.test('the root ObjectMeta is left to the API server', async (t) => {
  t.same(validateValue({ metadata: { name: 'Not_A_Name!', labels: { 'bad key!': 'v' } }, spec: { replicas: 1 } }, schema), []);
  const restricted: JSONSchemaProps = { type: 'object', properties: { metadata: { type: 'object', properties: { name: { type: 'string', maxLength: 3 } } } } };
  t.same(validateValue({ metadata: { name: 'long' } }, restricted).map((e) => e.message), ['Too long: may not be more than 3 bytes'], 'but what the schema says of metadata holds');
});

t.test('embedded resources need TypeMeta and valid ObjectMeta', async (t) => {
  t.same(errorsOf({ template: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, anything: 1 } }), []);
  const errs = errorsOf({ template: { kind: 'Bad Kind', metadata: { name: 'a/b', namespace: 'Bad', labels: { 'bad key!': 'v' } } } });
  t.equal(errs[0], 'spec.template.apiVersion: Required value');
  t.match(errs[1], /^spec\.template\.kind: Invalid value: "Bad Kind": may have mixed case, but should otherwise match: a DNS-1035 label must consist of/);
  t.equal(errs[2], "spec.template.metadata.name: Invalid value: \"a/b\": may not contain '/'");
  t.match(errs[3], /^spec\.template\.metadata\.namespace: Invalid value: "Bad": a lowercase RFC 1123 label/);
  t.match(errs[4], /^spec\.template\.metadata\.labels: Invalid value: "bad key!": name part must consist of/);
  t.equal(errs.length, 5);
  t.same(errorsOf({ template: { apiVersion: 'a/b/c', kind: 'X', metadata: 'x' } }), [
    'spec.template.apiVersion: Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c',
    'spec.template.metadata: Invalid value: "x": json: cannot unmarshal string into Go value of type v1.ObjectMeta',
  ]);
});

t.test('set and map lists are unique', async (t) => {
  t.same(errorsOf({ set: ['a', 'b', 'a', 'a'] }), ['spec.set[2]: Duplicate value: "a"']);
  t.same(errorsOf({ ports: [{ name: 'a', port: 1 }, { name: 'b' }, { name: 'a', port: 2 }] }), [
    'spec.ports[2]: Duplicate value: map[string]interface {}{"name":"a"}',
  ]);
  t.same(errorsOf({ ports: [{ name: 'a' }, 'x'] }).at(-1), 'spec.ports[1]: Invalid value: "x": must be an object for an array of list-type map');
});

t.test('a part of an object, named by its path', async (t) => {
  const status = schema.properties!.status!;
  t.same(validateValue({ ready: 'yes' }, status, 'status').map((e) => `${e.field}: ${e.message}`), [
    'status.ready: Invalid value: "string": status.ready in body must be of type integer: "string"',
  ]);
});

t.test('formats Kubernetes checks, and those it ignores', async (t) => {
  const cases: Array<[string, string, boolean]> = [
    ['date', '2024-02-29', true], ['date', '2023-02-29', false], ['date-time', '2024-01-02T03:04:05.5+01:00', true],
    ['datetime', '2024-01-02 03:04:05', false], ['uuid', '6ba7b810-9dad-11d1-80b4-00c04fd430c8', true], ['uuid', 'nope', false],
    ['uuid4', '6ba7b810-9dad-41d1-80b4-00c04fd430c8', true], ['uuid4', '6ba7b810-9dad-11d1-80b4-00c04fd430c8', false],
    ['hostname', 'example.com', true], ['hostname', '-bad-.com', false], ['ipv4', '10.0.0.1', true], ['ipv4', '10.0.0.256', false],
    ['ipv6', 'fe80::1', true], ['ipv6', '10.0.0.1', false], ['cidr', '10.0.0.0/8', true], ['cidr', '10.0.0.0/33', false],
    ['mac', '00:1a:2b:3c:4d:5e', true], ['mac', '00:1a:2b', false], ['byte', 'aGVsbG8=', true], ['byte', 'not base64!', false],
    ['email', 'a@example.com', true], ['email', 'nobody', false], ['uri', 'https://example.com/x', true], ['uri', 'relative/path', false],
    ['duration', '1h30m', true], ['duration', '3 days', true], ['duration', 'soon', false], ['password', 'anything', true],
    ['hexcolor', '#fff', true], ['rgbcolor', 'rgb(1, 2, 300)', false], ['isbn10', '0-306-40615-2', true], ['ssn', '123-45-6789', true],
    ['creditcard', '4111 1111 1111 1111', true], ['bsonobjectid', '507f1f77bcf86cd799439011', true],
  ];
  for (const [format, value, ok] of cases) t.equal(checkFormat(format, value), ok, `${format} ${JSON.stringify(value)}`);
  for (const f of ['int32', 'int64', 'float', 'double', 'k8s-short-name', 'constructor']) {
    t.notOk(isSupportedFormat(f), `${f} is not validated`);
    t.equal(checkFormat(f, 'x'), undefined);
  }
});

t.test('Go regular expressions', async (t) => {
  t.ok(compileGoRegexp('(?i)^abc$').re?.test('ABC'), 'leading flags');
  t.ok(compileGoRegexp('^(?P<word>[[:alpha:]]+)\\z').re?.test('word'), 'named groups, POSIX classes, \\z');
  t.ok(compileGoRegexp('^\\p{L}+$').re?.test('héllo'), 'unicode classes');
  t.equal(compileGoRegexp('a(?!b)').error, 'error parsing regexp: invalid or unsupported Perl syntax: `(?!`');
  t.equal(compileGoRegexp('(a)\\1').error, 'error parsing regexp: invalid escape sequence: `\\1`');
  t.match(compileGoRegexp('(unclosed').error, /^error parsing regexp: /);
});

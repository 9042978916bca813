/**
 * The OpenAPI v2 document as the gnostic `openapi.v2.Document` protobuf message, the only
 * form kubectl 1.27/1.28 accept from /openapi/v2. Only the messages and fields our documents
 * use are declared (field numbers as in gnostic's OpenAPIv2.proto); vendor extensions, enum
 * values and defaults travel as YAML text in `Any.yaml`, as gnostic writes them.
 */
import { dump } from 'js-yaml';
import protobuf from 'protobufjs';
import type { JsonSchema } from './schemas.js';

/** What kubectl sends in Accept and what we answer (a dot instead of '@': Go's mime parser rejects '@'). */
export const OPENAPI_V2_PROTOBUF_ACCEPT = 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf';
export const OPENAPI_V2_PROTOBUF_CONTENT_TYPE = 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf';

type FieldJson = { type: string; id: number; rule?: 'repeated' };
const f = (id: number, type: string, repeated = false): FieldJson => (repeated ? { type, id, rule: 'repeated' } : { type, id });

const NAMED = (valueType: string): { fields: Record<string, FieldJson> } => ({ fields: { name: f(1, 'string'), value: f(2, valueType) } });

/** The declared subset of gnostic's openapi.v2 package (protobufjs JSON descriptor form). */
const DESCRIPTOR = {
  nested: {
    openapi: { nested: { v2: { nested: {
      Document: { fields: {
        swagger: f(1, 'string'), info: f(2, 'Info'), host: f(3, 'string'), basePath: f(4, 'string'),
        schemes: f(5, 'string', true), consumes: f(6, 'string', true), produces: f(7, 'string', true),
        paths: f(8, 'Paths'), definitions: f(9, 'Definitions'), vendorExtension: f(16, 'NamedAny', true),
      } },
      Info: { fields: { title: f(1, 'string'), version: f(2, 'string'), description: f(3, 'string'), vendorExtension: f(7, 'NamedAny', true) } },
      Paths: { fields: { vendorExtension: f(1, 'NamedAny', true), path: f(2, 'NamedPathItem', true) } },
      NamedPathItem: NAMED('PathItem'),
      PathItem: { fields: {
        ref: f(1, 'string'), get: f(2, 'Operation'), put: f(3, 'Operation'), post: f(4, 'Operation'), delete: f(5, 'Operation'),
        options: f(6, 'Operation'), head: f(7, 'Operation'), patch: f(8, 'Operation'), parameters: f(9, 'ParametersItem', true),
        vendorExtension: f(10, 'NamedAny', true),
      } },
      Operation: { fields: {
        tags: f(1, 'string', true), summary: f(2, 'string'), description: f(3, 'string'), operationId: f(5, 'string'),
        produces: f(6, 'string', true), consumes: f(7, 'string', true), parameters: f(8, 'ParametersItem', true),
        responses: f(9, 'Responses'), schemes: f(10, 'string', true), deprecated: f(11, 'bool'), vendorExtension: f(13, 'NamedAny', true),
      } },
      ParametersItem: { oneofs: { oneof: { oneof: ['parameter', 'jsonReference'] } }, fields: { parameter: f(1, 'Parameter'), jsonReference: f(2, 'JsonReference') } },
      JsonReference: { fields: { ref: f(1, 'string'), description: f(2, 'string') } },
      Parameter: { oneofs: { oneof: { oneof: ['bodyParameter', 'nonBodyParameter'] } }, fields: { bodyParameter: f(1, 'BodyParameter'), nonBodyParameter: f(2, 'NonBodyParameter') } },
      BodyParameter: { fields: { description: f(1, 'string'), name: f(2, 'string'), in: f(3, 'string'), required: f(4, 'bool'), schema: f(5, 'Schema'), vendorExtension: f(6, 'NamedAny', true) } },
      NonBodyParameter: {
        oneofs: { oneof: { oneof: ['headerParameterSubSchema', 'queryParameterSubSchema', 'pathParameterSubSchema'] } },
        fields: { headerParameterSubSchema: f(1, 'HeaderParameterSubSchema'), queryParameterSubSchema: f(3, 'QueryParameterSubSchema'), pathParameterSubSchema: f(4, 'PathParameterSubSchema') },
      },
      HeaderParameterSubSchema: { fields: { required: f(1, 'bool'), in: f(2, 'string'), description: f(3, 'string'), name: f(4, 'string'), type: f(5, 'string'), format: f(6, 'string'), uniqueItems: f(19, 'bool') } },
      QueryParameterSubSchema: { fields: { required: f(1, 'bool'), in: f(2, 'string'), description: f(3, 'string'), name: f(4, 'string'), type: f(6, 'string'), format: f(7, 'string'), uniqueItems: f(20, 'bool') } },
      PathParameterSubSchema: { fields: { required: f(1, 'bool'), in: f(2, 'string'), description: f(3, 'string'), name: f(4, 'string'), type: f(5, 'string'), format: f(6, 'string'), uniqueItems: f(19, 'bool') } },
      Responses: { fields: { responseCode: f(1, 'NamedResponseValue', true), vendorExtension: f(2, 'NamedAny', true) } },
      NamedResponseValue: NAMED('ResponseValue'),
      ResponseValue: { oneofs: { oneof: { oneof: ['response', 'jsonReference'] } }, fields: { response: f(1, 'Response'), jsonReference: f(2, 'JsonReference') } },
      Response: { fields: { description: f(1, 'string'), schema: f(2, 'SchemaItem'), vendorExtension: f(5, 'NamedAny', true) } },
      SchemaItem: { oneofs: { oneof: { oneof: ['schema'] } }, fields: { schema: f(1, 'Schema') } },
      Definitions: { fields: { additionalProperties: f(1, 'NamedSchema', true) } },
      Properties: { fields: { additionalProperties: f(1, 'NamedSchema', true) } },
      NamedSchema: NAMED('Schema'),
      Schema: { fields: {
        ref: f(1, 'string'), format: f(2, 'string'), title: f(3, 'string'), description: f(4, 'string'), default: f(5, 'Any'),
        required: f(19, 'string', true), enum: f(20, 'Any', true), additionalProperties: f(21, 'AdditionalPropertiesItem'),
        type: f(22, 'TypeItem'), items: f(23, 'ItemsItem'), allOf: f(24, 'Schema', true), properties: f(25, 'Properties'),
        readOnly: f(27, 'bool'), vendorExtension: f(31, 'NamedAny', true),
      } },
      AdditionalPropertiesItem: { oneofs: { oneof: { oneof: ['schema', 'boolean'] } }, fields: { schema: f(1, 'Schema'), boolean: f(2, 'bool') } },
      TypeItem: { fields: { value: f(1, 'string', true) } },
      ItemsItem: { fields: { schema: f(1, 'Schema', true) } },
      NamedAny: NAMED('Any'),
      // Field 1 (google.protobuf.Any value) is never written: gnostic keeps extensions as YAML.
      Any: { fields: { yaml: f(2, 'string') } },
    } } } },
  },
};

let root: protobuf.Root | undefined;
/** The openapi.v2.Document type (built once). */
export function documentType(): protobuf.Type {
  root ??= protobuf.Root.fromJSON(DESCRIPTOR);
  return root.lookupType('openapi.v2.Document');
}

type Pb = { [key: string]: unknown };
const isObj = (v: unknown): v is JsonSchema => typeof v === 'object' && v !== null && !Array.isArray(v);
const yamlCache = new Map<string, string>();
/** A value as gnostic's Any: YAML text (memoized: the same extension values repeat thousands of times). */
function yamlAny(v: unknown): Pb {
  const key = JSON.stringify(v);
  let yaml = yamlCache.get(key);
  if (yaml === undefined) { yaml = dump(v, { lineWidth: -1 }); yamlCache.set(key, yaml); }
  return { yaml };
}

function vendorExtensions(o: JsonSchema): Pb[] {
  return Object.keys(o).filter((k) => k.startsWith('x-')).map((k) => ({ name: k, value: yamlAny(o[k]) }));
}

function schemaPb(s: JsonSchema): Pb {
  const o: Pb = {};
  if (typeof s.$ref === 'string') o.ref = s.$ref;
  if (typeof s.format === 'string') o.format = s.format;
  if (typeof s.description === 'string') o.description = s.description;
  if (s.default !== undefined) o.default = yamlAny(s.default);
  if (Array.isArray(s.required)) o.required = s.required;
  if (Array.isArray(s.enum)) o.enum = s.enum.map(yamlAny);
  if (isObj(s.additionalProperties)) o.additionalProperties = { schema: schemaPb(s.additionalProperties) };
  else if (typeof s.additionalProperties === 'boolean') o.additionalProperties = { boolean: s.additionalProperties };
  if (typeof s.type === 'string') o.type = { value: [s.type] };
  if (isObj(s.items)) o.items = { schema: [schemaPb(s.items)] };
  if (Array.isArray(s.allOf)) o.allOf = (s.allOf as JsonSchema[]).map(schemaPb);
  if (isObj(s.properties)) o.properties = { additionalProperties: Object.entries(s.properties).map(([name, v]) => ({ name, value: schemaPb(v as JsonSchema) })) };
  const ext = vendorExtensions(s);
  if (ext.length) o.vendorExtension = ext;
  return o;
}

function parameterPb(p: JsonSchema): Pb {
  if (p.in === 'body') {
    return { parameter: { bodyParameter: { name: p.name, in: 'body', required: p.required === true, ...(isObj(p.schema) ? { schema: schemaPb(p.schema) } : {}), ...(typeof p.description === 'string' ? { description: p.description } : {}) } } };
  }
  const sub: Pb = { required: p.required === true, in: p.in, name: p.name, type: p.type, uniqueItems: p.uniqueItems === true };
  if (typeof p.description === 'string') sub.description = p.description;
  const key = p.in === 'path' ? 'pathParameterSubSchema' : p.in === 'header' ? 'headerParameterSubSchema' : 'queryParameterSubSchema';
  return { parameter: { nonBodyParameter: { [key]: sub } } };
}

function operationPb(op: JsonSchema): Pb {
  const o: Pb = {};
  for (const k of ['tags', 'produces', 'consumes', 'schemes'] as const) if (Array.isArray(op[k])) o[k] = op[k];
  if (typeof op.description === 'string') o.description = op.description;
  if (typeof op.operationId === 'string') o.operationId = op.operationId;
  if (Array.isArray(op.parameters)) o.parameters = (op.parameters as JsonSchema[]).map(parameterPb);
  if (isObj(op.responses)) {
    o.responses = { responseCode: Object.entries(op.responses).map(([code, r]) => {
      const resp = r as JsonSchema;
      return { name: code, value: { response: { description: resp.description ?? '', ...(isObj(resp.schema) ? { schema: { schema: schemaPb(resp.schema) } } : {}) } } };
    }) };
  }
  const ext = vendorExtensions(op);
  if (ext.length) o.vendorExtension = ext;
  return o;
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

/** Encodes a Swagger 2.0 JSON document (as v2.ts builds it) as a gnostic Document. */
export function encodeOpenApiV2(doc: JsonSchema): Uint8Array {
  const info = isObj(doc.info) ? doc.info : {};
  const pb: Pb = { swagger: String(doc.swagger ?? '2.0'), info: { title: info.title ?? '', version: info.version ?? '' } };
  if (isObj(doc.paths)) {
    pb.paths = { path: Object.entries(doc.paths).map(([path, item]) => {
      const it = item as JsonSchema;
      const v: Pb = {};
      for (const m of METHODS) if (isObj(it[m])) v[m] = operationPb(it[m] as JsonSchema);
      if (Array.isArray(it.parameters)) v.parameters = (it.parameters as JsonSchema[]).map(parameterPb);
      return { name: path, value: v };
    }) };
  }
  if (isObj(doc.definitions)) {
    pb.definitions = { additionalProperties: Object.entries(doc.definitions).map(([name, s]) => ({ name, value: schemaPb(s as JsonSchema) })) };
  }
  const t = documentType();
  // The plain object already has the declared field names and types: encode it directly.
  return t.encode(pb).finish();
}

/** Decodes a gnostic Document into plain data (tests; field names as declared above). */
export function decodeOpenApiV2(bytes: Uint8Array): Pb {
  const t = documentType();
  return t.toObject(t.decode(bytes), { defaults: false }) as Pb;
}

/**
 * OpenAPI schema objects generated from the schema registry (src/api/schema): one definition
 * per message reachable from the requested roots, named as Kubernetes names them
 * (`io.k8s.api.core.v1.Pod`). The same walk serves OpenAPI v3 (`#/components/schemas/`) and
 * v2 (`#/definitions/`); the two differ only in how a reference is written.
 */
import { META_PACKAGE, gvksOf, isListWrapper, schema, specialOf } from '../schema/registry.js';
import type { FieldDecl, MessageDecl, ScalarType, TypeRef } from '../schema/types.js';

/** A JSON Schema object as OpenAPI writes it. */
export type JsonSchema = { [key: string]: unknown };
export type OpenApiFlavor = 'v2' | 'v3';

/** 'k8s.io.api.core.v1.Pod' -> 'io.k8s.api.core.v1.Pod' (Kubernetes' definition names). */
export function definitionName(messageName: string): string {
  return messageName.startsWith('k8s.io.') ? `io.k8s.${messageName.slice('k8s.io.'.length)}` : messageName;
}

export function refPrefix(flavor: OpenApiFlavor): string {
  return flavor === 'v3' ? '#/components/schemas/' : '#/definitions/';
}

export function refTo(messageName: string, flavor: OpenApiFlavor): JsonSchema {
  return { $ref: refPrefix(flavor) + definitionName(messageName) };
}

const SCALARS: Readonly<Record<ScalarType, JsonSchema>> = {
  string: { type: 'string' },
  bool: { type: 'boolean' },
  int32: { type: 'integer', format: 'int32' },
  int64: { type: 'integer', format: 'int64' },
  uint32: { type: 'integer', format: 'int32' },
  uint64: { type: 'integer', format: 'int64' },
  double: { type: 'number', format: 'double' },
  float: { type: 'number', format: 'float' },
  bytes: { type: 'string', format: 'byte' },
};

function valueSchema(t: TypeRef, flavor: OpenApiFlavor): JsonSchema {
  if ('scalar' in t) return { ...SCALARS[t.scalar] };
  // Verbs / ExtraValue: plain string arrays in JSON, no definition of their own.
  if (isListWrapper(t.message)) return { type: 'array', items: { type: 'string' } };
  return refTo(t.message, flavor);
}

/** The schema of one field as it appears in its parent's `properties`. */
export function fieldSchema(f: FieldDecl, flavor: OpenApiFlavor): JsonSchema {
  let s = valueSchema(f.type, flavor);
  if (f.repeated && !f.map) s = { type: 'array', items: s };
  else if (f.map) s = { type: 'object', additionalProperties: s };
  if ('$ref' in s && f.description) {
    // A $ref has no siblings in OpenAPI 3.0; Kubernetes wraps it in allOf to keep the description.
    s = flavor === 'v3' ? { allOf: [s] } : { ...s };
  }
  if (f.description) s.description = f.description;
  if (f.enum?.length) {
    if (s.type === 'array') (s.items as JsonSchema).enum = [...f.enum];
    else s.enum = [...f.enum];
  }
  if (f.listType) s['x-kubernetes-list-type'] = f.listType;
  if (f.listMapKeys?.length) s['x-kubernetes-list-map-keys'] = [...f.listMapKeys];
  if (f.mapType) s['x-kubernetes-map-type'] = f.mapType;
  if (f.patchMergeKey) s['x-kubernetes-patch-merge-key'] = f.patchMergeKey;
  if (f.patchStrategy) s['x-kubernetes-patch-strategy'] = f.patchStrategy;
  return s;
}

/** Definitions of the types with their own JSON form. */
function specialSchema(messageName: string): JsonSchema | undefined {
  switch (specialOf(messageName)) {
    case 'Time': return { type: 'string', format: 'date-time', description: 'An RFC 3339 timestamp with second precision, serialized as a string.' };
    case 'MicroTime': return { type: 'string', format: 'date-time', description: 'An RFC 3339 timestamp with microsecond precision, serialized as a string.' };
    case 'Duration': return { type: 'string', description: 'A duration in Go\'s notation, such as "1m30s".' };
    case 'Quantity': return { type: 'string', description: 'A fixed-point number with an optional suffix, such as "100m", "2", "1Gi" or "1e3".' };
    case 'IntOrString': return { type: 'string', format: 'int-or-string', 'x-kubernetes-int-or-string': true, description: 'Either an integer or a string.' };
    case 'RawExtension': return { type: 'object', description: 'An embedded object of any kind.' };
    case 'FieldsV1': return { type: 'object', description: 'A set of fields in the fieldsV1 trie format.' };
    case 'JSON': return { description: 'Any JSON value.', 'x-kubernetes-preserve-unknown-fields': true };
    default: return undefined;
  }
}

const META = 'k8s.io.apimachinery.pkg.apis.meta.v1';
const TYPE_META_HOLDERS = new Set([`${META}.ObjectMeta`, `${META}.ListMeta`]);

/**
 * Whether the message's JSON carries apiVersion and kind (Go's inline TypeMeta, which protobuf
 * does not declare): served kinds, and objects with ObjectMeta/ListMeta metadata.
 */
export function hasTypeMeta(m: MessageDecl): boolean {
  if (gvksOf(m.name).length) return true;
  const md = m.fields.find((f) => f.name === 'metadata');
  return !!md && 'message' in md.type && TYPE_META_HOLDERS.has(md.type.message);
}

/** The definition of one message (inline members flattened into its properties). */
export function messageSchema(m: MessageDecl, flavor: OpenApiFlavor): JsonSchema {
  const special = specialSchema(m.name);
  if (special) return special;
  if (isListWrapper(m.name)) return { type: 'array', items: { type: 'string' } };
  const properties: Record<string, JsonSchema> = {};
  const required: string[] = [];
  const addFields = (decl: MessageDecl): void => {
    for (const f of decl.fields) {
      if (f.inline && 'message' in f.type) {
        const inner = schema.message(f.type.message);
        if (inner && !specialOf(inner.name)) { addFields(inner); continue; }
      }
      if (f.name in properties) continue;
      properties[f.name] = fieldSchema(f, flavor);
      if (f.required) required.push(f.name);
    }
  };
  if (hasTypeMeta(m)) {
    properties.apiVersion = { type: 'string', description: 'The versioned schema of this representation of an object.' };
    properties.kind = { type: 'string', description: 'The REST resource this object represents.' };
  }
  addFields(m);
  const out: JsonSchema = {};
  if (m.description) out.description = m.description;
  out.type = 'object';
  if (Object.keys(properties).length) out.properties = properties;
  if (required.length) out.required = required;
  const gvks = gvksOf(m.name);
  if (gvks.length) out['x-kubernetes-group-version-kind'] = gvks.map((g) => ({ group: g.group, kind: g.kind, version: g.version }));
  if (m.structType) out['x-kubernetes-map-type'] = m.structType;
  return out;
}

/** Message names referenced by a message's JSON form (through inline members too). */
function referencedMessages(m: MessageDecl): string[] {
  const out: string[] = [];
  const visit = (decl: MessageDecl): void => {
    for (const f of decl.fields) {
      if (!('message' in f.type)) continue;
      const name = f.type.message;
      if (f.inline && !specialOf(name)) {
        const inner = schema.message(name);
        if (inner) { visit(inner); continue; }
      }
      if (!isListWrapper(name)) out.push(name);
    }
  };
  if (!specialOf(m.name)) visit(m);
  return out;
}

/**
 * Every definition reachable from `roots` (message names), keyed by definition name in sorted
 * order. A referenced message the registry lacks gets an open object, so every $ref resolves.
 */
export function collectSchemas(roots: Iterable<string>, flavor: OpenApiFlavor, custom: ReadonlyMap<string, JsonSchema> = new Map()): Record<string, JsonSchema> {
  const seen = new Map<string, JsonSchema>(custom);
  const queue = [...roots];
  // Custom schemas (custom resources) refer to object and list metadata.
  if (custom.size) queue.push(`${META_PACKAGE}.ObjectMeta`, `${META_PACKAGE}.ListMeta`);
  while (queue.length) {
    const name = queue.pop()!;
    if (seen.has(name)) continue;
    const m = schema.message(name);
    if (!m) {
      seen.set(name, specialSchema(name) ?? { type: 'object', 'x-kubernetes-preserve-unknown-fields': true });
      continue;
    }
    seen.set(name, messageSchema(m, flavor));
    for (const r of referencedMessages(m)) if (!seen.has(r)) queue.push(r);
  }
  const out: Record<string, JsonSchema> = {};
  for (const name of [...seen.keys()].sort((a, b) => definitionName(a).localeCompare(definitionName(b)))) {
    out[definitionName(name)] = seen.get(name)!;
  }
  return out;
}

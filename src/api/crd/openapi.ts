/**
 * The schema the API server publishes for a custom resource kind in /openapi/v3 and /openapi/v2
 * (apiextensions' OpenAPI builder): the structural schema (example, externalDocs and unsupported
 * keywords dropped), x-kubernetes-int-or-string unfolded into anyOf [integer, string],
 * apiVersion/kind/metadata added at the root and to embedded resources, and the
 * x-kubernetes-group-version-kind extension. v2 cannot express nullable or the logical junctors,
 * so it drops allOf/anyOf/oneOf/not and leaves nullable or unknown-preserving nodes untyped, as
 * kubectl expects. All x-kubernetes-* extensions stay.
 */
import { cloneJson } from '../../util/json-clone.js';
import { isObj } from './schema-access.js';
import type { JSONSchemaProps } from './schema-types.js';

export type OpenApiSchema = Record<string, unknown>;

export interface GroupVersionKind {
  group: string;
  version: string;
  kind: string;
}

const OBJECT_META = 'io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta';
const API_VERSION = { type: 'string', description: 'The versioned schema of this representation of an object.' };
const KIND = { type: 'string', description: 'The REST resource this object represents.' };
const METADATA_DESCRIPTION = 'Standard object metadata.';

/** Keywords of the structural model, in the order they are written out. */
const KEPT = [
  'description', 'type', 'format', 'title', 'default', 'maximum', 'exclusiveMaximum', 'minimum', 'exclusiveMinimum',
  'maxLength', 'minLength', 'pattern', 'maxItems', 'minItems', 'uniqueItems', 'multipleOf', 'enum', 'maxProperties',
  'minProperties', 'required', 'items', 'allOf', 'oneOf', 'anyOf', 'not', 'properties', 'additionalProperties', 'nullable',
  'x-kubernetes-preserve-unknown-fields', 'x-kubernetes-embedded-resource', 'x-kubernetes-int-or-string',
  'x-kubernetes-list-map-keys', 'x-kubernetes-list-type', 'x-kubernetes-map-type', 'x-kubernetes-validations',
] as const;

/** A copy with only structural keywords and without zero values (Go's omitempty). */
function structural(s: JSONSchemaProps): OpenApiSchema {
  const out: OpenApiSchema = {};
  for (const k of KEPT) {
    const v: unknown = s[k];
    if (v === undefined || v === false || v === '' || (Array.isArray(v) && v.length === 0)) continue;
    if (k === 'items') { if (isObj(v)) out.items = structural(v as JSONSchemaProps); continue; }
    if (k === 'not') { if (isObj(v)) out.not = structural(v as JSONSchemaProps); continue; }
    if (k === 'allOf' || k === 'oneOf' || k === 'anyOf') {
      if (Array.isArray(v)) out[k] = v.filter(isObj).map((x) => structural(x as JSONSchemaProps));
      continue;
    }
    if (k === 'properties') {
      if (isObj(v)) out.properties = Object.fromEntries(Object.entries(v).filter(([, p]) => isObj(p)).map(([n, p]) => [n, structural(p as JSONSchemaProps)]));
      continue;
    }
    if (k === 'additionalProperties') { out[k] = isObj(v) ? structural(v as JSONSchemaProps) : v; continue; }
    out[k] = cloneJson(v);
  }
  return out;
}

/** Visits structural nodes (not those under junctors), parent first. */
function visit(s: OpenApiSchema, fn: (s: OpenApiSchema) => void): void {
  fn(s);
  if (isObj(s.items)) visit(s.items, fn);
  if (isObj(s.properties)) for (const p of Object.values(s.properties)) if (isObj(p)) visit(p, fn);
  if (isObj(s.additionalProperties)) visit(s.additionalProperties, fn);
}

const INT_OR_STRING = (): OpenApiSchema[] => [{ type: 'integer' }, { type: 'string' }];
const isIntOrStringPattern = (l: unknown): boolean =>
  Array.isArray(l) && l.length === 2 && [['integer', l[0]], ['string', l[1]]].every(([t, x]) => isObj(x) && Object.keys(x).length === 1 && x.type === t);

/** Spells x-kubernetes-int-or-string out as anyOf [integer, string] (kept under allOf when anyOf is taken). */
function unfoldIntOrString(s: OpenApiSchema): void {
  if (s['x-kubernetes-int-or-string'] !== true) return;
  const allOf = Array.isArray(s.allOf) ? s.allOf : [];
  if (isIntOrStringPattern(s.anyOf) || (isObj(allOf[0]) && isIntOrStringPattern(allOf[0].anyOf))) return;
  if (s.anyOf === undefined) s.anyOf = INT_OR_STRING();
  else s.allOf = [{ anyOf: INT_OR_STRING() }, ...allOf];
}

/** What OpenAPI v2 (and kubectl reading it) can cope with. */
function toV2Node(s: OpenApiSchema): void {
  delete s.allOf; delete s.oneOf; delete s.anyOf; delete s.not;
  if (s.nullable === true) {
    delete s.type; delete s.nullable; delete s.items; delete s.properties;
  }
  const preserve = s['x-kubernetes-preserve-unknown-fields'] === true;
  if (preserve) { delete s.items; delete s.properties; }
  if (s.items === undefined && s.type === 'array') delete s.type;
  if (preserve && s.type === 'object') delete s.type;
  // A nullable field may be sent as null, which v2 clients would count as missing.
  const nullable = (x: unknown): boolean => isObj(x) && x.nullable === true;
  if (Array.isArray(s.required) && isObj(s.properties)) {
    const props = s.properties;
    const kept = s.required.filter((r) => !nullable(props[String(r)]));
    if (kept.length) s.required = kept; else delete s.required;
  }
  if (nullable(s.additionalProperties)) delete s.required;
}

function metadataRef(v2: boolean): OpenApiSchema {
  const ref = `${v2 ? '#/definitions/' : '#/components/schemas/'}${OBJECT_META}`;
  // OpenAPI 3.0 gives a $ref no siblings, so v3 wraps it to keep the description.
  return v2 ? { $ref: ref, description: METADATA_DESCRIPTION } : { allOf: [{ $ref: ref }], description: METADATA_DESCRIPTION };
}

function setProperty(s: OpenApiSchema, name: string, value: OpenApiSchema): void {
  s.properties = { ...(isObj(s.properties) ? s.properties : {}), [name]: value };
}

/** apiVersion, kind and metadata for every embedded resource (kind and apiVersion required). */
function addEmbeddedProperties(s: OpenApiSchema, v2: boolean): void {
  if (isObj(s.properties)) for (const p of Object.values(s.properties)) if (isObj(p)) addEmbeddedProperties(p, v2);
  if (isObj(s.items)) addEmbeddedProperties(s.items, v2);
  if (isObj(s.additionalProperties)) addEmbeddedProperties(s.additionalProperties, v2);
  if (v2 && s['x-kubernetes-preserve-unknown-fields'] === true) return;
  if (s['x-kubernetes-embedded-resource'] !== true) return;
  setProperty(s, 'apiVersion', { ...API_VERSION });
  setProperty(s, 'kind', { ...KIND });
  setProperty(s, 'metadata', metadataRef(v2));
  const required = Array.isArray(s.required) ? [...s.required] : [];
  for (const r of ['kind', 'apiVersion']) if (!required.includes(r)) required.push(r);
  s.required = required;
}

function build(schema: JSONSchemaProps | undefined, gvk: GroupVersionKind | undefined, v2: boolean): OpenApiSchema {
  let out: OpenApiSchema;
  if (!schema || (v2 && schema['x-kubernetes-preserve-unknown-fields'] === true)) {
    // kubectl would take listed properties as all there is, so an open object lists none.
    out = { type: 'object' };
  } else {
    out = structural(schema);
    visit(out, unfoldIntOrString);
    if (v2) visit(out, toV2Node);
    setProperty(out, 'metadata', metadataRef(v2));
    setProperty(out, 'apiVersion', { ...API_VERSION });
    setProperty(out, 'kind', { ...KIND });
    addEmbeddedProperties(out, v2);
  }
  if (gvk) out['x-kubernetes-group-version-kind'] = [{ group: gvk.group, kind: gvk.kind, version: gvk.version }];
  return out;
}

/** The definition published in /openapi/v3 for the kind (a new object; the input is not changed). */
export function toOpenApiV3(schema: JSONSchemaProps | undefined, gvk?: GroupVersionKind): OpenApiSchema {
  return build(schema, gvk, false);
}

/** The definition published in /openapi/v2 for the kind (a new object; the input is not changed). */
export function toOpenApiV2(schema: JSONSchemaProps | undefined, gvk?: GroupVersionKind): OpenApiSchema {
  return build(schema, gvk, true);
}

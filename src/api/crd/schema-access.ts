/**
 * Safe reading of a JSONSchemaProps that came from a client: a keyword of the wrong shape reads
 * as absent, so the algorithms never crash on malformed input. Also Kubernetes' field-path
 * builders (field.Path: `.child`, `[key]`, `[index]`).
 */
import type { JSONSchemaProps } from './schema-types.js';

export type JsonObject = Record<string, unknown>;

export function isObj(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The schema a keyword holds, when it holds one. */
export function schemaAt(v: unknown): JSONSchemaProps | undefined {
  return isObj(v) ? (v as JSONSchemaProps) : undefined;
}

/** `properties` (or another map of schemas) as [name, schema] pairs, in declaration order. */
export function schemaEntries(v: unknown): Array<[string, JSONSchemaProps]> {
  if (!isObj(v)) return [];
  return Object.entries(v).filter((e): e is [string, JSONSchemaProps] => isObj(e[1]));
}

export function property(s: JSONSchemaProps | undefined, name: string): JSONSchemaProps | undefined {
  const props = s?.properties;
  return isObj(props) && Object.hasOwn(props, name) ? schemaAt(props[name]) : undefined;
}

export function hasProperties(s: JSONSchemaProps): boolean {
  return isObj(s.properties) && Object.keys(s.properties).length > 0;
}

/** The items schema (undefined for a missing or array-form `items`). */
export function itemsOf(s: JSONSchemaProps | undefined): JSONSchemaProps | undefined {
  return schemaAt(s?.items);
}

/** A list of schemas (allOf/anyOf/oneOf). */
export function schemaList(v: unknown): JSONSchemaProps[] {
  return Array.isArray(v) ? v.filter(isObj) as JSONSchemaProps[] : [];
}

/** additionalProperties: undefined when absent, a boolean, or a schema. */
export function additionalOf(s: JSONSchemaProps | undefined): JSONSchemaProps | boolean | undefined {
  const a = s?.additionalProperties;
  return typeof a === 'boolean' ? a : schemaAt(a);
}

/** The schema that applies to a map value under additionalProperties (none for the bool form). */
export function additionalSchema(s: JSONSchemaProps | undefined): JSONSchemaProps | undefined {
  const a = additionalOf(s);
  return typeof a === 'boolean' ? undefined : a;
}

export function typeOf(s: JSONSchemaProps | undefined): string {
  return typeof s?.type === 'string' ? s.type : '';
}

export const preservesUnknown = (s: JSONSchemaProps | undefined): boolean => s?.['x-kubernetes-preserve-unknown-fields'] === true;
export const isEmbedded = (s: JSONSchemaProps | undefined): boolean => s?.['x-kubernetes-embedded-resource'] === true;
export const isIntOrString = (s: JSONSchemaProps | undefined): boolean => s?.['x-kubernetes-int-or-string'] === true;
export const isNullable = (s: JSONSchemaProps | undefined): boolean => s?.nullable === true;

export function stringList(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

/** field.Path.Child: `a.b` (or `b` at the root). */
export function child(path: string, name: string): string {
  return path ? `${path}.${name}` : name;
}
/** field.Path.Key: `a[key]`. */
export function key(path: string, k: string): string {
  return `${path}[${k}]`;
}
/** field.Path.Index: `a[0]`. */
export function index(path: string, i: number): string {
  return `${path}[${i}]`;
}

/** Names the JSON kind of a value the way Go's encoding/json errors do. */
export function jsonKind(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'object') return 'object';
  return typeof v === 'boolean' ? 'bool' : typeof v;
}

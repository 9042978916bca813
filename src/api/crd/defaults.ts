/**
 * Structural defaulting of custom objects, as the API server applies it after pruning (on
 * requests and when reading from storage). First nulls in non-nullable fields without a default
 * are dropped (they mean "unset"); then every absent field, and every null in a non-nullable
 * field, that has a `default` gets a deep copy of it, recursively through objects, array items
 * and map values (additionalProperties), including inside freshly defaulted values.
 */
import { cloneJson } from '../../util/json-clone.js';
import { additionalSchema, isNullable, isObj, property, schemaAt, schemaEntries, type JsonObject } from './schema-access.js';
import type { JSONSchemaProps } from './schema-types.js';

/** Applies the schema's defaults to `value` in place. */
export function applyDefaults(value: unknown, schema: JSONSchemaProps | undefined): void {
  pruneNulls(value, schema);
  fill(value, schema);
}

const nonNullableNull = (x: unknown, s: JSONSchemaProps | undefined): boolean => x === null && !!s && !isNullable(s);

/** The schema for the value under key `k` of an object with schema `s`. */
function fieldSchema(s: JSONSchemaProps | undefined, k: string): JSONSchemaProps | undefined {
  return property(s, k) ?? additionalSchema(s);
}

function pruneNulls(x: unknown, s: JSONSchemaProps | undefined): void {
  if (Array.isArray(x)) {
    const items = schemaAt(s?.items);
    for (const v of x) pruneNulls(v, items);
  } else if (isObj(x)) {
    for (const [k, v] of Object.entries(x)) {
      const fs = fieldSchema(s, k);
      if (nonNullableNull(v, fs) && fs!.default === undefined) delete x[k];
      else pruneNulls(v, fs);
    }
  }
}

function fill(x: unknown, s: JSONSchemaProps | undefined): void {
  if (!s) return;
  if (Array.isArray(x)) {
    const items = schemaAt(s.items);
    x.forEach((v, i) => {
      if (nonNullableNull(v, items) && items!.default !== undefined) x[i] = cloneJson(items!.default);
      fill(x[i], items);
    });
    return;
  }
  if (!isObj(x)) return;
  for (const [k, p] of schemaEntries(s.properties)) {
    if (p.default === undefined) continue;
    if (!Object.hasOwn(x, k) || nonNullableNull(x[k], p)) setOwn(x, k, cloneJson(p.default));
  }
  const additional = additionalSchema(s);
  for (const k of Object.keys(x)) {
    const p = property(s, k);
    if (p) { fill(x[k], p); continue; }
    if (s.additionalProperties === undefined) continue;
    if (nonNullableNull(x[k], additional) && additional!.default !== undefined) setOwn(x, k, cloneJson(additional!.default));
    fill(x[k], additional);
  }
}

/** Sets an own property, even one named "__proto__". */
function setOwn(o: JsonObject, k: string, v: unknown): void {
  Object.defineProperty(o, k, { value: v, writable: true, enumerable: true, configurable: true });
}

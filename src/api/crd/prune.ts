/**
 * Pruning of fields a structural schema does not specify (Kubernetes' pruning algorithm):
 * unknown object fields are deleted, except under x-kubernetes-preserve-unknown-fields, in
 * maps (additionalProperties) and the apiVersion/kind/metadata of the object itself and of
 * embedded resources. The pruned paths ('spec.foo', 'spec.items[0].bar') come back sorted so the
 * server can report `unknown field "spec.foo"` for fieldValidation=Warn/Strict.
 */
import { additionalOf, isEmbedded, isObj, preservesUnknown, property, type JsonObject } from './schema-access.js';
import type { JSONSchemaProps } from './schema-types.js';

const META_FIELDS = new Set(['apiVersion', 'kind', 'metadata']);

export interface PruneOptions {
  /** The value is a whole object, whose apiVersion/kind/metadata are never pruned (default true). */
  isResourceRoot?: boolean;
}

/** Removes unspecified fields from `value` in place; returns their paths, sorted. */
export function prune(value: unknown, schema: JSONSchemaProps | undefined, opts: PruneOptions = {}): string[] {
  let s = schema ?? {};
  if ((opts.isResourceRoot ?? true) && !isEmbedded(s)) s = { ...s, 'x-kubernetes-embedded-resource': true };
  const pruned: string[] = [];
  walk(value, s, '', pruned);
  return pruned.sort();
}

const keyPath = (path: string, k: string): string => (path ? `${path}.${k}` : k);

/** A schema for a map value: additionalProperties' schema, or none (everything nested goes). */
function mapValueSchema(s: JSONSchemaProps): JSONSchemaProps | undefined {
  const a = additionalOf(s);
  return typeof a === 'object' ? a : undefined;
}

function walk(x: unknown, s: JSONSchemaProps | undefined, path: string, pruned: string[]): void {
  if (s && preservesUnknown(s)) { keepUnknown(x, s, path, pruned); return; }
  if (Array.isArray(x)) {
    const items = s && isObj(s.items) ? (s.items as JSONSchemaProps) : undefined;
    x.forEach((v, i) => walk(v, items, `${path}[${i}]`, pruned));
    return;
  }
  if (!isObj(x)) return;
  if (!s) {
    for (const k of Object.keys(x)) { pruned.push(keyPath(path, k)); delete x[k]; }
    return;
  }
  for (const k of Object.keys(x)) {
    if (isEmbedded(s) && META_FIELDS.has(k)) continue;
    const p = property(s, k);
    if (p) walk(x[k], p, keyPath(path, k), pruned);
    else if (additionalOf(s) !== undefined) walk(x[k], mapValueSchema(s), keyPath(path, k), pruned);
    else { pruned.push(keyPath(path, k)); delete (x as JsonObject)[k]; }
  }
}

/** Under x-kubernetes-preserve-unknown-fields unknown fields stay, but known ones are still pruned inside. */
function keepUnknown(x: unknown, s: JSONSchemaProps, path: string, pruned: string[]): void {
  if (Array.isArray(x)) {
    const items = isObj(s.items) ? (s.items as JSONSchemaProps) : undefined;
    if (items) x.forEach((v, i) => keepUnknown(v, items, `${path}[${i}]`, pruned));
    return;
  }
  if (!isObj(x)) return;
  for (const k of Object.keys(x)) {
    if (isEmbedded(s) && META_FIELDS.has(k)) continue;
    const p = property(s, k);
    if (p) walk(x[k], p, keyPath(path, k), pruned);
    else if (additionalOf(s) !== undefined) walk(x[k], mapValueSchema(s), keyPath(path, k), pruned);
  }
}

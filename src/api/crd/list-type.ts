/**
 * Uniqueness in lists declared x-kubernetes-list-type: set (whole items) and map (the
 * x-kubernetes-list-map-keys of each item), reported as Duplicate at the second occurrence,
 * as Kubernetes' listtype validation does for custom resources.
 */
import type { FieldError } from '../meta/status.js';
import { fe, goJson } from './field-errors.js';
import { additionalSchema, child, index, isObj, itemsOf, key, schemaEntries, stringList } from './schema-access.js';
import type { JSONSchemaProps } from './schema-types.js';

export function validateListSetsAndMaps(path: string, s: JSONSchemaProps | undefined, obj: unknown): FieldError[] {
  if (!s || !isObj(obj)) return [];
  const errs: FieldError[] = [];
  const additional = additionalSchema(s);
  if (additional) for (const [k, v] of Object.entries(obj)) errs.push(...visit(key(path, k), additional, v));
  const props = new Map(schemaEntries(s.properties));
  for (const [k, v] of Object.entries(obj)) {
    const p = props.get(k);
    if (p) errs.push(...visit(child(path, k), p, v));
  }
  return errs;
}

function visit(path: string, s: JSONSchemaProps, v: unknown): FieldError[] {
  if (Array.isArray(v)) return validateArray(path, s, v);
  return validateListSetsAndMaps(path, s, v);
}

function validateArray(path: string, s: JSONSchemaProps, list: unknown[]): FieldError[] {
  const errs: FieldError[] = [];
  if (s['x-kubernetes-list-type'] === 'set') {
    for (const i of repeated(list)) errs.push(fe.duplicate(index(path, i), list[i]));
  } else if (s['x-kubernetes-list-type'] === 'map') {
    errs.push(...validateListMap(path, stringList(s['x-kubernetes-list-map-keys']), list));
  }
  const items = itemsOf(s);
  if (items) list.forEach((v, i) => errs.push(...visit(index(path, i), items, v)));
  return errs;
}

/** Indices where an item is seen the second time (later repeats are not reported again). */
function repeated(list: unknown[], identity: (v: unknown) => string = goJson): number[] {
  const seen = new Map<string, number>();
  const out: number[] = [];
  list.forEach((v, i) => {
    const id = identity(v);
    const n = seen.get(id) ?? 0;
    if (n === 1) out.push(i);
    seen.set(id, n + 1);
  });
  return out;
}

function validateListMap(path: string, mapKeys: string[], list: unknown[]): FieldError[] {
  const notObject = list.findIndex((x) => x !== null && !isObj(x));
  if (notObject >= 0) return [fe.invalid(index(path, notObject), list[notObject], 'must be an object for an array of list-type map')];
  // An item without a key field counts as one more (unspecified) key value.
  const keys = list.map((x) => {
    const k: Record<string, unknown> = {};
    for (const f of mapKeys) if (isObj(x) && Object.hasOwn(x, f)) k[f] = x[f];
    return k;
  });
  const identity = (k: unknown): string => (isObj(k) && Object.keys(k).length === 0 ? '\u0000unspecified' : goJson(k));
  return repeated(keys, identity).map((i) => fe.duplicate(index(path, i), keys[i]));
}

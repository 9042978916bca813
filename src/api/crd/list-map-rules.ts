/**
 * CRD-creation checks of x-kubernetes-list-type, x-kubernetes-list-map-keys and
 * x-kubernetes-map-type on one schema node (Kubernetes' apiextensions validation): sets and
 * maps need atomic or keyed items, map keys must be scalar, required-or-defaulted, non-nullable
 * properties of the items.
 */
import type { FieldError } from '../meta/status.js';
import { fe } from './field-errors.js';
import { child, isNullable, itemsOf, key, property, stringList, typeOf } from './schema-access.js';
import type { JSONSchemaProps } from './schema-types.js';

export function validateListAndMapTypes(s: JSONSchemaProps, path: string): FieldError[] {
  const errs: FieldError[] = [];
  const type = typeOf(s);
  const listType = s['x-kubernetes-list-type'];
  const mapType = s['x-kubernetes-map-type'];
  const mapKeys = stringList(s['x-kubernetes-list-map-keys']);
  const items = itemsOf(s);
  const at = (f: string): string => child(path, f);

  if (mapType !== undefined && type !== 'object') {
    errs.push(type === '' ? fe.required(at('type'), 'must be object if x-kubernetes-map-type is specified')
      : fe.invalid(at('type'), type, 'must be object if x-kubernetes-map-type is specified'));
  }
  if (mapType !== undefined && mapType !== 'atomic' && mapType !== 'granular') {
    errs.push(fe.notSupported(at('x-kubernetes-map-type'), mapType, ['atomic', 'granular']));
  }
  if (listType !== undefined && type !== 'array') {
    errs.push(type === '' ? fe.required(at('type'), 'must be array if x-kubernetes-list-type is specified')
      : fe.invalid(at('type'), type, 'must be array if x-kubernetes-list-type is specified'));
  } else if (listType === 'set' && items) {
    // Set elements are compared whole, so they must be atomic themselves.
    const itemListType = items['x-kubernetes-list-type'];
    if (typeOf(items) === 'array' && itemListType !== undefined && itemListType !== 'atomic') {
      errs.push(fe.invalid(child(at('items'), 'x-kubernetes-list-type'), itemListType, 'must be atomic as item of a list with x-kubernetes-list-type=set'));
    }
    if (typeOf(items) === 'object' && items['x-kubernetes-map-type'] !== 'atomic') {
      errs.push(fe.invalid(child(at('items'), 'x-kubernetes-map-type'), itemListType ?? 'null', 'must be atomic as item of a list with x-kubernetes-list-type=set'));
    }
  }
  if (listType !== undefined && listType !== 'atomic' && listType !== 'set' && listType !== 'map') {
    errs.push(fe.notSupported(at('x-kubernetes-list-type'), listType, ['atomic', 'set', 'map']));
  }
  if (mapKeys.length > 0) {
    if (listType === undefined) errs.push(fe.required(at('x-kubernetes-list-type'), 'must be map if x-kubernetes-list-map-keys is non-empty'));
    else if (listType !== 'map') errs.push(fe.invalid(at('x-kubernetes-list-type'), listType, 'must be map if x-kubernetes-list-map-keys is non-empty'));
  }
  if (listType === 'map') errs.push(...mapListRules(s, path, mapKeys));
  if ((listType === 'set' || listType === 'map') && items) errs.push(...keyedItemRules(items, listType, mapKeys, at('items')));
  return errs;
}

function mapListRules(s: JSONSchemaProps, path: string, mapKeys: string[]): FieldError[] {
  const errs: FieldError[] = [];
  const at = (f: string): string => child(path, f);
  if (mapKeys.length === 0) errs.push(fe.required(at('x-kubernetes-list-map-keys'), 'must not be empty if x-kubernetes-list-type is map'));
  if (s.items === undefined) errs.push(fe.required(at('items'), 'must have a schema if x-kubernetes-list-type is map'));
  if (Array.isArray(s.items)) errs.push(fe.invalid(at('items'), s.items, 'must only have a single schema if x-kubernetes-list-type is map'));
  const items = itemsOf(s);
  if (!items) return errs;
  if (typeOf(items) !== 'object') {
    errs.push(fe.invalid(child(at('items'), 'type'), typeOf(items), "must be object if parent array's x-kubernetes-list-type is map"));
    return errs;
  }
  const seen = new Set<string>();
  for (const k of mapKeys) {
    const p = property(items, k);
    if (!p) errs.push(fe.invalid(at('x-kubernetes-list-map-keys'), mapKeys, 'entries must all be names of item properties'));
    else if (typeOf(p) === 'array' || typeOf(p) === 'object') {
      errs.push(fe.invalid(child(key(child(at('items'), 'properties'), k), 'type'), typeOf(items), "must be a scalar type if parent array's x-kubernetes-list-type is map"));
    }
    if (seen.has(k)) errs.push(fe.invalid(at('x-kubernetes-list-map-keys'), mapKeys, 'must not contain duplicate entries'));
    seen.add(k);
  }
  return errs;
}

/** Items of set and map lists are identified by value or key, so neither may be null. */
function keyedItemRules(items: JSONSchemaProps, listType: string, mapKeys: string[], at: string): FieldError[] {
  const errs: FieldError[] = [];
  if (isNullable(items)) errs.push(fe.forbidden(child(at, 'nullable'), `cannot be nullable when x-kubernetes-list-type is ${listType}`));
  if (listType !== 'map') return errs;
  const required = new Set(stringList(items.required));
  for (const k of mapKeys) {
    const p = property(items, k);
    if (!p) continue;
    const propAt = key(child(at, 'properties'), k);
    if (!required.has(k) && p.default === undefined) {
      errs.push(fe.required(child(propAt, 'default'), 'this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property'));
    }
    if (isNullable(p)) errs.push(fe.forbidden(child(propAt, 'nullable'), 'this property is in x-kubernetes-list-map-keys, so it cannot be nullable'));
  }
  return errs;
}

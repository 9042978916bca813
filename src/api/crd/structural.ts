/**
 * The structural-schema rules apiextensions v1 enforces on every CRD version (Kubernetes'
 * ValidateStructural): every specified node has a type, value validations (allOf, anyOf, oneOf,
 * not) only restrict what the structure already declares, metadata at the root only restricts
 * name and generateName, and the x-kubernetes-* extensions combine sensibly.
 */
import type { FieldError } from '../meta/status.js';
import { fe, sortByText } from './field-errors.js';
import { compileGoRegexp } from './go-regexp.js';
import {
  additionalOf, child, hasProperties, isEmbedded, isIntOrString, isObj, itemsOf, key, preservesUnknown,
  property, schemaAt, schemaEntries, schemaList, typeOf, index,
} from './schema-access.js';
import type { JSONSchemaProps } from './schema-types.js';

type Level = 'root' | 'item' | 'field';

/** Structural-schema errors of a version's openAPIV3Schema at `path`, sorted as Kubernetes sorts them. */
export function validateStructural(s: JSONSchemaProps, path: string): FieldError[] {
  const errs = [...invariants(s, 'root', path), ...completeness(s, s, path, path)];
  return sortByText(errs);
}

function invariants(s: JSONSchemaProps | undefined, lvl: Level, path: string): FieldError[] {
  if (!s) return [];
  const errs: FieldError[] = [];
  const type = typeOf(s);
  const items = itemsOf(s);
  if (type === 'array' && s.items === undefined) errs.push(fe.required(child(path, 'items'), 'must be specified'));
  errs.push(...invariants(items, 'item', child(path, 'items')));
  for (const [k, p] of schemaEntries(s.properties)) errs.push(...invariants(p, 'field', key(child(path, 'properties'), k)));
  const additional = additionalOf(s);
  if (additional !== undefined) {
    if (lvl === 'root') errs.push(fe.forbidden(child(path, 'additionalProperties'), 'must not be used at the root'));
    if (typeof additional !== 'boolean') errs.push(...invariants(additional, 'field', child(path, 'additionalProperties')));
  }
  if (isIntOrString(s) && preservesUnknown(s)) {
    errs.push(fe.invalid(child(path, 'x-kubernetes-preserve-unknown-fields'), true, 'must be false if x-kubernetes-int-or-string is true'));
  }
  if (isIntOrString(s) && isEmbedded(s)) {
    errs.push(fe.invalid(child(path, 'x-kubernetes-embedded-resource'), true, 'must be false if x-kubernetes-int-or-string is true'));
  }
  errs.push(...valueValidation(s, isIntOrStringAnyOf(s.anyOf), isIntOrStringAllOf(s), lvl, path));

  const checkMetadata = lvl === 'root' || isEmbedded(s);
  if (isEmbedded(s) && type !== 'object') {
    errs.push(type === ''
      ? fe.required(child(path, 'type'), 'must be object if x-kubernetes-embedded-resource is true')
      : fe.invalid(child(path, 'type'), type, 'must be object if x-kubernetes-embedded-resource is true'));
  } else if (type === '' && !isIntOrString(s) && !preservesUnknown(s)) {
    const why = lvl === 'root' ? 'must not be empty at the root'
      : lvl === 'item' ? 'must not be empty for specified array items' : 'must not be empty for specified object fields';
    errs.push(fe.required(child(path, 'type'), why));
  }
  if (isEmbedded(s) && additional !== undefined) {
    errs.push(fe.forbidden(child(path, 'additionalProperties'), 'must not be used if x-kubernetes-embedded-resource is set'));
  }
  if (lvl === 'root' && type !== '' && type !== 'object') errs.push(fe.invalid(child(path, 'type'), type, 'must be object at the root'));
  const props = child(path, 'properties');
  for (const name of ['kind', 'apiVersion']) {
    const p = property(s, name);
    if (p && checkMetadata && typeOf(p) !== 'string') errs.push(fe.invalid(child(key(props, name), 'type'), typeOf(p), 'must be string'));
  }
  const metadata = property(s, 'metadata');
  if (metadata) {
    const at = key(props, 'metadata');
    if (checkMetadata && typeOf(metadata) !== 'object') errs.push(fe.invalid(child(at, 'type'), typeOf(metadata), 'must be object'));
    if (lvl === 'root' && !restrictsOnlyNames(metadata)) {
      errs.push(fe.forbidden(at, 'must not specify anything other than name and generateName, but metadata is implicitly specified'));
    }
  }
  if (isEmbedded(s) && !preservesUnknown(s) && !hasProperties(s)) {
    errs.push(fe.required(child(path, 'properties'), 'must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields'));
  }
  return errs;
}

/** Whether root metadata's schema says nothing beyond a type, a default and name/generateName rules. */
function restrictsOnlyNames(m: JSONSchemaProps): boolean {
  // example and externalDocs are not part of the structural model (Kubernetes drops them).
  const ignored = new Set(['type', 'default', 'example', 'externalDocs', 'properties']);
  for (const [k, v] of Object.entries(m)) {
    if (ignored.has(k) || v === undefined || v === false || v === '') continue;
    if (k === 'enum' && Array.isArray(v) && v.length === 0) continue;
    return false;
  }
  const names = isObj(m.properties) ? Object.keys(m.properties) : [];
  const rest = names.filter((n) => n !== 'name' && n !== 'generateName');
  return rest.length === 0;
}

/** The anyOf that x-kubernetes-int-or-string may carry: exactly [{type: integer}, {type: string}]. */
function isIntOrStringAnyOf(anyOf: unknown): boolean {
  const l = Array.isArray(anyOf) ? anyOf : [];
  const only = (x: unknown, t: string): boolean => isObj(x) && Object.keys(x).length === 1 && x.type === t;
  return l.length === 2 && only(l[0], 'integer') && only(l[1], 'string');
}
function isIntOrStringAllOf(s: JSONSchemaProps): boolean {
  const first = schemaList(s.allOf)[0];
  return !!first && isIntOrStringAnyOf(first.anyOf);
}

function valueValidation(s: JSONSchemaProps, skipAnyOf: boolean, skipFirstAllOfAnyOf: boolean, lvl: Level, path: string): FieldError[] {
  const errs: FieldError[] = [];
  if (!skipAnyOf) schemaList(s.anyOf).forEach((x, i) => errs.push(...nested(x, false, lvl, index(child(path, 'anyOf'), i))));
  schemaList(s.allOf).forEach((x, i) => errs.push(...nested(x, skipFirstAllOfAnyOf && i === 0, lvl, index(child(path, 'allOf'), i))));
  schemaList(s.oneOf).forEach((x, i) => errs.push(...nested(x, false, lvl, index(child(path, 'oneOf'), i))));
  const not = schemaAt(s.not);
  if (not) errs.push(...nested(not, false, lvl, child(path, 'not')));
  if (typeof s.pattern === 'string' && s.pattern !== '') {
    const c = compileGoRegexp(s.pattern);
    if (c.error) errs.push(fe.invalid(child(path, 'pattern'), s.pattern, `must be a valid regular expression, but isn't: ${c.error}`));
  }
  return errs;
}

/** A schema under a logical junctor: it may only restrict values, never declare structure. */
function nested(v: JSONSchemaProps, skipAnyOf: boolean, lvl: Level, path: string): FieldError[] {
  const errs = valueValidation(v, skipAnyOf, false, lvl, path);
  const items = itemsOf(v);
  if (items) errs.push(...nested(items, false, lvl, child(path, 'items')));
  for (const [k, p] of schemaEntries(v.properties)) errs.push(...nested(p, false, 'field', key(child(path, 'properties'), k)));
  const mustBe = (field: string, what: string): void => { errs.push(fe.forbidden(child(path, field), `must be ${what} to be structural`)); };
  if (typeOf(v) !== '') mustBe('type', 'empty');
  if (v.additionalProperties !== undefined) mustBe('additionalProperties', 'undefined');
  if (v.default !== undefined) mustBe('default', 'undefined');
  if (v.title) mustBe('title', 'empty');
  if (v.description) mustBe('description', 'empty');
  if (v.nullable === true) mustBe('nullable', 'false');
  if (preservesUnknown(v)) mustBe('x-kubernetes-preserve-unknown-fields', 'false');
  if (isEmbedded(v)) mustBe('x-kubernetes-embedded-resource', 'false');
  if (isIntOrString(v)) mustBe('x-kubernetes-int-or-string', 'false');
  if (Array.isArray(v['x-kubernetes-list-map-keys']) && v['x-kubernetes-list-map-keys'].length) mustBe('x-kubernetes-list-map-keys', 'empty');
  if (v['x-kubernetes-list-type'] !== undefined) mustBe('x-kubernetes-list-type', 'undefined');
  if (v['x-kubernetes-map-type'] !== undefined) mustBe('x-kubernetes-map-type', 'undefined');
  if (Array.isArray(v['x-kubernetes-validations']) && v['x-kubernetes-validations'].length) mustBe('x-kubernetes-validations', 'empty');
  if (property(v, 'metadata')) errs.push(fe.forbidden(key(child(path, 'properties'), 'metadata'), 'must not be specified in a nested context'));
  return errs;
}

/** Every field or item a value validation mentions must also be specified outside of it. */
function completeness(v: JSONSchemaProps, s: JSONSchemaProps, sPath: string, vPath: string): FieldError[] {
  const errs: FieldError[] = [];
  const not = schemaAt(v.not);
  if (not) errs.push(...nestedCompleteness(not, s, sPath, child(vPath, 'not')));
  schemaList(v.allOf).forEach((x, i) => errs.push(...nestedCompleteness(x, s, sPath, index(child(vPath, 'allOf'), i))));
  schemaList(v.anyOf).forEach((x, i) => errs.push(...nestedCompleteness(x, s, sPath, index(child(vPath, 'anyOf'), i))));
  schemaList(v.oneOf).forEach((x, i) => errs.push(...nestedCompleteness(x, s, sPath, index(child(vPath, 'oneOf'), i))));
  return errs;
}

function nestedCompleteness(v: JSONSchemaProps, s: JSONSchemaProps | undefined, sPath: string, vPath: string): FieldError[] {
  if (!s) return [fe.required(sPath, `because it is defined in ${vPath}`)];
  const errs = completeness(v, s, sPath, vPath);
  const vItems = itemsOf(v);
  if (vItems) errs.push(...nestedCompleteness(vItems, itemsOf(s), child(sPath, 'items'), child(vPath, 'items')));
  for (const [k, p] of schemaEntries(v.properties)) {
    const sProp = property(s, k);
    const sAt = key(child(sPath, 'properties'), k);
    const vAt = key(child(vPath, 'properties'), k);
    errs.push(...(sProp ? nestedCompleteness(p, sProp, sAt, vAt) : [fe.required(sAt, `because it is defined in ${vAt}`)]));
  }
  return errs;
}

/**
 * Why Kubernetes cannot even build the structural form of a schema (keywords it does not
 * support anywhere), or undefined. Validation reports these only when nothing else is wrong.
 */
export function structuralBuildError(s: JSONSchemaProps): string | undefined {
  const unsupported: Array<[keyof JSONSchemaProps, string]> = [
    ['id', 'id'], ['$schema', 'schema'], ['$ref', '$ref'], ['patternProperties', 'patternProperties'],
    ['dependencies', 'dependencies'], ['additionalItems', 'additionalItems'], ['definitions', 'definitions'],
  ];
  for (const [field, name] of unsupported) {
    const v = s[field];
    const present = field === 'additionalItems' ? v !== undefined : isObj(v) ? Object.keys(v).length > 0 : !!v;
    if (present) return `OpenAPIV3Schema '${name}' is not supported`;
  }
  const not = schemaAt(s.not);
  const children = [...(not ? [not] : []), ...schemaList(s.allOf), ...schemaList(s.anyOf), ...schemaList(s.oneOf)];
  const additional = additionalOf(s);
  if (typeof additional === 'object') children.push(additional);
  for (const c of children) {
    const e = structuralBuildError(c);
    if (e) return e;
  }
  if (s['x-kubernetes-preserve-unknown-fields'] === false) return "internal error: 'x-kubernetes-preserve-unknown-fields' must be true or undefined";
  if (Array.isArray(s.items) && s.items.length > 0) return "OpenAPIV3Schema 'items' must be a schema, but is an array";
  const items = itemsOf(s);
  if (items) {
    const e = structuralBuildError(items);
    if (e) return e;
  }
  for (const [, p] of schemaEntries(s.properties)) {
    const e = structuralBuildError(p);
    if (e) return e;
  }
  return undefined;
}

/**
 * The keyword-level CRD-creation checks of an OpenAPI v3 schema (Kubernetes'
 * ValidateCustomResourceDefinitionOpenAPISchema with the v3 standard validator): keywords
 * apiextensions v1 does not support, types, uniqueItems, properties versus additionalProperties,
 * defaults where they cannot apply (TypeMeta/ObjectMeta at the root, maps inside metadata),
 * then the list/map-type and validation-rule checks of each node.
 */
import type { FieldError } from '../meta/status.js';
import { fe } from './field-errors.js';
import { validateListAndMapTypes } from './list-map-rules.js';
import {
  additionalOf, child, hasProperties, index, isEmbedded, isObj, itemsOf, key, schemaAt, schemaEntries, schemaList, typeOf,
} from './schema-access.js';
import type { JSONSchemaProps } from './schema-types.js';
import { validateValidationRules } from './validation-rules.js';

const OPENAPI_V3_TYPES = ['array', 'boolean', 'integer', 'number', 'object', 'string'];
const META_FIELDS = new Set(['metadata', 'kind', 'apiVersion']);

interface Context {
  /** Why defaults are refused here ('' when they are allowed). */
  defaultsForbidden?: string;
  /** Inside TypeMeta/ObjectMeta of the root or of an embedded resource. */
  insideResourceMeta: boolean;
}

export function validateSchemaKeywords(s: JSONSchemaProps, path: string): FieldError[] {
  return walk(s, path, { insideResourceMeta: false }, true);
}

function walk(s: JSONSchemaProps, path: string, ctx: Context, isRoot: boolean): FieldError[] {
  const errs = keywordChecks(s, path, ctx);
  if (s.uniqueItems === true) {
    errs.push(fe.forbidden(child(path, 'uniqueItems'), 'uniqueItems cannot be set to true since the runtime complexity becomes quadratic'));
  }
  const additional = additionalOf(s);
  if (additional !== undefined) {
    // Kubernetes' convention: properties describe structs, additionalProperties maps; never both.
    if (hasProperties(s) && (additional === false || typeof additional === 'object')) {
      errs.push(fe.forbidden(child(path, 'additionalProperties'), 'additionalProperties and properties are mutual exclusive'));
    }
    if (typeof additional === 'object') {
      // Pruning a defaulted map key inside metadata would be ambiguous.
      const sub = ctx.insideResourceMeta ? { ...ctx, defaultsForbidden: 'inside additionalProperties applying to object metadata' } : ctx;
      errs.push(...walk(additional, child(path, 'additionalProperties'), sub, false));
    }
  }
  for (const [name, p] of schemaEntries(s.properties)) {
    let sub = ctx;
    if ((isRoot || isEmbedded(s)) && META_FIELDS.has(name)) {
      sub = { ...sub, insideResourceMeta: true };
      if (isRoot) sub = { ...sub, defaultsForbidden: `in top-level ${name}` };
    }
    errs.push(...walk(p, key(child(path, 'properties'), name), sub, false));
  }
  const not = schemaAt(s.not);
  if (not) errs.push(...walk(not, child(path, 'not'), ctx, false));
  for (const junctor of ['allOf', 'oneOf', 'anyOf'] as const) {
    schemaList(s[junctor]).forEach((x, i) => errs.push(...walk(x, index(child(path, junctor), i), ctx, false)));
  }
  for (const [name, d] of schemaEntries(s.definitions)) errs.push(...walk(d, key(child(path, 'definitions'), name), ctx, false));
  const items = itemsOf(s);
  if (items) errs.push(...walk(items, child(path, 'items'), ctx, false));
  if (Array.isArray(s.items)) schemaList(s.items).forEach((x, i) => errs.push(...walk(x, index(child(path, 'items'), i), ctx, false)));
  for (const [name, d] of schemaEntries(s.dependencies)) errs.push(...walk(d, key(child(path, 'dependencies'), name), ctx, false));
  if (s['x-kubernetes-preserve-unknown-fields'] === false) {
    errs.push(fe.invalid(child(path, 'x-kubernetes-preserve-unknown-fields'), false, 'must be true or undefined'));
  }
  errs.push(...validateListAndMapTypes(s, path), ...validateValidationRules(s, path));
  return errs;
}

/** The per-node checks of the OpenAPI v3 standard validator. */
function keywordChecks(s: JSONSchemaProps, path: string, ctx: Context): FieldError[] {
  const errs: FieldError[] = [];
  const at = (f: string): string => child(path, f);
  const type = typeOf(s);
  if (type !== '' && !OPENAPI_V3_TYPES.includes(type)) errs.push(fe.notSupported(at('type'), type, OPENAPI_V3_TYPES));
  if (s.default !== undefined && ctx.defaultsForbidden) errs.push(fe.forbidden(at('default'), `must not be set ${ctx.defaultsForbidden}`));
  if (s.id) errs.push(fe.forbidden(at('id'), 'id is not supported'));
  if (s.additionalItems !== undefined) errs.push(fe.forbidden(at('additionalItems'), 'additionalItems is not supported'));
  if (isObj(s.patternProperties) && Object.keys(s.patternProperties).length) errs.push(fe.forbidden(at('patternProperties'), 'patternProperties is not supported'));
  if (isObj(s.definitions) && Object.keys(s.definitions).length) errs.push(fe.forbidden(at('definitions'), 'definitions is not supported'));
  if (s.dependencies !== undefined) errs.push(fe.forbidden(at('dependencies'), 'dependencies is not supported'));
  if (s.$ref !== undefined) errs.push(fe.forbidden(at('$ref'), '$ref is not supported'));
  if (type === 'null') errs.push(fe.forbidden(at('type'), 'type cannot be set to null, use nullable as an alternative'));
  if (Array.isArray(s.items) && s.items.length) errs.push(fe.forbidden(at('items'), 'items must be a schema object and not an array'));
  if (ctx.insideResourceMeta && isEmbedded(s)) errs.push(fe.forbidden(at('x-kubernetes-embedded-resource'), 'must not be used inside of resource meta'));
  return errs;
}

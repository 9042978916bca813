/**
 * The checks of one CRD version's openAPIV3Schema when the CRD is created or updated, in
 * Kubernetes' order: the root rules of the status subresource, nullable at the root, the
 * structural-schema rules (or, once those hold, the defaults), then the keyword rules. A schema
 * Kubernetes cannot even read structurally (e.g. `$schema`) is reported only when nothing else is.
 */
import type { FieldError } from '../meta/status.js';
import { validateDefaults } from './default-validation.js';
import { fe } from './field-errors.js';
import { child } from './schema-access.js';
import { validateSchemaKeywords } from './schema-rules.js';
import type { JSONSchemaProps } from './schema-types.js';
import { structuralBuildError, validateStructural } from './structural.js';

export interface ValidateSchemaOptions {
  /** The version has the status subresource, which restricts the root's keywords. */
  statusSubresource?: boolean;
}

/** Errors of the schema at `path` (e.g. 'spec.versions[0].schema.openAPIV3Schema'). */
export function validateSchema(schema: JSONSchemaProps, path: string, opts: ValidateSchemaOptions = {}): FieldError[] {
  const errs: FieldError[] = [];
  if (opts.statusSubresource) errs.push(...statusRootRules(schema, path));
  if (schema.nullable === true) errs.push(fe.forbidden(child(path, 'nullable'), 'nullable cannot be true at the root'));
  const buildError = structuralBuildError(schema);
  if (!buildError) {
    const structural = validateStructural(schema, path);
    errs.push(...(structural.length ? structural : validateDefaults(schema, path)));
  }
  errs.push(...validateSchemaKeywords(schema, path));
  if (errs.length === 0 && buildError) errs.push(fe.invalid(path, '', buildError));
  return errs;
}

/** JSONSchemaProps' keywords in Go field order, with their Go names where the root allows them. */
const ROOT_KEYWORDS: Array<[keyof JSONSchemaProps, string | undefined]> = [
  ['id', undefined], ['$schema', undefined], ['$ref', undefined], ['description', 'Description'], ['type', 'Type'],
  ['format', 'Format'], ['title', 'Title'], ['default', undefined], ['maximum', 'Maximum'], ['exclusiveMaximum', 'ExclusiveMaximum'],
  ['minimum', 'Minimum'], ['exclusiveMinimum', 'ExclusiveMinimum'], ['maxLength', 'MaxLength'], ['minLength', 'MinLength'],
  ['pattern', 'Pattern'], ['maxItems', 'MaxItems'], ['minItems', 'MinItems'], ['uniqueItems', 'UniqueItems'],
  ['multipleOf', 'MultipleOf'], ['enum', undefined], ['maxProperties', undefined], ['minProperties', undefined],
  ['required', 'Required'], ['items', 'Items'], ['allOf', undefined], ['oneOf', undefined], ['anyOf', undefined], ['not', undefined],
  ['properties', 'Properties'], ['additionalProperties', undefined], ['patternProperties', undefined], ['dependencies', undefined],
  ['additionalItems', undefined], ['definitions', undefined], ['externalDocs', 'ExternalDocs'], ['example', 'Example'],
  ['nullable', undefined], ['x-kubernetes-preserve-unknown-fields', 'XPreserveUnknownFields'], ['x-kubernetes-embedded-resource', undefined],
  ['x-kubernetes-int-or-string', undefined], ['x-kubernetes-list-map-keys', undefined], ['x-kubernetes-list-type', undefined],
  ['x-kubernetes-map-type', undefined], ['x-kubernetes-validations', 'XValidations'],
];
const ALLOWED_AT_ROOT = ROOT_KEYWORDS.flatMap(([, go]) => (go ? [go] : []));

/**
 * With the status subresource, status is validated on its own as properties.status, so the
 * root may only hold keywords that survive that split. Reports the first offence, like Kubernetes.
 */
function statusRootRules(schema: JSONSchemaProps, path: string): FieldError[] {
  for (const [k, go] of ROOT_KEYWORDS) {
    const v = schema[k];
    // Go's zero values: unset pointers, false, "" (an explicitly empty list or map is not zero).
    if (v === undefined || v === false || v === '') continue;
    if (k === 'type') {
      if (v !== 'object') return [fe.invalid(child(path, 'type'), v, 'only "object" is allowed as the type at the root of the schema if the status subresource is enabled')];
      continue;
    }
    if (!go) return [fe.invalid(path, schema, `only [${ALLOWED_AT_ROOT.join(' ')}] fields are allowed at the root of the schema if the status subresource is enabled`)];
  }
  return [];
}

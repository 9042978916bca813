/**
 * Validation of a custom object (or a part of it) against its CRD schema, as the API server
 * does on create and update: kube-openapi schema validation, then the TypeMeta/ObjectMeta of
 * embedded resources, then set/map list uniqueness. The root's own ObjectMeta is left to the
 * API server (only what the schema says of metadata is checked here). CEL rules
 * (x-kubernetes-validations) are not evaluated.
 */
import type { FieldError } from '../meta/status.js';
import { validateEmbeddedResources } from './embedded-resource.js';
import { fe, goJson } from './field-errors.js';
import { validateListSetsAndMaps } from './list-type.js';
import { runSchema, type RawError, type Result } from './openapi-validator.js';
import type { JSONSchemaProps } from './schema-types.js';

/**
 * Validates `value` against `schema`. `path` says where the value sits in the object ('' for a
 * whole object, 'status' for its status): it prefixes both the error fields and the names
 * kube-openapi writes into messages (`status.replicas in body must be of type integer`).
 */
export function validateValue(value: unknown, schema: JSONSchemaProps, path = ''): FieldError[] {
  const result = runSchema(value, schema, path, { intOrStringTyped: true, stripUnsupportedFormats: true });
  return [
    ...toFieldErrors(result, ''),
    ...validateEmbeddedResources(value, schema, path),
    ...validateListSetsAndMaps(path, schema, value),
  ];
}

/**
 * kube-openapi results as Kubernetes reports them (kubeOpenAPIResultToFieldErrors): each error at
 * `fieldPrefix` + its name, composite (allOf/anyOf/oneOf/not) errors at `fieldPrefix` itself,
 * which prints as `<nil>` when empty.
 */
export function toFieldErrors(result: Result, fieldPrefix: string): FieldError[] {
  const root = fieldPrefix || '<nil>';
  return result.errors.map((e) => fieldError(e, root, fieldPrefix));
}

function fieldError(e: RawError, root: string, prefix: string): FieldError {
  const name = e.name.startsWith('.') ? e.name.slice(1) : e.name;
  const field = name === '' ? root : prefix ? `${prefix}.${name}` : name;
  switch (e.kind) {
    case 'required': return fe.required(field);
    case 'enum': return fe.notSupported(field, e.value, (e.values ?? []).map((v) => (typeof v === 'string' ? v : goJson(v))));
    case 'tooLong': return fe.tooLong(field, e.limit ?? -1);
    case 'tooMany': return fe.tooMany(field, e.actual ?? -1, e.limit ?? -1);
    case 'type': return fe.typeInvalid(field, e.value ?? '', e.message);
    case 'composite': return fe.invalid(root, '', e.message);
    default: return fe.invalid(field, e.value ?? '', e.message);
  }
}

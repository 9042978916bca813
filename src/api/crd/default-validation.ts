/**
 * Checks of `default` values when a CRD is written (Kubernetes' structural ValidateDefaults):
 * a default must survive pruning unchanged, carry valid TypeMeta/ObjectMeta where it is an
 * embedded resource, and validate against its own schema. Errors sit at `<node>.default`.
 * Defaults under additionalProperties are not followed, as in Kubernetes.
 */
import type { FieldError } from '../meta/status.js';
import { cloneJson } from '../../util/json-clone.js';
import { validateEmbeddedResources } from './embedded-resource.js';
import { fe } from './field-errors.js';
import { deepEqual, runSchema } from './openapi-validator.js';
import { prune } from './prune.js';
import { child, isEmbedded, itemsOf, key, schemaEntries } from './schema-access.js';
import type { JSONSchemaProps } from './schema-types.js';
import { toFieldErrors } from './validate-value.js';

const META_FIELDS = new Set(['apiVersion', 'kind', 'metadata']);

/** Validates every default in a (structurally valid) version schema at `path`. */
export function validateDefaults(schema: JSONSchemaProps, path: string): FieldError[] {
  // The schema's root is a resource: its TypeMeta/ObjectMeta are "meta" like an embedded resource's.
  return walk({ ...schema, 'x-kubernetes-embedded-resource': true }, path, false);
}

function walk(s: JSONSchemaProps, path: string, insideMeta: boolean): FieldError[] {
  if (isEmbedded(s)) insideMeta = false;
  const errs: FieldError[] = [];
  if (s.default !== undefined) errs.push(...checkDefault(s, child(path, 'default'), insideMeta));
  const items = itemsOf(s);
  if (items) errs.push(...walk(items, child(path, 'items'), insideMeta));
  for (const [k, p] of schemaEntries(s.properties)) {
    errs.push(...walk(p, key(child(path, 'properties'), k), insideMeta || (isEmbedded(s) && META_FIELDS.has(k))));
  }
  return errs;
}

function checkDefault(s: JSONSchemaProps, at: string, insideMeta: boolean): FieldError[] {
  const value = s.default;
  // Defaults are validated as kube-openapi sees the structural schema: every format kept,
  // x-kubernetes-int-or-string without an implied type.
  const schemaErrors = (): FieldError[] => toFieldErrors(runSchema(value, s, '', { intOrStringTyped: false, stripUnsupportedFormats: false }), at);
  if (insideMeta) return schemaErrors();
  const errs: FieldError[] = [];
  const pruned = cloneJson(value);
  prune(pruned, s, { isResourceRoot: isEmbedded(s) });
  if (!deepEqual(pruned, value)) errs.push(fe.invalid(at, value, 'must not have unknown fields'));
  const metaErrors = validateEmbeddedResources(value, s, at, isEmbedded(s));
  errs.push(...(metaErrors.length ? metaErrors : schemaErrors()));
  return errs;
}

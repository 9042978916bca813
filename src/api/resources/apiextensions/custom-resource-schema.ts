/**
 * What custom resources need of their CRD's schema, through the structural-schema library
 * (src/api/crd): pruning, defaulting, validation, printer-column cells and the published
 * OpenAPI form. Schemas arrive as the CRD's plain JSON.
 */
import { applyDefaults } from '../../crd/defaults.js';
import { toOpenApiV2, toOpenApiV3 } from '../../crd/openapi.js';
import { columnCell as crdColumnCell } from '../../crd/printer-columns.js';
import { prune } from '../../crd/prune.js';
import type { JSONSchemaProps } from '../../crd/schema-types.js';
import { validateValue } from '../../crd/validate-value.js';
import type { FieldError } from '../../meta/status.js';
import type { KubeObject, OpenApiSchema } from '../types.js';
import type { CrdPrinterColumn } from './crd-spec.js';

type Schema = Record<string, unknown>;
const props = (s: Schema): JSONSchemaProps => s as JSONSchemaProps;

/** Drops fields the schema does not declare; returns their paths ('spec.foo'). */
export function pruneObject(obj: KubeObject, schema: Schema): string[] {
  return prune(obj, props(schema));
}

/** Applies the schema's defaults to absent fields. */
export function defaultObject(obj: KubeObject, schema: Schema): void {
  applyDefaults(obj, props(schema));
}

/** Validates against the schema: 'all' of it, all but status ('spec'), or only 'status'. */
export function validateObject(obj: KubeObject, schema: Schema, part: 'all' | 'spec' | 'status'): FieldError[] {
  const s = props(schema);
  const statusSchema = (s.properties as Record<string, JSONSchemaProps> | undefined)?.status;
  if (part === 'status') return statusSchema && obj.status !== undefined ? validateValue(obj.status, statusSchema, 'status') : [];
  if (part === 'all' || !statusSchema) return validateValue(obj, s);
  // Status is validated by status writes; a main write carries the stored one unchanged.
  const { status: _status, ...rest } = obj;
  void _status;
  return validateValue(rest, s.required?.includes('status') ? { ...s, required: s.required.filter((r) => r !== 'status') } : s);
}

export function columnCell(obj: KubeObject, col: CrdPrinterColumn): unknown {
  return crdColumnCell(obj, col);
}

/** The kind's schema as /openapi/v3 or /openapi/v2 publish it. */
export function openApiOf(schema: Schema | undefined, flavor: 'v2' | 'v3', gvk: { group: string; version: string; kind: string }): OpenApiSchema {
  return flavor === 'v3' ? toOpenApiV3(schema && props(schema), gvk) : toOpenApiV2(schema && props(schema), gvk);
}

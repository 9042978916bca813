/**
 * fieldValidation=Strict|Warn|Ignore through the codec's strict checker (unknown fields,
 * duplicate JSON keys, wrong JSON types) against the schema declarations. Kinds without a
 * declaration are not checked.
 */
import { checkFields as strictCheck, fieldValidationOutcome, type FieldValidationMode } from '../../../api/codec/strict.js';
import { errors } from '../../../api/meta/status.js';
import { messageForObject, parseApiVersion, schema } from '../../../api/schema/registry.js';
import type { KubeObject, ResourceDefinition } from '../../../api/resources/types.js';

export type FieldValidation = FieldValidationMode;

export function parseFieldValidation(v: string | null): FieldValidation {
  if (v === null || v === '') return 'Warn';
  if (v === 'Strict' || v === 'Warn' || v === 'Ignore') return v;
  throw errors.badRequest(`fieldValidation must be one of "Ignore", "Warn", or "Strict", got: ${JSON.stringify(v)}`);
}

/**
 * Applies the policy: throws 400 (Strict, or wrong types), returns warnings for Warn. Kinds
 * without a declaration that prune their own unknown fields (custom resources, `def`) report
 * those.
 */
export function checkFields(policy: FieldValidation, obj: unknown, apiVersion: string, kind: string, rawJson?: Buffer | string, def?: ResourceDefinition): string[] {
  if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) return [];
  const msg = messageForObject(apiVersion, kind);
  if (!msg) {
    if (policy === 'Ignore' || !def?.unknownFields) return [];
    const unknown = def.unknownFields(obj as KubeObject);
    if (!unknown.length) return [];
    const messages = unknown.map((p) => `unknown field ${JSON.stringify(p)}`);
    return fieldValidationOutcome(policy, { unknown, duplicate: [], typeErrors: [], messages }, { kind, version: parseApiVersion(apiVersion).version }).warnings;
  }
  // Wrong JSON types are errors under every policy; duplicate keys only matter when they are
  // reported (Strict, Warn), so the raw-text scan is skipped under Ignore.
  const result = strictCheck(obj, msg, schema, rawJson !== undefined && policy !== 'Ignore' ? { rawJson } : NO_RAW);
  // A clean object (nearly every write) needs no outcome, nor the version for its messages.
  if (result.typeErrors.length === 0 && result.messages.length === 0) return [];
  return fieldValidationOutcome(policy, result, { kind, version: parseApiVersion(apiVersion).version }).warnings;
}

const NO_RAW: { rawJson?: Buffer | string } = Object.freeze({});

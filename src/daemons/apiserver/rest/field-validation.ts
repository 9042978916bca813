/**
 * fieldValidation=Strict|Warn|Ignore through the codec's strict checker (unknown fields,
 * duplicate JSON keys, wrong JSON types) against the schema declarations, and the dropping of
 * unknown fields that goes with it: Kubernetes decodes a built-in kind into its typed struct, so
 * an unknown field is refused (Strict) or reported (Warn) and never stored, under every policy.
 * Custom resources are pruned by their schema (x-kubernetes-preserve-unknown-fields keeps what
 * it covers) and their metadata as ObjectMeta. Kinds without a declaration are not checked.
 */
import { checkFields as strictCheck, fieldValidationOutcome, goQuote, type FieldValidationMode, type StrictCheckResult } from '../../../api/codec/strict.js';
import { errors } from '../../../api/meta/status.js';
import { messageForObject, parseApiVersion, schema } from '../../../api/schema/registry.js';
import type { KubeObject, ResourceDefinition } from '../../../api/resources/types.js';
import { cloneJson } from '../../../util/json-clone.js';

export type FieldValidation = FieldValidationMode;

export function parseFieldValidation(v: string | null): FieldValidation {
  if (v === null || v === '') return 'Warn';
  if (v === 'Strict' || v === 'Warn' || v === 'Ignore') return v;
  throw errors.badRequest(`fieldValidation must be one of "Ignore", "Warn", or "Strict", got: ${JSON.stringify(v)}`);
}

const OBJECT_META = 'k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta';

/**
 * Applies the policy to `obj` and drops its unknown fields in place (the caller owns `obj`):
 * throws 400 (Strict, or wrong types), returns the warnings for Warn.
 */
export function checkFields(policy: FieldValidation, obj: unknown, apiVersion: string, kind: string, rawJson?: Buffer | string, def?: ResourceDefinition): string[] {
  if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) return [];
  const msg = messageForObject(apiVersion, kind);
  if (!msg) return customResourceFields(policy, obj as KubeObject, apiVersion, kind, def);
  // Wrong JSON types are errors under every policy; duplicate keys only matter when they are
  // reported (Strict, Warn), so the raw-text scan is skipped under Ignore.
  const result = strictCheck(obj, msg, schema, rawJson !== undefined && policy !== 'Ignore' ? { rawJson, prune: true } : PRUNE);
  return outcome(policy, result, apiVersion, kind);
}

/**
 * checkFields for an object that may share nested values with others (a patched object shares
 * what the patch left alone with the stored one): nothing is changed in it; when fields are to
 * be dropped, a pruned copy is returned instead.
 */
export function checkSharedFields(policy: FieldValidation, obj: KubeObject, apiVersion: string, kind: string, def?: ResourceDefinition): { warnings: string[]; object: KubeObject } {
  const msg = messageForObject(apiVersion, kind);
  if (!msg) {
    const copy = cloneJson(obj);
    return { warnings: customResourceFields(policy, copy, apiVersion, kind, def), object: copy };
  }
  const result = strictCheck(obj, msg, schema, NO_PRUNE);
  if (result.unknown.length === 0) return { warnings: outcome(policy, result, apiVersion, kind), object: obj };
  const copy = cloneJson(obj);
  return { warnings: checkFields(policy, copy, apiVersion, kind, undefined, def), object: copy };
}

function outcome(policy: FieldValidation, result: StrictCheckResult, apiVersion: string, kind: string): string[] {
  // A clean object (nearly every write) needs no outcome, nor the version for its messages.
  if (result.typeErrors.length === 0 && result.messages.length === 0) return [];
  return fieldValidationOutcome(policy, result, { kind, version: parseApiVersion(apiVersion).version }).warnings;
}

/** A custom resource (`def.unknownFields` prunes by its schema) and its metadata, pruned as ObjectMeta. */
function customResourceFields(policy: FieldValidation, obj: KubeObject, apiVersion: string, kind: string, def: ResourceDefinition | undefined): string[] {
  metadataMustBeObject(obj, apiVersion, kind);
  if (!def?.unknownFields) return [];
  const unknown: string[] = [];
  const meta = obj.metadata;
  const metaMsg = schema.message(OBJECT_META);
  if (typeof meta === 'object' && meta !== null && !Array.isArray(meta) && metaMsg) {
    for (const p of strictCheck(meta, metaMsg, schema, PRUNE).unknown) unknown.push(`metadata.${p}`);
  }
  // The schema's own pruning runs again on every write (the definition's defaults); only the
  // reported policies need the paths here.
  if (policy !== 'Ignore') unknown.push(...def.unknownFields(obj));
  if (!unknown.length || policy === 'Ignore') return [];
  const messages = unknown.map((p) => `unknown field ${goQuote(p)}`);
  return fieldValidationOutcome(policy, { unknown, duplicate: [], typeErrors: [], messages }, { kind, version: parseApiVersion(apiVersion).version }).warnings;
}

/**
 * A kind without a schema message (custom resources, the apiextensions kinds) still has an
 * ObjectMeta: metadata of another JSON type is refused as Go's decoder refuses it (null is none).
 */
function metadataMustBeObject(obj: KubeObject, apiVersion: string, kind: string): void {
  const meta: unknown = obj.metadata;
  if (meta === undefined || meta === null || (typeof meta === 'object' && !Array.isArray(meta))) return;
  const got = Array.isArray(meta) ? 'array' : typeof meta === 'boolean' ? 'bool' : typeof meta;
  const version = parseApiVersion(apiVersion).version;
  throw errors.badRequest(`${kind} in version ${JSON.stringify(version)} cannot be handled as a ${kind}: json: cannot unmarshal ${got} into Go struct field ${kind}.metadata of type v1.ObjectMeta`);
}

const PRUNE: { rawJson?: Buffer | string; prune: boolean } = Object.freeze({ prune: true });
const NO_PRUNE: { rawJson?: Buffer | string; prune: boolean } = Object.freeze({ prune: false });

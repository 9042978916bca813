/**
 * TypeMeta and ObjectMeta checks of embedded resources (x-kubernetes-embedded-resource): each
 * needs apiVersion and kind, and its metadata must be valid object metadata (names as path
 * segments). The object's own root is left to the API server's ObjectMeta validation unless
 * `isResourceRoot` asks for it (as default validation does).
 */
import { dns1035Label, dns1123Label, pathSegmentName, validateAnnotations, validateLabels } from '../resources/common/validation.js';
import type { FieldError } from '../meta/status.js';
import { fe } from './field-errors.js';
import { additionalSchema, child, index, isEmbedded, isObj, jsonKind, key, property, type JsonObject } from './schema-access.js';
import type { JSONSchemaProps } from './schema-types.js';

export function validateEmbeddedResources(value: unknown, schema: JSONSchemaProps | undefined, path: string, isResourceRoot = false): FieldError[] {
  const s = isResourceRoot && schema && !isEmbedded(schema) ? { ...schema, 'x-kubernetes-embedded-resource': true } : schema;
  return walk(value, s, path);
}

function walk(x: unknown, s: JSONSchemaProps | undefined, path: string): FieldError[] {
  if (!s) return [];
  const errs: FieldError[] = [];
  if (Array.isArray(x)) {
    const items = isObj(s.items) ? (s.items as JSONSchemaProps) : undefined;
    x.forEach((v, i) => errs.push(...walk(v, items, index(path, i))));
  } else if (isObj(x)) {
    if (isEmbedded(s)) errs.push(...typeAndObjectMeta(x, path));
    for (const [k, v] of Object.entries(x)) {
      const p = property(s, k);
      if (p) errs.push(...walk(v, p, child(path, k)));
      else if (s.additionalProperties !== undefined) errs.push(...walk(v, additionalSchema(s), key(path, k)));
    }
  }
  return errs;
}

/** apimachinery's ParseGroupVersion error, if any. */
function groupVersionError(gv: string): string | undefined {
  return gv === '/' || (gv.match(/\//g)?.length ?? 0) <= 1 ? undefined : `unexpected GroupVersion string: ${gv}`;
}

function typeAndObjectMeta(x: JsonObject, path: string): FieldError[] {
  const errs: FieldError[] = [];
  if (!Object.hasOwn(x, 'apiVersion')) errs.push(fe.required(child(path, 'apiVersion')));
  if (!Object.hasOwn(x, 'kind')) errs.push(fe.required(child(path, 'kind')));
  for (const [k, v] of Object.entries(x)) {
    const at = child(path, k);
    if (k === 'apiVersion') {
      if (typeof v !== 'string') errs.push(fe.invalid(at, v, 'must be a string'));
      else if (v === '') errs.push(fe.required(at));
      else { const e = groupVersionError(v); if (e) errs.push(fe.invalid(at, v, e)); }
    } else if (k === 'kind') {
      if (typeof v !== 'string') errs.push(fe.invalid(at, v, 'must be a string'));
      else if (v === '') errs.push(fe.required(at));
      else {
        const problems = dns1035Label(v.toLowerCase());
        if (problems.length) errs.push(fe.invalid(at, v, `may have mixed case, but should otherwise match: ${problems.join(',')}`));
      }
    } else if (k === 'metadata') {
      errs.push(...objectMeta(v, at));
    }
  }
  return errs;
}

/** What decoding into ObjectMeta would refuse, in Go's encoding/json words. */
function decodeError(m: unknown): string | undefined {
  if (m === null) return undefined;
  if (!isObj(m)) return `json: cannot unmarshal ${jsonKind(m)} into Go value of type v1.ObjectMeta`;
  const wrong = (field: string, want: string, got: unknown): string => `json: cannot unmarshal ${jsonKind(got)} into Go struct field ObjectMeta.${field} of type ${want}`;
  for (const f of ['name', 'generateName', 'namespace']) {
    if (m[f] !== undefined && m[f] !== null && typeof m[f] !== 'string') return wrong(f, 'string', m[f]);
  }
  for (const f of ['labels', 'annotations']) {
    const v = m[f];
    if (v === undefined || v === null) continue;
    if (!isObj(v)) return wrong(f, 'map[string]string', v);
    const bad = Object.values(v).find((x) => x !== null && typeof x !== 'string');
    if (bad !== undefined) return wrong(f, 'string', bad);
  }
  return undefined;
}

function objectMeta(m: unknown, at: string): FieldError[] {
  const decode = decodeError(m);
  if (decode) return [fe.invalid(at, m, decode)];
  if (!isObj(m)) return [];
  const errs: FieldError[] = [];
  const name = typeof m.name === 'string' && m.name !== '' ? m.name : 'fakename';
  if (typeof m.generateName === 'string' && m.generateName !== '') {
    for (const p of pathSegmentName(m.generateName)) errs.push(fe.invalid(child(at, 'generateName'), m.generateName, p));
  }
  for (const p of pathSegmentName(name)) errs.push(fe.invalid(child(at, 'name'), name, p));
  if (typeof m.namespace === 'string' && m.namespace !== '') {
    for (const p of dns1123Label(m.namespace)) errs.push(fe.invalid(child(at, 'namespace'), m.namespace, p));
  }
  validateLabels(m.labels, child(at, 'labels'), errs);
  validateAnnotations(m.annotations, child(at, 'annotations'), errs);
  return errs;
}


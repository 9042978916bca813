/**
 * Validation of a JSON value against an OpenAPI v3 schema with the semantics and wording of
 * kube-openapi's SchemaValidator, which the API server uses for custom resources: per node the
 * type, allOf/anyOf/oneOf/not, string, format, number, array, enum and object checks, each
 * reporting its own error (a failed type check does not stop the others). Errors carry
 * kube-openapi's dotted `name` ('spec.items[0].name'); validate-value.ts turns them into
 * field errors.
 */
import { goNumber, goQuote } from './field-errors.js';
import { checkFormat, isSupportedFormat } from './formats.js';
import { compileGoRegexp } from './go-regexp.js';
import { additionalOf, isIntOrString, isObj, schemaAt, schemaEntries, schemaList, stringList, typeOf } from './schema-access.js';
import type { JSONSchemaProps } from './schema-types.js';

/** How an error maps to a field error: kube-openapi error codes that Kubernetes treats specially. */
export type RawErrorKind = 'type' | 'required' | 'enum' | 'tooLong' | 'tooMany' | 'invalid' | 'composite';

export interface RawError {
  kind: RawErrorKind;
  name: string;
  message: string;
  value?: unknown;
  values?: unknown[];
  limit?: number;
  actual?: number;
}

export interface Result {
  errors: RawError[];
  /** kube-openapi's MatchCount: how many checks ran; picks the closest anyOf/oneOf branch. */
  matches: number;
}

export interface EngineOptions {
  /** Custom resources: x-kubernetes-int-or-string reads as type [integer, string]. Defaults are validated without. */
  intOrStringTyped: boolean;
  /** Custom resources: formats apiextensions does not support are ignored. */
  stripUnsupportedFormats: boolean;
}

const inBody = (name: string): string => `${name} in body`;

function typeError(name: string, typeName: string, value: unknown): RawError {
  const data = typeof value === 'string' ? `: ${goQuote(value)}` : '';
  return { kind: 'type', name, value, message: `${inBody(name)} must be of type ${typeName}${data}` };
}

function merge(into: Result, from: Result | undefined): void {
  if (!from) return;
  for (const e of from.errors) if (!into.errors.some((x) => x.message === e.message)) into.errors.push(e);
  into.matches += from.matches;
}

function add(into: Result, e: RawError): void {
  merge(into, { errors: [e], matches: 0 });
}

/** The JSON type of a decoded value, with integral numbers as Go's int64 ('integer'). */
function jsonType(v: unknown): string {
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  if (typeof v === 'boolean') return 'boolean';
  return typeof v === 'string' ? 'string' : 'object';
}

export function runSchema(data: unknown, s: JSONSchemaProps, name: string, o: EngineOptions): Result {
  const res: Result = { errors: [], matches: 0 };
  const types = o.intOrStringTyped && isIntOrString(s) ? ['integer', 'string'] : typeOf(s) ? [typeOf(s)] : [];
  const rawFormat = typeof s.format === 'string' ? s.format : '';
  const format = o.stripUnsupportedFormats && !isSupportedFormat(rawFormat) ? '' : rawFormat;
  const run = (check: () => Result | RawError[] | undefined): void => {
    const r = check();
    if (Array.isArray(r)) for (const e of r) add(res, e);
    else merge(res, r);
    res.matches++;
  };
  if (data === null || data === undefined) {
    if (types.length || format) run(() => checkType(null, types, s.nullable === true, format, name));
    run(() => checkEnum(null, s, name));
    return res;
  }
  const kind = jsonType(data);
  if (types.length || format) run(() => checkType(data, types, s.nullable === true, format, name));
  run(() => checkJunctors(data, s, name, o));
  if (kind === 'string') {
    run(() => checkString(data as string, s, name));
    if (format && checkFormat(format, data as string) === false) add(res, typeError(name, format, data));
  }
  if (kind === 'integer' || kind === 'number') run(() => checkNumber(data as number, s, name));
  if (kind === 'array') run(() => checkArray(data as unknown[], s, name, o));
  run(() => checkEnum(data, s, name));
  if (kind === 'object') run(() => checkObject(data as Record<string, unknown>, s, name, o));
  res.matches++;
  return res;
}

function checkType(data: unknown, types: string[], nullable: boolean, format: string, name: string): RawError[] {
  if (data === null) return types.length && !types.includes('null') && !nullable ? [typeError(name, types.join(','), 'null')] : [];
  const kind = jsonType(data);
  const goFormat = kind === 'integer' ? 'int64' : kind === 'number' ? 'double' : '';
  const intAsNumber = kind === 'integer' && types.includes('number');
  const numeric = types.includes('number') || types.includes('integer');
  if (kind !== 'string' && kind !== 'array' && format && !(types.includes(kind) || goFormat === format || intAsNumber)) {
    return [typeError(name, format, goFormat)];
  }
  // kube-openapi skips the type check of formatted strings and arrays unless the type is numeric.
  if (!numeric && format && (kind === 'string' || kind === 'array')) return [];
  return types.includes(kind) || intAsNumber ? [] : [typeError(name, types.join(','), kind)];
}

function checkJunctors(data: unknown, s: JSONSchemaProps, name: string, o: EngineOptions): Result {
  const res: Result = { errors: [], matches: 0 };
  const anyOf = schemaList(s.anyOf);
  if (anyOf.length) {
    let best: Result | undefined;
    let success: Result | undefined;
    for (const sub of anyOf) {
      const r = runSchema(data, sub, name, o);
      if (r.errors.length === 0) { best = undefined; success = r; break; }
      if (!best || r.matches > best.matches) best = r;
    }
    if (!success) add(res, { kind: 'composite', name, message: `${goQuote(name)} must validate at least one schema (anyOf)` });
    merge(res, best ?? success);
  }
  const oneOf = schemaList(s.oneOf);
  if (oneOf.length) {
    let best: Result | undefined;
    let first: Result | undefined;
    let valid = 0;
    for (const sub of oneOf) {
      const r = runSchema(data, sub, name, o);
      if (r.errors.length === 0) { valid++; best = undefined; first ??= r; continue; }
      if (valid === 0 && (!best || r.matches > best.matches)) best = r;
    }
    if (valid !== 1) {
      const found = valid === 0 ? 'Found none valid' : `Found ${valid} valid alternatives`;
      add(res, { kind: 'composite', name, message: `${goQuote(name)} must validate one and only one schema (oneOf). ${found}` });
      merge(res, best);
    } else {
      merge(res, first);
    }
  }
  const allOf = schemaList(s.allOf);
  if (allOf.length) {
    let valid = 0;
    for (const sub of allOf) {
      const r = runSchema(data, sub, name, o);
      if (r.errors.length === 0) valid++;
      merge(res, r);
    }
    if (valid !== allOf.length) {
      add(res, { kind: 'composite', name, message: `${goQuote(name)} must validate all the schemas (allOf)${valid === 0 ? '. None validated' : ''}` });
    }
  }
  const not = schemaAt(s.not);
  if (not && runSchema(data, not, name, o).errors.length === 0) {
    add(res, { kind: 'composite', name, message: `${goQuote(name)} must not validate the schema (not)` });
  }
  return res;
}

/** maxLength, minLength, pattern: the first failure only, as kube-openapi reports it. */
function checkString(data: string, s: JSONSchemaProps, name: string): RawError[] {
  const length = [...data].length;
  if (typeof s.maxLength === 'number' && length > s.maxLength) {
    return [{ kind: 'tooLong', name, value: data, limit: s.maxLength, message: `${inBody(name)} should be at most ${s.maxLength} chars long` }];
  }
  if (typeof s.minLength === 'number' && length < s.minLength) {
    return [{ kind: 'invalid', name, value: data, message: `${inBody(name)} should be at least ${s.minLength} chars long` }];
  }
  if (typeof s.pattern === 'string' && s.pattern !== '') {
    const c = compileGoRegexp(s.pattern);
    if (c.re === undefined) return [{ kind: 'invalid', name, value: data, message: `${inBody(name)} should match '${s.pattern}, but pattern is invalid: ${c.error}'` }];
    if (!c.re.test(data)) return [{ kind: 'invalid', name, value: data, message: `${inBody(name)} should match '${s.pattern}'` }];
  }
  return [];
}

/** go-openapi's IsFloat64AJSONInteger: integral within JSON's exact range, up to relative error. */
function isJsonInteger(f: number): boolean {
  if (!Number.isFinite(f) || Math.abs(f) > Number.MAX_SAFE_INTEGER) return false;
  if (Number.isInteger(f)) return true;
  const g = Math.trunc(f);
  return Math.abs(f - g) / (Math.abs(f) + Math.abs(g)) < 1e-9;
}

function checkNumber(data: number, s: JSONSchemaProps, name: string): RawError[] {
  const errs: RawError[] = [];
  // Integers are compared with integer bounds (kube-openapi truncates the bound to int64).
  const isInt = Number.isInteger(data);
  const bound = (b: number): number => (isInt ? Math.trunc(b) : b);
  const fail = (message: string): void => { errs.push({ kind: 'invalid', name, value: data, message: `${inBody(name)} ${message}` }); };
  if (typeof s.multipleOf === 'number') {
    const factor = isInt && Math.trunc(s.multipleOf) !== 0 ? Math.trunc(s.multipleOf) : s.multipleOf;
    if (factor < 0) {
      errs.push({ kind: 'invalid', name, value: factor, message: `factor MultipleOf declared for ${name} must be positive: ${goNumber(factor)}` });
    } else {
      const whole = Number.isInteger(factor) && isInt ? data % factor === 0 : isJsonInteger(factor < 1 ? (1 / factor) * data : data / factor);
      if (!whole) fail(`should be a multiple of ${goNumber(factor)}`);
    }
  }
  if (typeof s.minimum === 'number') {
    const min = bound(s.minimum);
    if (s.exclusiveMinimum === true ? data <= min : data < min) fail(`should be greater than ${s.exclusiveMinimum === true ? '' : 'or equal to '}${goNumber(min)}`);
  }
  if (typeof s.maximum === 'number') {
    const max = bound(s.maximum);
    if (s.exclusiveMaximum === true ? data >= max : data > max) fail(`should be less than ${s.exclusiveMaximum === true ? '' : 'or equal to '}${goNumber(max)}`);
  }
  return errs;
}

function checkArray(data: unknown[], s: JSONSchemaProps, name: string, o: EngineOptions): Result {
  const res: Result = { errors: [], matches: 0 };
  const items = schemaAt(s.items);
  if (items) data.forEach((v, i) => merge(res, runSchema(v, items, `${name}[${i}]`, o)));
  if (typeof s.minItems === 'number' && data.length < s.minItems) {
    add(res, { kind: 'invalid', name, value: data.length, message: `${inBody(name)} should have at least ${s.minItems} items` });
  }
  if (typeof s.maxItems === 'number' && data.length > s.maxItems) {
    add(res, { kind: 'tooMany', name, actual: data.length, limit: s.maxItems, message: `${inBody(name)} should have at most ${s.maxItems} items` });
  }
  if (s.uniqueItems === true && data.some((v, i) => data.findIndex((w) => deepEqual(v, w)) !== i)) {
    add(res, { kind: 'invalid', name, message: `${inBody(name)} shouldn't contain duplicates` });
  }
  res.matches++;
  return res;
}

function checkEnum(data: unknown, s: JSONSchemaProps, name: string): RawError[] {
  if (!Array.isArray(s.enum) || s.enum.length === 0) return [];
  // A null never matches: kube-openapi cannot compare an untyped nil.
  if (data !== null && data !== undefined && s.enum.some((e) => deepEqual(e, data))) return [];
  return [{ kind: 'enum', name, value: data ?? null, values: s.enum, message: `${inBody(name)} should be one of ${JSON.stringify(s.enum)}` }];
}

function checkObject(data: Record<string, unknown>, s: JSONSchemaProps, name: string, o: EngineOptions): Result {
  const res: Result = { errors: [], matches: 0 };
  const keys = Object.keys(data);
  if (typeof s.minProperties === 'number' && keys.length < s.minProperties) {
    add(res, { kind: 'invalid', name, value: keys.length, message: `${inBody(name)} should have at least ${s.minProperties} properties` });
    return res;
  }
  if (typeof s.maxProperties === 'number' && keys.length > s.maxProperties) {
    add(res, { kind: 'tooMany', name, actual: keys.length, limit: s.maxProperties, message: `${inBody(name)} should have at most ${s.maxProperties} properties` });
    return res;
  }
  const declared = new Map(schemaEntries(s.properties));
  const additional = additionalOf(s);
  for (const k of keys) {
    if (declared.has(k)) continue;
    if (additional === false) add(res, { kind: 'invalid', name, value: k, message: `${name}.${k} in body is a forbidden property` });
    else if (typeof additional === 'object') merge(res, runSchema(data[k], additional, `${name}.${k}`, o));
  }
  for (const [p, ps] of declared) {
    if (Object.hasOwn(data, p)) merge(res, runSchema(data[p], ps, name ? `${name}.${p}` : p, o));
  }
  for (const r of stringList(s.required)) {
    if (!Object.hasOwn(data, r)) add(res, { kind: 'required', name: `${name}.${r}`, message: `${name}.${r} in body is required` });
  }
  res.matches++;
  return res;
}

export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((x, i) => deepEqual(x, b[i]));
  if (isObj(a) && isObj(b)) {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => Object.hasOwn(b, k) && deepEqual(a[k], b[k]));
  }
  return false;
}

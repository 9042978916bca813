/**
 * Field errors whose bad values print the way Kubernetes (Go's fmt) prints them: strings
 * quoted, numbers as Go's %v writes float64/int64, and maps or lists in Go's %#v syntax
 * (`map[string]interface {}{"name":"a"}`). Clients compare these messages, and the generic
 * builders in meta/status.ts print compound values as JSON instead.
 */
import { fieldErrors, type FieldError } from '../meta/status.js';

/** Go's %v of a float64 (or an int64 when the number is integral). */
export function goNumber(n: number): string {
  if (!Number.isFinite(n)) return Number.isNaN(n) ? 'NaN' : n > 0 ? '+Inf' : '-Inf';
  const abs = Math.abs(n);
  if (n === 0 || (abs >= 1e-4 && abs < 1e21)) return String(n);
  const [mantissa, exp] = n.toExponential().split('e') as [string, string];
  const sign = exp.startsWith('-') ? '-' : '+';
  const digits = exp.replace(/^[-+]/, '');
  return `${mantissa}e${sign}${digits.padStart(2, '0')}`;
}

/** Go's %q (close enough: JSON escaping agrees for printable text). */
export const goQuote = (s: string): string => JSON.stringify(s);

/** Go's %#v of a value decoded from JSON into interface{}. */
function goSharpV(v: unknown): string {
  if (v === null || v === undefined) return 'interface {}(nil)';
  if (typeof v === 'string') return goQuote(v);
  if (typeof v === 'number') return goNumber(v);
  if (typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) return `[]interface {}{${v.map(goSharpV).join(', ')}}`;
  const o = v as Record<string, unknown>;
  const entries = Object.keys(o).sort().map((k) => `${goQuote(k)}:${goSharpV(o[k])}`);
  return `map[string]interface {}{${entries.join(', ')}}`;
}

/** Go's json.Marshal of a decoded value: like JSON.stringify, with object keys sorted. */
export function goJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(goJson).join(',')}]`;
  if (typeof v === 'object' && v !== null) {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o).sort().map((k) => `${JSON.stringify(k)}:${goJson(o[k])}`).join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

/** A bad value as field.Error's ErrorBody prints it. */
export function goValue(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'string') return goQuote(v);
  if (typeof v === 'number') return goNumber(v);
  if (typeof v === 'boolean') return String(v);
  return goSharpV(v);
}

const withDetail = (head: string, detail: string): string => (detail ? `${head}: ${detail}` : head);

/** Field-error builders (apimachinery's field package) with Go-printed values. */
export const fe = {
  required: fieldErrors.required,
  forbidden: (field: string, detail: string): FieldError => ({ field, type: 'FieldValueForbidden', message: withDetail('Forbidden', detail) }),
  invalid: (field: string, value: unknown, detail: string): FieldError =>
    ({ field, type: 'FieldValueInvalid', message: withDetail(`Invalid value: ${goValue(value)}`, detail) }),
  typeInvalid: (field: string, value: unknown, detail: string): FieldError =>
    ({ field, type: 'FieldValueTypeInvalid', message: withDetail(`Invalid value: ${goValue(value)}`, detail) }),
  notSupported: (field: string, value: unknown, valid: readonly string[]): FieldError => ({
    field, type: 'FieldValueNotSupported',
    message: withDetail(`Unsupported value: ${goValue(value)}`, valid.length ? `supported values: ${valid.map(goQuote).join(', ')}` : ''),
  }),
  duplicate: (field: string, value: unknown): FieldError => ({ field, type: 'FieldValueDuplicate', message: `Duplicate value: ${goValue(value)}` }),
  tooLong: fieldErrors.tooLong,
  tooMany: (field: string, actual: number, max: number): FieldError =>
    ({ field, type: 'FieldValueTooMany', message: `Too many: ${actual}: must have at most ${max} items` }),
};

/** field.ErrorList order as Kubernetes sorts structural-schema errors: by their full text. */
export function sortByText(errs: FieldError[]): FieldError[] {
  const text = (e: FieldError): string => `${e.field}: ${e.message}`;
  return errs.sort((a, b) => (text(a) < text(b) ? -1 : text(a) > text(b) ? 1 : 0));
}

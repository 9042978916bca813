/**
 * Small helpers over decoded JSON values (plain objects, arrays, strings, numbers, booleans,
 * null) shared by the patch and apply code. Nothing here mutates its inputs.
 */
import { errors, isApiError } from '../meta/status.js';

export type JsonObject = { [key: string]: unknown };

/** A plain JSON object (not null, not an array). */
export function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Structural equality of two JSON values (object key order ignored). */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== 'object') {
    // NaN never occurs in JSON; numbers and strings compare by value above.
    return false;
  }
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!deepEqual(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const ao = a as JsonObject, bo = b as JsonObject;
  const ak = Object.keys(ao).filter((k) => ao[k] !== undefined);
  const bk = Object.keys(bo).filter((k) => bo[k] !== undefined);
  if (ak.length !== bk.length) return false;
  for (const k of ak) {
    if (!Object.prototype.hasOwnProperty.call(bo, k) || !deepEqual(ao[k], bo[k])) return false;
  }
  return true;
}

/** A deep copy of a JSON value; undefined object members are dropped. */
export function deepClone<T>(v: T): T {
  if (typeof v !== 'object' || v === null) return v;
  if (Array.isArray(v)) return v.map((x) => deepClone(x)) as T;
  const out: JsonObject = {};
  for (const [k, x] of Object.entries(v as JsonObject)) {
    if (x !== undefined) put(out, k, deepClone(x));
  }
  return out as T;
}

/** `obj[key] = value`, safe for the key "__proto__" (JSON.parse makes it an own property). */
export function put(obj: JsonObject, key: string, value: unknown): void {
  if (key === '__proto__') setKey(obj, key, value);
  else obj[key] = value;
}

/** Sets a key on a plain object without ever touching the prototype (keys such as "__proto__"). */
export function setKey(obj: JsonObject, key: string, value: unknown): void {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}

/** Own-property lookup (never the prototype chain). */
export function hasKey(obj: JsonObject, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(obj, key);
}

/** A short rendering of a value for error messages, bounded in length. */
export function brief(v: unknown, max = 200): string {
  let s: string;
  try { s = JSON.stringify(v) ?? String(v); } catch { s = String(v); }
  return s.length > max ? s.slice(0, max) + '...' : s;
}

/**
 * Runs a recursive operation on untrusted input and turns a stack overflow (absurdly deep
 * nesting) into a 400 instead of a crash. ApiErrors pass through unchanged.
 */
export function guardDepth<T>(what: string, fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    if (isApiError(e)) throw e;
    if (e instanceof RangeError) throw errors.badRequest(`${what}: the document is nested too deeply`);
    throw e;
  }
}

/**
 * JSON bodies. Encoding writes Go's form, as kube-apiserver's encoder does (go-json.ts); decoding refuses
 * malformed text and nesting deeper than Kubernetes accepts (10000) with a 400, so that no
 * later recursive walk over the object can exhaust the stack. Size limits (3 MiB) are the
 * caller's, checked before the body is read into memory.
 */
import { errors } from '../meta/status.js';
import { goJsonText } from './go-json.js';

export const JSON_MEDIA_TYPE = 'application/json';
export const MAX_JSON_DEPTH = 10000;

/** A compact JSON body as kube-apiserver writes it: Go's order and escapes, a newline at the end. */
export function encodeJson(obj: unknown): Buffer {
  return Buffer.from(goJsonText(obj) + '\n', 'utf8');
}

/** Deepest nesting of objects and arrays in JSON text (strings skipped), stopping past `limit`. */
function nestingDepth(buf: Buffer, limit: number): number {
  let depth = 0, max = 0, inString = false;
  for (let i = 0; i < buf.length; i++) {
    const c = buf[i];
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped byte
      else if (c === 0x22) inString = false;
      continue;
    }
    if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) { if (++depth > max) { max = depth; if (max > limit) return max; } }
    else if (c === 0x7d || c === 0x5d) depth--;
  }
  return max;
}

export function decodeJson(buf: Buffer): unknown {
  return decodeJsonText(buf, buf.toString('utf8'));
}

/**
 * decodeJson for a caller that also needs the body as text (duplicate-key checks): `text` must
 * be `buf` decoded as UTF-8, so the body is decoded once.
 */
export function decodeJsonText(buf: Buffer, text: string): unknown {
  // Nesting past the limit needs at least 2 * limit bytes, so small bodies skip the scan.
  if (buf.length > 2 * MAX_JSON_DEPTH && nestingDepth(buf, MAX_JSON_DEPTH) > MAX_JSON_DEPTH) {
    throw errors.badRequest(`the request body is nested too deeply: the limit is ${MAX_JSON_DEPTH} levels`);
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw errors.badRequest(`the request body is not valid JSON: ${(e as Error).message}`);
  }
}

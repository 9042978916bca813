/**
 * Opaque list continuation tokens, laid out as Kubernetes does: base64 (standard alphabet) of
 * JSON `{"v":"meta.k8s.io/v1","rv":N,"start":"<key suffix>\u0000"}`, where start is the next
 * key to read, relative to the listed prefix. Every page of a list is read at `rv`, so the
 * pages form one consistent snapshot; once `rv` is compacted the token is expired.
 */
import { StorageError } from './errors.js';

const VERSION = 'meta.k8s.io/v1';

export interface ContinueToken {
  /** The revision all pages are read at. */
  readonly rv: number;
  /** Read keys strictly after `<prefix><lastKey>`. */
  readonly lastKey: string;
}

export function encodeContinue(rv: number, prefix: string, lastKey: string): string {
  if (!lastKey.startsWith(prefix)) throw new StorageError('Internal', `key ${lastKey} is outside list prefix ${prefix}`);
  const start = lastKey.slice(prefix.length) + '\u0000';
  return Buffer.from(JSON.stringify({ v: VERSION, rv, start }), 'utf8').toString('base64');
}

/** Decodes and validates a token; a malformed one is InvalidArgument (400 at the API). */
export function decodeContinue(token: string, prefix: string): { rv: number; after: string } {
  const bad = (why: string): StorageError => new StorageError('InvalidArgument', `continue key is not valid: ${why}`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(token, 'base64').toString('utf8'));
  } catch {
    throw bad('not base64 JSON');
  }
  if (parsed === null || typeof parsed !== 'object') throw bad('not an object');
  const { v, rv, start } = parsed as { v?: unknown; rv?: unknown; start?: unknown };
  if (v !== VERSION) throw bad(`unsupported version ${JSON.stringify(v)}`);
  if (typeof rv !== 'number' || !Number.isSafeInteger(rv) || rv < 1) throw bad('missing or invalid rv');
  if (typeof start !== 'string' || start === '') throw bad('missing start');
  // A token must not reach outside the listed prefix.
  const rel = start.endsWith('\u0000') ? start.slice(0, -1) : start;
  if (rel.startsWith('/') || rel.split('/').some((p) => p === '..' || p === '.')) throw bad('start key escapes the list');
  if (start.endsWith('\u0000')) return { rv, after: prefix + rel };
  // A start without the trailing NUL names the first key to return: read after its predecessor.
  return { rv, after: predecessor(prefix + rel) };
}

/** The greatest key smaller than `key` is not representable; strip one char (inclusive start). */
function predecessor(key: string): string {
  const last = key.charCodeAt(key.length - 1);
  return last > 0 ? key.slice(0, -1) + String.fromCharCode(last - 1) + '\uffff' : key.slice(0, -1);
}

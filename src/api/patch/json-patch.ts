/**
 * JSON Patch (RFC 6902, `application/json-patch+json`) with JSON Pointers (RFC 6901).
 *
 * Limits copied from the Kubernetes API server, which bounds patch amplification
 * (CVE-2019-1002100): at most 10000 operations per patch (413 otherwise), and the values
 * duplicated by `copy` operations may add up to at most 3 MiB (the default
 * JSONPatchMaxCopyBytes; beyond it the patch fails with 422).
 *
 * Errors: a body that is not a list of operation objects is a 400 BadRequest; an operation
 * that cannot be applied (bad op, bad pointer, missing target, failed test, copy budget) is a
 * 422 Invalid whose message names the failing operation's index. The input document and the
 * patch are never modified.
 */
import { ApiError, errors } from '../meta/status.js';
import { brief, deepClone, deepEqual, guardDepth, hasKey, isObject, put, type JsonObject } from './json-value.js';

export const MAX_JSON_PATCH_OPERATIONS = 10000;
export const JSON_PATCH_MAX_COPY_BYTES = 3 * 1024 * 1024;

export interface JsonPatchLimits {
  maxOperations?: number;
  maxCopyBytes?: number;
}

export type JsonPatchOp =
  | { op: 'add' | 'replace' | 'test'; path: string; value: unknown }
  | { op: 'remove'; path: string }
  | { op: 'move' | 'copy'; from: string; path: string };

class OpFailure extends Error {}

/** Splits a JSON pointer into unescaped reference tokens ("" is the whole document). */
export function parseJsonPointer(pointer: string): string[] {
  if (pointer === '') return [];
  if (!pointer.startsWith('/')) throw new OpFailure(`invalid JSON pointer ${JSON.stringify(pointer)}: must be empty or start with '/'`);
  return pointer.slice(1).split('/').map((tok) => {
    if (/~(?![01])/.test(tok)) throw new OpFailure(`invalid JSON pointer ${JSON.stringify(pointer)}: '~' must be followed by '0' or '1'`);
    return tok.replace(/~1/g, '/').replace(/~0/g, '~');
  });
}

/** Builds a JSON pointer from reference tokens, escaping '~' and '/'. */
export function formatJsonPointer(tokens: readonly string[]): string {
  return tokens.map((t) => '/' + t.replace(/~/g, '~0').replace(/\//g, '~1')).join('');
}

/**
 * An array index token. Like the JSON patch library Kubernetes uses, a negative index counts
 * from the end (-1 is the last element).
 */
function arrayIndex(tok: string, length: number, allowEnd: boolean): number {
  if (allowEnd && tok === '-') return length;
  if (!/^(0|-?[1-9][0-9]*)$/.test(tok)) throw new OpFailure(`invalid array index ${JSON.stringify(tok)}`);
  let i = Number(tok);
  if (i < 0) {
    if (i < -length) throw new OpFailure(`array index ${i} out of bounds (length ${length})`);
    i += length;
  }
  if (i > length || (!allowEnd && i === length)) throw new OpFailure(`array index ${i} out of bounds (length ${length})`);
  return i;
}

/** A mutable working copy: the document sits under a holder so the root is addressable too. */
class Doc {
  private readonly holder: JsonObject;
  constructor(root: unknown) { this.holder = { root }; }
  get root(): unknown { return this.holder['root']; }

  /** The container holding the target of `tokens` and the key within it. */
  private parent(tokens: string[]): { container: JsonObject | unknown[]; key: string } {
    let cur: unknown = this.holder;
    const path = ['root', ...tokens];
    for (let i = 0; i < path.length - 1; i++) {
      const tok = path[i]!;
      if (Array.isArray(cur)) {
        cur = cur[arrayIndex(tok, cur.length, false)];
      } else if (isObject(cur)) {
        if (!hasKey(cur, tok)) throw new OpFailure(`missing path: ${formatJsonPointer(tokens.slice(0, i))}`);
        cur = cur[tok];
      } else {
        throw new OpFailure(`cannot traverse into a ${cur === null ? 'null' : typeof cur} at ${formatJsonPointer(tokens.slice(0, i - 1))}`);
      }
    }
    if (!Array.isArray(cur) && !isObject(cur)) {
      throw new OpFailure(`parent of ${formatJsonPointer(tokens)} is not an object or a list`);
    }
    return { container: cur, key: path[path.length - 1]! };
  }

  get(tokens: string[]): unknown {
    const { container, key } = this.parent(tokens);
    if (Array.isArray(container)) return container[arrayIndex(key, container.length, false)];
    if (!hasKey(container, key)) throw new OpFailure(`missing path: ${formatJsonPointer(tokens)}`);
    return container[key];
  }

  add(tokens: string[], value: unknown): void {
    const { container, key } = this.parent(tokens);
    if (Array.isArray(container)) container.splice(arrayIndex(key, container.length, true), 0, value);
    else put(container, key, value);
  }

  remove(tokens: string[]): unknown {
    const { container, key } = this.parent(tokens);
    if (tokens.length === 0) throw new OpFailure('cannot remove the whole document');
    if (Array.isArray(container)) return container.splice(arrayIndex(key, container.length, false), 1)[0];
    if (!hasKey(container, key)) throw new OpFailure(`missing path: ${formatJsonPointer(tokens)}`);
    const old = container[key];
    delete container[key];
    return old;
  }

  replace(tokens: string[], value: unknown): void {
    const { container, key } = this.parent(tokens);
    if (Array.isArray(container)) container[arrayIndex(key, container.length, false)] = value;
    else if (!hasKey(container, key)) throw new OpFailure(`missing path: ${formatJsonPointer(tokens)}`);
    else put(container, key, value);
  }
}

function jsonSize(v: unknown): number {
  return Buffer.byteLength(JSON.stringify(v) ?? 'null', 'utf8');
}

/** Validates the shape of a decoded patch body (400 when it is not a list of operations). */
export function decodeJsonPatch(patch: unknown): JsonPatchOp[] {
  if (!Array.isArray(patch)) throw errors.badRequest('json patch must be a list of operations');
  patch.forEach((op, i) => {
    if (!isObject(op)) throw errors.badRequest(`json patch operation ${i} must be an object, got ${brief(op)}`);
  });
  return patch as JsonPatchOp[];
}

/**
 * Applies an RFC 6902 patch and returns the new document. Throws ApiError: 400 for a
 * malformed body, 413 for too many operations, 422 for an operation that fails.
 */
export function applyJsonPatch(doc: unknown, patch: unknown, limits: JsonPatchLimits = {}): unknown {
  const ops = decodeJsonPatch(patch);
  const maxOps = limits.maxOperations ?? MAX_JSON_PATCH_OPERATIONS;
  const maxCopy = limits.maxCopyBytes ?? JSON_PATCH_MAX_COPY_BYTES;
  if (ops.length > maxOps) {
    throw new ApiError(413, 'RequestEntityTooLarge', `The allowed maximum operations in a JSON patch is ${maxOps}, got ${ops.length}`);
  }
  return guardDepth('json patch', () => {
    const work = new Doc(deepClone(doc));
    let copied = 0;
    ops.forEach((raw, i) => {
      const o = raw as unknown as JsonObject;
      const opName = o['op'];
      try {
        if (typeof opName !== 'string') throw new OpFailure('missing "op"');
        if (typeof o['path'] !== 'string') throw new OpFailure('missing or non-string "path"');
        const path = parseJsonPointer(o['path']);
        const needValue = (): unknown => {
          if (!hasKey(o, 'value') || o['value'] === undefined) throw new OpFailure('missing "value"');
          return deepClone(o['value']);
        };
        const from = (): string[] => {
          if (typeof o['from'] !== 'string') throw new OpFailure('missing or non-string "from"');
          return parseJsonPointer(o['from']);
        };
        switch (opName) {
          case 'add': {
            const v = needValue();
            work.add(path, v);
            break;
          }
          case 'remove':
            work.remove(path);
            break;
          case 'replace': {
            const v = needValue();
            work.replace(path, v);
            break;
          }
          case 'move': {
            const src = from();
            if (isPrefix(src, path) && src.length !== path.length) throw new OpFailure('cannot move a value into one of its own children');
            if (src.length === path.length && isPrefix(src, path)) { work.get(src); break; }
            const v = work.remove(src);
            work.add(path, v);
            break;
          }
          case 'copy': {
            const v = deepClone(work.get(from()));
            copied += jsonSize(v);
            if (copied > maxCopy) {
              throw new OpFailure(`the accumulated size of copied values (${copied} bytes) exceeds the limit of ${maxCopy} bytes`);
            }
            work.add(path, v);
            break;
          }
          case 'test': {
            const expected = needValue();
            let actual: unknown;
            try { actual = work.get(path); } catch { actual = undefined; }
            // A missing value tests equal to null, as in Kubernetes' JSON patch library.
            const ok = actual === undefined ? expected === null : deepEqual(actual, expected);
            if (!ok) {
              throw new OpFailure(`test failed: value at ${JSON.stringify(o['path'])} is ${actual === undefined ? 'missing' : brief(actual)}, expected ${brief(expected)}`);
            }
            break;
          }
          default:
            throw new OpFailure(`unknown operation ${brief(opName)}`);
        }
      } catch (e) {
        if (e instanceof OpFailure) {
          const what = typeof opName === 'string' ? opName : 'unknown';
          const msg = `json patch ${what} operation ${i} failed: ${e.message}`;
          throw new ApiError(422, 'Invalid', msg, { causes: [{ reason: 'FieldValueInvalid', message: msg, field: typeof o['path'] === 'string' ? o['path'] : '' }] });
        }
        throw e;
      }
    });
    return work.root;
  });
}

function isPrefix(prefix: string[], path: string[]): boolean {
  if (prefix.length > path.length) return false;
  return prefix.every((t, i) => path[i] === t);
}

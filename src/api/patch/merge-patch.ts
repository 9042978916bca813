/**
 * JSON Merge Patch (RFC 7386, `application/merge-patch+json`): objects merge recursively,
 * `null` deletes a member, everything else (lists included) replaces. Used by kubectl
 * scale/label/annotate. Inputs are never modified.
 */
import { errors } from '../meta/status.js';
import { deepClone, deepEqual, guardDepth, hasKey, isObject, put, type JsonObject } from './json-value.js';

/** RFC 7386 MergePatch(target, patch), returning the new value. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  return guardDepth('merge patch', () => merge(target, patch));
}

function merge(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return deepClone(patch);
  const out: JsonObject = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else put(out, k, merge(hasKey(out, k) ? out[k] : undefined, v));
  }
  return out;
}

/**
 * Applies a merge patch to an API object: the patch must be a JSON object (400 otherwise),
 * and the result is always an object.
 */
export function applyMergePatch(original: unknown, patch: unknown): JsonObject {
  if (!isObject(patch)) throw errors.badRequest('a merge patch must be a JSON object');
  return mergePatch(isObject(original) ? original : {}, patch) as JsonObject;
}

/**
 * The merge patch that turns `from` into `to` (objects only; lists and scalars are sent
 * whole). Useful for tests and for clients built on this code.
 */
export function createMergePatch(from: unknown, to: unknown): unknown {
  return guardDepth('merge patch', () => diff(from, to));
}

function diff(from: unknown, to: unknown): unknown {
  if (!isObject(from) || !isObject(to)) return deepClone(to);
  const out: JsonObject = {};
  for (const k of Object.keys(from)) if (!hasKey(to, k) || to[k] === undefined) put(out, k, null);
  for (const [k, v] of Object.entries(to)) {
    if (v === undefined) continue;
    const f = hasKey(from, k) ? from[k] : undefined;
    if (isObject(f) && isObject(v)) {
      const d = diff(f, v) as JsonObject;
      if (Object.keys(d).length) put(out, k, d);
    } else if (f === undefined || !deepEqual(f, v)) {
      put(out, k, deepClone(v));
    }
  }
  return out;
}

/**
 * The PATCH content types and one entry point for the non-apply ones, for the REST layer.
 *
 *   application/json-patch+json             RFC 6902 (json-patch.ts)
 *   application/merge-patch+json            RFC 7386 (merge-patch.ts)
 *   application/strategic-merge-patch+json  built-in types only (strategic-merge.ts)
 *   application/apply-patch+yaml            server-side apply (apply.ts, needs its options)
 * Anything else, or strategic merge on a type without a declaration (custom resources), is a
 * 415 listing the accepted types.
 */
import { ApiError } from '../meta/status.js';
import type { MessageDecl, SchemaRegistry } from '../schema/types.js';
import { applyJsonPatch, type JsonPatchLimits } from './json-patch.js';
import { applyMergePatch } from './merge-patch.js';
import { strategicMerge } from './strategic-merge.js';

export type PatchType = 'json' | 'merge' | 'strategic' | 'apply';

export const PATCH_CONTENT_TYPES: Readonly<Record<string, PatchType>> = {
  'application/json-patch+json': 'json',
  'application/merge-patch+json': 'merge',
  'application/strategic-merge-patch+json': 'strategic',
  'application/apply-patch+yaml': 'apply',
};

/** PATCH_CONTENT_TYPES as a Map: a lookup never reaches Object.prototype ("constructor"). */
const PATCH_TYPES: ReadonlyMap<string, PatchType> = new Map(Object.entries(PATCH_CONTENT_TYPES));

/**
 * The patch type of a request's Content-Type (parameters such as charset ignored). Throws a
 * 415 when the type is unknown, or strategic and `strategicAllowed` is false.
 */
export function patchTypeOf(contentType: string | undefined, strategicAllowed: boolean): PatchType {
  // Clients send the bare type: look it up as is before taking the header apart.
  const exact = contentType === undefined ? undefined : PATCH_TYPES.get(contentType);
  if (exact && (exact !== 'strategic' || strategicAllowed)) return exact;
  const base = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  const t = PATCH_TYPES.get(base);
  if (t && (t !== 'strategic' || strategicAllowed)) return t;
  const accepted = Object.entries(PATCH_CONTENT_TYPES).filter(([, v]) => v !== 'strategic' || strategicAllowed).map(([k]) => k);
  return unsupported(base, accepted);
}

function unsupported(base: string, accepted: string[]): never {
  throw new ApiError(415, 'UnsupportedMediaType',
    `the body of the request was in an unknown format - accepted media types include: ${accepted.join(', ')}`, undefined, {}, { cause: base });
}

/**
 * Applies a json, merge or strategic patch (already decoded from JSON) to `original`.
 * `msg` is the object's declaration (required for strategic; undefined means schemaless).
 */
export function applyPatch(type: Exclude<PatchType, 'apply'>, original: unknown, patch: unknown,
  msg: MessageDecl | undefined, reg: SchemaRegistry, limits?: JsonPatchLimits): unknown {
  switch (type) {
    case 'json': return applyJsonPatch(original, patch, limits);
    case 'merge': return applyMergePatch(original, patch);
    case 'strategic':
      if (!msg) return unsupported('application/strategic-merge-patch+json', ['application/json-patch+json', 'application/merge-patch+json', 'application/apply-patch+yaml']);
      return strategicMerge(original, patch, msg, reg);
  }
}

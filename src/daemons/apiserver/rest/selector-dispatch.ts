/**
 * Label and field selectors in their query-string form, through src/api/meta's parsers, with
 * the selectable fields each resource definition declares.
 */
import { checkFieldSelector, exactName as pinnedName, fieldSelectorMatcher, parseFieldSelector, requiresExactField } from '../../../api/meta/field-selector.js';
import { labelSelectorMatcher } from '../../../api/meta/label-selector.js';
import type { KubeObject, ResourceDefinition } from '../../../api/resources/types.js';
import type { WatchQuery } from '../../../storage/object-store-types.js';

export type Matcher = (obj: KubeObject) => boolean;

/** The value of a selectable field, or undefined when the definition does not support it. */
export function fieldValue(def: ResourceDefinition, obj: KubeObject, field: string): string | undefined {
  if (field === 'metadata.name') return obj.metadata?.name ?? '';
  if (field === 'metadata.namespace') return def.namespaced ? obj.metadata?.namespace ?? '' : '';
  const f = def.fieldSelectors?.[field];
  return f ? f(obj) : undefined;
}

function supported(def: ResourceDefinition): (field: string) => boolean {
  return (f) => f === 'metadata.name' || f === 'metadata.namespace' || def.fieldSelectors?.[f] !== undefined;
}

/** Builds one matcher from both selectors (query strings); 400 on malformed or unsupported ones. */
export function buildMatcher(def: ResourceDefinition, labelSelector: string | null, fieldSelector: string | null): Matcher | undefined {
  const labels = labelSelector ? labelSelectorMatcher(labelSelector) : undefined;
  const fsel = fieldSelector ? parseFieldSelector(fieldSelector) : undefined;
  if (fsel) checkFieldSelector(fsel, supported(def));
  const fields = fsel && fsel.requirements.length ? fieldSelectorMatcher(fsel) : undefined;
  if (!labels && !fields) return undefined;
  return (obj) => {
    if (labels && !labels(obj.metadata?.labels)) return false;
    if (fields && !fields((f) => fieldValue(def, obj, f))) return false;
    return true;
  };
}

/** The exact name a field selector pins (metadata.name=x), for single-object watches. */
export function exactName(fieldSelector: string | null): string | undefined {
  return fieldSelector ? pinnedName(parseFieldSelector(fieldSelector)) : undefined;
}

/**
 * The watch trigger a field selector gives (WatchQuery.trigger): the first of the definition's
 * watchTriggers the selector pins to a value. Call after buildMatcher (which rejects bad selectors).
 */
export function watchTrigger(def: ResourceDefinition, fieldSelector: string | null): WatchQuery['trigger'] {
  if (!fieldSelector || !def.watchTriggers?.length) return undefined;
  const sel = parseFieldSelector(fieldSelector);
  for (const field of def.watchTriggers) {
    const value = requiresExactField(sel, field);
    if (value !== undefined) return { field, value, valueOf: (o) => fieldValue(def, o, field) };
  }
  return undefined;
}

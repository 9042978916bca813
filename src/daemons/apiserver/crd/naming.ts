/**
 * Kubernetes' CRD naming check: a CRD's names may not take names another CRD of the same
 * group has been accepted with (plural, singular and short names share one namespace, as do
 * kind and listKind).
 */
import type { CrdNames } from '../../../api/resources/apiextensions/crd-spec.js';

export interface NamingConflict { reason: string; message: string }

export function namingConflict(names: CrdNames, others: readonly CrdNames[]): NamingConflict | undefined {
  const resourceNames = new Set<string>();
  const kinds = new Set<string>();
  for (const o of others) {
    for (const n of [o.plural, o.singular, ...o.shortNames]) if (n) resourceNames.add(n);
    for (const k of [o.kind, o.listKind]) if (k) kinds.add(k);
  }
  const inUse = (what: string): string => `"${what}" is already in use`;
  if (resourceNames.has(names.plural)) return { reason: 'PluralConflict', message: inUse(names.plural) };
  if (resourceNames.has(names.singular)) return { reason: 'SingularConflict', message: inUse(names.singular) };
  for (const s of names.shortNames) if (resourceNames.has(s)) return { reason: 'ShortNamesConflict', message: `"${s}" is already in use` };
  if (kinds.has(names.kind)) return { reason: 'KindConflict', message: inUse(names.kind) };
  if (kinds.has(names.listKind)) return { reason: 'ListKindConflict', message: inUse(names.listKind) };
  return undefined;
}

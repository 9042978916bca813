/**
 * spec.nodeSelector (every label must be present with that value) and the required node
 * affinity: nodeSelectorTerms are ORed; inside a term, all matchExpressions (on labels) and
 * matchFields (on metadata.name) must hold; a term with neither matches nothing.
 * Operators: In, NotIn (true when the label is absent), Exists, DoesNotExist, and Gt / Lt
 * (the label and the single value parse as integers).
 */
import type { Node, NodeSelectorRequirement, NodeSelectorTerm } from '../types.js';
import { FITS, type Filter } from './filter.js';

export const REASON_NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector";

const INTEGER = /^[+-]?\d+$/;

export function requirementMatches(r: NodeSelectorRequirement, value: string | undefined): boolean {
  const values = r.values ?? [];
  switch (r.operator) {
    case 'In': return value !== undefined && values.includes(value);
    case 'NotIn': return value === undefined || !values.includes(value);
    case 'Exists': return value !== undefined;
    case 'DoesNotExist': return value === undefined;
    case 'Gt':
    case 'Lt': {
      if (value === undefined || values.length !== 1 || !INTEGER.test(value) || !INTEGER.test(values[0] ?? '')) return false;
      const a = BigInt(value), b = BigInt(values[0] as string);
      return r.operator === 'Gt' ? a > b : a < b;
    }
    default: return false;
  }
}

export function termMatches(term: NodeSelectorTerm, node: Node): boolean {
  const exprs = term.matchExpressions ?? [];
  const fields = term.matchFields ?? [];
  if (exprs.length === 0 && fields.length === 0) return false;
  const labels = node.metadata?.labels ?? {};
  for (const r of exprs) if (!requirementMatches(r, Object.hasOwn(labels, r.key) ? labels[r.key] : undefined)) return false;
  for (const r of fields) {
    if (r.key !== 'metadata.name') return false;
    if (r.operator !== 'In' && r.operator !== 'NotIn') return false;
    if (!requirementMatches(r, node.metadata?.name ?? '')) return false;
  }
  return true;
}

export function nodeSelectorMatches(selector: Record<string, string> | undefined, node: Node): boolean {
  const labels = node.metadata?.labels ?? {};
  for (const [k, v] of Object.entries(selector ?? {})) if (labels[k] !== v) return false;
  return true;
}

export const nodeAffinity: Filter = {
  name: 'NodeAffinity',
  filter(pod, node) {
    const n = node.node;
    if (!n) return [REASON_NODE_AFFINITY];
    const spec = pod.pod.spec ?? {};
    if (!nodeSelectorMatches(spec.nodeSelector, n)) return [REASON_NODE_AFFINITY];
    const required = spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution;
    if (required && !(required.nodeSelectorTerms ?? []).some((t) => termMatches(t, n))) return [REASON_NODE_AFFINITY];
    return FITS;
  },
};

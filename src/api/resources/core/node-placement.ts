/**
 * Whether a pod may be placed on a node, as Kubernetes reads the pod's placement fields: the
 * nodeSelector, required node affinity terms and tolerations against the node's labels, name and
 * taints. Shared by the scheduler (its filters and scores) and the controller manager's
 * DaemonSet controller (which nodes need a daemon pod), so both judge a node alike.
 *
 * - nodeSelector: every label present with that value.
 * - Node selector terms are ORed by callers; inside a term all matchExpressions (on labels) and
 *   matchFields (metadata.name only, In or NotIn) must hold; a term with neither matches
 *   nothing. Operators: In, NotIn (true when the label is absent), Exists, DoesNotExist, Gt and
 *   Lt (label and single value parse as integers).
 * - A toleration tolerates a taint when the effects match (an empty toleration effect matches
 *   all), the keys match (an empty key matches all) and the operator holds (Exists: any value;
 *   Equal or empty: the same value).
 *
 * Contract: pure functions; nothing passed in is modified.
 */
import type { KubeObject } from '../types.js';

export interface Toleration { key?: string; operator?: string; value?: string; effect?: string; tolerationSeconds?: number }
export interface Taint { key: string; value?: string; effect: string }
export interface NodeSelectorRequirement { key: string; operator: string; values?: string[] }
export interface NodeSelectorTerm { matchExpressions?: NodeSelectorRequirement[]; matchFields?: NodeSelectorRequirement[] }

export const NODE_NAME_FIELD = 'metadata.name';
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

export function termMatches(term: NodeSelectorTerm, node: KubeObject): boolean {
  const exprs = term.matchExpressions ?? [];
  const fields = term.matchFields ?? [];
  if (exprs.length === 0 && fields.length === 0) return false;
  const labels = node.metadata?.labels ?? {};
  for (const r of exprs) if (!requirementMatches(r, Object.hasOwn(labels, r.key) ? labels[r.key] : undefined)) return false;
  for (const r of fields) {
    if (r.key !== NODE_NAME_FIELD) return false;
    if (r.operator !== 'In' && r.operator !== 'NotIn') return false;
    if (!requirementMatches(r, node.metadata?.name ?? '')) return false;
  }
  return true;
}

export function nodeSelectorMatches(selector: Record<string, string> | undefined, node: KubeObject): boolean {
  const labels = node.metadata?.labels ?? {};
  for (const [k, v] of Object.entries(selector ?? {})) if (labels[k] !== v) return false;
  return true;
}

export function toleratesTaint(t: Toleration, taint: Taint): boolean {
  if (t.effect && t.effect !== taint.effect) return false;
  if (t.key && t.key !== taint.key) return false;
  const op = t.operator || 'Equal';
  if (op === 'Exists') return true;
  if (op === 'Equal') return (t.value ?? '') === (taint.value ?? '');
  return false;
}

export function tolerated(tolerations: readonly Toleration[] | undefined, taint: Taint): boolean {
  return (tolerations ?? []).some((t) => toleratesTaint(t, taint));
}

/**
 * What reconciling an expected role or binding with the stored one does, as Kubernetes'
 * pkg/registry/rbac/reconciliation (the bootstrap-roles post-start hook and `kubectl auth
 * reconcile` without --remove-extra-*): pure functions, no I/O.
 *
 * - Missing object: create the expected one.
 * - Stored object annotated `rbac.authorization.kubernetes.io/autoupdate: "false"`: protected,
 *   left as it is.
 * - Otherwise the stored object is kept and only added to: labels and annotations it lacks
 *   (its own values win), rules it does not cover (appended broken down into one verb, group,
 *   resource and name each, as Kubernetes does), aggregation selectors it lacks, subjects it
 *   lacks. An aggregationRule the expected role does not have is removed (Kubernetes does). A
 *   binding whose roleRef differs is recreated (roleRef cannot be updated).
 */
import type { KubeObject } from '../../../../api/resources/types.js';
import type { PolicyRule } from '../rule-match.js';
import { cloneJson } from '../../../../util/json-clone.js';
import { AUTOUPDATE_ANNOTATION } from './builders.js';
import { jsonEqual } from '../../../../storage/resource-store.js';

export type ReconcileOperation = 'none' | 'create' | 'update' | 'recreate';

export interface ReconcileResult {
  readonly operation: ReconcileOperation;
  /** Stored object annotated autoupdate "false": nothing is written. */
  readonly protected: boolean;
  /** The object to write (operation other than 'none'). */
  readonly object: KubeObject;
}

const has = (list: readonly string[] | undefined, s: string): boolean => !!list && list.includes(s);
const hasAll = (list: readonly string[] | undefined, subs: readonly string[] | undefined): boolean =>
  (subs ?? []).every((s) => has(list, s));

/** One rule as rules of a single verb × group × resource × name (or verb × URL). */
export function breakdownRule(r: PolicyRule): PolicyRule[] {
  const out: PolicyRule[] = [];
  for (const g of r.apiGroups ?? []) {
    for (const res of r.resources ?? []) {
      for (const v of r.verbs) {
        if (r.resourceNames?.length) {
          for (const n of r.resourceNames) out.push({ apiGroups: [g], resources: [res], verbs: [v], resourceNames: [n] });
        } else {
          out.push({ apiGroups: [g], resources: [res], verbs: [v] });
        }
      }
    }
  }
  for (const u of r.nonResourceURLs ?? []) for (const v of r.verbs) out.push({ nonResourceURLs: [u], verbs: [v] });
  return out;
}

function resourcesCoverAll(owner: readonly string[] | undefined, subs: readonly string[] | undefined): boolean {
  if (has(owner, '*')) return true;
  return (subs ?? []).every((s) => {
    if (has(owner, s)) return true;
    const slash = s.indexOf('/');
    return slash >= 0 && has(owner, `*/${s.slice(slash + 1)}`);
  });
}

function urlCovers(owner: string, path: string): boolean {
  return owner === path || (owner.endsWith('*') && path.startsWith(owner.replace(/\*+$/, '')));
}

/** Whether `owner` grants everything `sub` does (Kubernetes' ruleCovers). */
export function ruleCovers(owner: PolicyRule, sub: PolicyRule): boolean {
  const verbs = has(owner.verbs, '*') || hasAll(owner.verbs, sub.verbs);
  const groups = has(owner.apiGroups, '*') || hasAll(owner.apiGroups, sub.apiGroups);
  const resources = resourcesCoverAll(owner.resources, sub.resources);
  const urls = (sub.nonResourceURLs ?? []).every((p) => (owner.nonResourceURLs ?? []).some((o) => urlCovers(o, p)));
  const ownerAllNames = !owner.resourceNames?.length;
  const names = sub.resourceNames?.length ? ownerAllNames || hasAll(owner.resourceNames, sub.resourceNames) : ownerAllNames;
  return verbs && groups && resources && names && urls;
}

/** The broken-down pieces of `servant` that no rule of `owner` covers (empty: owner covers servant). */
export function uncoveredRules(owner: readonly PolicyRule[], servant: readonly PolicyRule[]): PolicyRule[] {
  const out: PolicyRule[] = [];
  for (const s of servant) for (const piece of breakdownRule(s)) if (!owner.some((o) => ruleCovers(o, piece))) out.push(piece);
  return out;
}

/** `expected`'s entries the stored map lacks, added; the stored values win. */
function mergeMaps(expected: Record<string, string> | undefined, stored: Record<string, string> | undefined): Record<string, string> | undefined {
  if (!expected || Object.keys(expected).length === 0) return stored;
  return { ...expected, ...(stored ?? {}) };
}

// Key order does not count: stored objects are in Go's order, expected ones in ours.
const equalJson = (a: unknown, b: unknown): boolean => jsonEqual(a ?? null, b ?? null);

function isProtected(stored: KubeObject): boolean {
  return stored.metadata?.annotations?.[AUTOUPDATE_ANNOTATION] === 'false';
}

/** Labels and annotations merged into `result`; whether anything changed. */
function mergeMeta(result: KubeObject, expected: KubeObject): boolean {
  const m = result.metadata ?? (result.metadata = {});
  let changed = false;
  const labels = mergeMaps(expected.metadata?.labels, m.labels);
  if (!equalJson(labels, m.labels)) { m.labels = labels!; changed = true; }
  const annotations = mergeMaps(expected.metadata?.annotations, m.annotations);
  if (!equalJson(annotations, m.annotations)) { m.annotations = annotations!; changed = true; }
  return changed;
}

interface AggregationRule { clusterRoleSelectors?: unknown[] }

/** A Role or ClusterRole. */
export function reconcileRole(expected: KubeObject, stored: KubeObject | undefined): ReconcileResult {
  if (!stored) return { operation: 'create', protected: false, object: expected };
  if (isProtected(stored)) return { operation: 'none', protected: true, object: stored };
  const result = cloneJson(stored);
  let changed = mergeMeta(result, expected);
  const storedRules = (stored.rules as PolicyRule[] | undefined) ?? [];
  const missing = uncoveredRules(storedRules, (expected.rules as PolicyRule[] | undefined) ?? []);
  if (missing.length) { result.rules = [...storedRules, ...missing]; changed = true; }
  const want = expected.aggregationRule as AggregationRule | undefined;
  const have = stored.aggregationRule as AggregationRule | undefined;
  if (!want && have) {
    delete result.aggregationRule;
    changed = true;
  } else if (want) {
    const haveSelectors = have?.clusterRoleSelectors ?? [];
    const missingSelectors = (want.clusterRoleSelectors ?? []).filter((s) => !haveSelectors.some((h) => equalJson(h, s)));
    if (missingSelectors.length) {
      result.aggregationRule = { ...(have ?? {}), clusterRoleSelectors: [...haveSelectors, ...missingSelectors] };
      changed = true;
    }
  }
  return { operation: changed ? 'update' : 'none', protected: false, object: result };
}

interface SubjectLike { kind?: string; apiGroup?: string; name?: string; namespace?: string }

/** Subjects are the same when kind, name and namespace are (apiGroup is defaulted on the server). */
const sameSubject = (a: SubjectLike, b: SubjectLike): boolean =>
  a.kind === b.kind && a.name === b.name && (a.namespace ?? '') === (b.namespace ?? '');

/** A RoleBinding or ClusterRoleBinding. */
export function reconcileBinding(expected: KubeObject, stored: KubeObject | undefined): ReconcileResult {
  if (!stored) return { operation: 'create', protected: false, object: expected };
  if (isProtected(stored)) return { operation: 'none', protected: true, object: stored };
  const ref = (o: KubeObject): unknown => {
    const r = (o.roleRef ?? {}) as { apiGroup?: string; kind?: string; name?: string };
    return [r.apiGroup ?? '', r.kind ?? '', r.name ?? ''];
  };
  if (!equalJson(ref(expected), ref(stored))) return { operation: 'recreate', protected: false, object: expected };
  const result = cloneJson(stored);
  let changed = mergeMeta(result, expected);
  const have = (stored.subjects as SubjectLike[] | undefined) ?? [];
  const missing = ((expected.subjects as SubjectLike[] | undefined) ?? []).filter((s) => !have.some((h) => sameSubject(h, s)));
  if (missing.length) { result.subjects = [...have, ...missing]; changed = true; }
  return { operation: changed ? 'update' : 'none', protected: false, object: result };
}

/**
 * Whether one RBAC PolicyRule covers a request, by Kubernetes' matching rules (rbac/v1 helpers):
 * `*` matches any verb, group, resource or URL; a resource request names its resource as
 * `resource` or `resource/subresource`, and a rule's resource `*` followed by
 * `/sub` matches that subresource of any resource; an empty resourceNames list matches every name; a
 * nonResourceURL ending in `*` matches by prefix. Shared by the RBAC and Node authorizers and
 * by escalation checks.
 */
import type { AuthorizationAttributes } from '../../authorizer.js';

export interface PolicyRule {
  verbs: readonly string[];
  apiGroups?: readonly string[];
  resources?: readonly string[];
  resourceNames?: readonly string[];
  nonResourceURLs?: readonly string[];
}

export function verbMatches(rule: PolicyRule, verb: string): boolean {
  for (const v of rule.verbs) if (v === '*' || v === verb) return true;
  return false;
}

export function apiGroupMatches(rule: PolicyRule, group: string): boolean {
  for (const g of rule.apiGroups ?? []) if (g === '*' || g === group) return true;
  return false;
}

/** `combined` is `resource` or `resource/subresource`. */
export function resourceMatches(rule: PolicyRule, combined: string, subresource: string): boolean {
  for (const r of rule.resources ?? []) {
    if (r === '*' || r === combined) return true;
    if (subresource && r.length === subresource.length + 2 && r.startsWith('*/') && r.endsWith(subresource)) return true;
  }
  return false;
}

export function resourceNameMatches(rule: PolicyRule, name: string): boolean {
  const names = rule.resourceNames ?? [];
  if (names.length === 0) return true;
  for (const n of names) if (n === name) return true;
  return false;
}

export function nonResourceURLMatches(rule: PolicyRule, path: string): boolean {
  for (const u of rule.nonResourceURLs ?? []) {
    if (u === '*' || u === path) return true;
    if (u.endsWith('*') && path.startsWith(u.slice(0, -1))) return true;
  }
  return false;
}

type RuleAttributes = Pick<AuthorizationAttributes, 'verb' | 'isResourceRequest' | 'path' | 'apiGroup' | 'resource' | 'subresource' | 'name'>;

export function ruleAllows(a: RuleAttributes, rule: PolicyRule): boolean {
  if (!verbMatches(rule, a.verb)) return false;
  if (!a.isResourceRequest) return nonResourceURLMatches(rule, a.path);
  const combined = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
  return apiGroupMatches(rule, a.apiGroup) && resourceMatches(rule, combined, a.subresource) && resourceNameMatches(rule, a.name);
}

export function rulesAllow(a: RuleAttributes, rules: readonly PolicyRule[]): boolean {
  for (const r of rules) if (ruleAllows(a, r)) return true;
  return false;
}

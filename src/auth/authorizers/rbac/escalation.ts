/**
 * Escalation prevention, as Kubernetes' RBAC storage (pkg/registry/rbac: policybased storage,
 * escalation_check.go, validation.ConfirmNoEscalation): nobody grants through a Role,
 * ClusterRole or binding a permission they do not hold themselves, unless they hold the
 * `escalate` verb on the role or the `bind` verb on the role a binding refers to.
 *
 * Coverage is Kubernetes' Covers: each requested rule is broken down into single
 * (group, resource, verb[, name]) and (URL, verb) rules, and each of those must be covered by
 * one of the user's own rules; `*` covers anything, `*`/sub covers that subresource of any
 * resource, an owner rule without resourceNames covers any name, a URL ending in `*` covers by
 * prefix. What is missing is reported compacted (simple rules of one group and resource merged
 * across verbs) and sorted, in Kubernetes' words.
 */
import type { AuthorizationAttributes } from '../../authorizer.js';
import type { UserInfo } from '../../user.js';
import { PRIVILEGED_GROUP } from '../../user.js';
import type { RbacIndex, RoleRef } from './policy-index.js';
import { RBAC_GROUP } from './policy-index.js';
import { aggregateMessage } from './rbac-authorizer.js';
import type { PolicyRule } from './rule-match.js';

/** Members of system:masters may grant anything (the API server's loopback identity is one). */
export function escalationAllowed(user: UserInfo): boolean {
  return user.groups.includes(PRIVILEGED_GROUP);
}

/** The `escalate` question for a write to roles/clusterroles (name '' on create, as Kubernetes asks it). */
export function escalateAttributes(user: UserInfo, resource: 'roles' | 'clusterroles', namespace: string, name: string): AuthorizationAttributes {
  return { user, verb: 'escalate', isResourceRequest: true, path: '', namespace, apiGroup: RBAC_GROUP, apiVersion: '*', resource, subresource: '', name };
}

/** The `bind` question for a binding in `bindingNamespace` ('' for a ClusterRoleBinding) to `ref`. */
export function bindAttributes(user: UserInfo, ref: RoleRef, bindingNamespace: string): AuthorizationAttributes | undefined {
  const resource = ref.kind === 'ClusterRole' ? 'clusterroles' : ref.kind === 'Role' ? 'roles' : '';
  if (!resource) return undefined;
  return { user, verb: 'bind', isResourceRequest: true, path: '', namespace: bindingNamespace, apiGroup: RBAC_GROUP, apiVersion: '', resource, subresource: '', name: ref.name };
}

const has = (set: readonly string[] | undefined, x: string): boolean => !!set && set.includes(x);
const hasAll = (set: readonly string[] | undefined, xs: readonly string[] | undefined): boolean => (xs ?? []).every((x) => has(set, x));

/** Single-verb, single-resource (and single-name) or single-URL pieces of a rule. */
export function breakdownRule(rule: PolicyRule): PolicyRule[] {
  const out: PolicyRule[] = [];
  for (const group of rule.apiGroups ?? []) {
    for (const resource of rule.resources ?? []) {
      for (const verb of rule.verbs) {
        if (rule.resourceNames?.length) {
          for (const n of rule.resourceNames) out.push({ apiGroups: [group], resources: [resource], verbs: [verb], resourceNames: [n] });
        } else {
          out.push({ apiGroups: [group], resources: [resource], verbs: [verb] });
        }
      }
    }
  }
  for (const url of rule.nonResourceURLs ?? []) for (const verb of rule.verbs) out.push({ nonResourceURLs: [url], verbs: [verb] });
  return out;
}

function resourceCoversAll(owner: readonly string[] | undefined, wanted: readonly string[] | undefined): boolean {
  if (has(owner, '*') || hasAll(owner, wanted)) return true;
  for (const path of wanted ?? []) {
    if (has(owner, path)) continue;
    const slash = path.indexOf('/');
    if (slash < 0 || !has(owner, `*/${path.slice(slash + 1)}`)) return false;
  }
  return true;
}

function urlCovers(owner: string, path: string): boolean {
  return owner === path || (owner.endsWith('*') && path.startsWith(owner.replace(/\*+$/, '')));
}

/** Whether `owner` covers `sub` (a piece from breakdownRule). */
export function ruleCovers(owner: PolicyRule, sub: PolicyRule): boolean {
  const verbs = has(owner.verbs, '*') || hasAll(owner.verbs, sub.verbs);
  const groups = has(owner.apiGroups, '*') || hasAll(owner.apiGroups, sub.apiGroups);
  const resources = resourceCoversAll(owner.resources, sub.resources);
  const urls = (sub.nonResourceURLs ?? []).every((p) => (owner.nonResourceURLs ?? []).some((o) => urlCovers(o, p)));
  const names = !owner.resourceNames?.length || (!!sub.resourceNames?.length && hasAll(owner.resourceNames, sub.resourceNames));
  return verbs && groups && resources && names && urls;
}

/** Whether `owner` covers every rule of `wanted`; the uncovered pieces. */
export function covers(owner: readonly PolicyRule[], wanted: readonly PolicyRule[]): { covered: boolean; missing: PolicyRule[] } {
  const missing: PolicyRule[] = [];
  for (const w of wanted) {
    for (const piece of breakdownRule(w)) if (!owner.some((o) => ruleCovers(o, piece))) missing.push(piece);
  }
  return { covered: missing.length === 0, missing };
}

/** Merges rules of one group and one resource (nothing else) across their verbs. */
export function compactRules(rules: readonly PolicyRule[]): PolicyRule[] {
  const out: PolicyRule[] = [];
  const simple = new Map<string, { apiGroups: string[]; resources: string[]; verbs: string[] }>();
  for (const r of rules) {
    const isSimple = !r.resourceNames?.length && !r.nonResourceURLs?.length && r.apiGroups?.length === 1 && r.resources?.length === 1;
    if (!isSimple) { out.push(r); continue; }
    const key = `${r.apiGroups![0]!}\u0000${r.resources![0]!}`;
    const known = simple.get(key);
    if (known) known.verbs.push(...r.verbs);
    else simple.set(key, { apiGroups: [...r.apiGroups!], resources: [...r.resources!], verbs: [...r.verbs] });
  }
  return [...out, ...simple.values()];
}

/** Go's %q of a []string: `["a" "b"]`. */
const q = (xs: readonly string[]): string => `[${xs.map((x) => JSON.stringify(x)).join(' ')}]`;

/** Kubernetes' PolicyRule CompactString: `{APIGroups:["apps"], Resources:["deployments"], Verbs:["get" "list"]}`. */
export function compactString(r: PolicyRule): string {
  const parts: string[] = [];
  if (r.apiGroups?.length) parts.push(`APIGroups:${q(r.apiGroups)}`);
  if (r.resources?.length) parts.push(`Resources:${q(r.resources)}`);
  if (r.nonResourceURLs?.length) parts.push(`NonResourceURLs:${q(r.nonResourceURLs)}`);
  if (r.resourceNames?.length) parts.push(`ResourceNames:${q(r.resourceNames)}`);
  if (r.verbs.length) parts.push(`Verbs:${q(r.verbs)}`);
  return `{${parts.join(', ')}}`;
}

/**
 * Why granting `rules` in `namespace` would escalate `user`'s permissions (Kubernetes'
 * ConfirmNoEscalation message), or undefined when the user already holds them all.
 */
export function escalationError(index: RbacIndex, user: UserInfo, namespace: string, rules: readonly PolicyRule[]): string | undefined {
  const own = index.rulesFor(user, namespace);
  const { covered, missing } = covers(own.rules, rules);
  if (covered) return undefined;
  const lines = [...new Set(compactRules(missing).map(compactString))].sort();
  let msg = `user "${user.name}" (groups=${q(user.groups)}) is attempting to grant RBAC permissions not currently held:\n${lines.join('\n')}`;
  if (own.errors.length) msg += `; resolution errors: [${aggregateMessage(own.errors)}]`;
  return msg;
}

/**
 * --authorization-mode=RBAC, as Kubernetes' RBAC authorizer: the rules of the
 * ClusterRoleBindings and of the request namespace's RoleBindings that name the user (by user
 * name, group or service account) decide. RBAC allows or has no opinion, never denies; the
 * next mode in the list decides then.
 *
 * Reasons are worded as Kubernetes': `RBAC: allowed by ClusterRoleBinding "x" of ClusterRole
 * "y" to User "z"` when allowed; on no opinion nothing, or `RBAC: <errors>` when a binding
 * refers to a role that does not exist.
 */
import type { AuthorizationAttributes, AuthorizationResult, Authorizer } from '../../authorizer.js';
import type { UserInfo } from '../../user.js';
import type { RbacIndex, RuleSource, Subject } from './policy-index.js';
import { ruleAllows, type PolicyRule } from './rule-match.js';

const NO_OPINION: AuthorizationResult = Object.freeze({ decision: 'noOpinion', reason: '' });

/** The rules of a user in a namespace, in SelfSubjectRulesReview's shape (rules-review.ts's SubjectRules). */
export interface RbacSubjectRules {
  resourceRules: { verbs: string[]; apiGroups: string[]; resources: string[]; resourceNames?: string[] }[];
  nonResourceRules: { verbs: string[]; nonResourceURLs: string[] }[];
  incomplete: boolean;
  evaluationError?: string;
}

function describeSubject(s: Subject, bindingNamespace: string): string {
  if (s.kind === 'ServiceAccount') return `${s.kind} "${s.name}/${s.namespace || bindingNamespace}"`;
  return `${s.kind} "${s.name}"`;
}

/** `ClusterRoleBinding "x" of ClusterRole "y" to User "z"` / `RoleBinding "x/ns" of Role "y" to Group "g"`. */
export function describeSource(src: RuleSource): string {
  const b = src.binding;
  const name = b.kind === 'RoleBinding' ? `${b.name}/${b.namespace}` : b.name;
  return `${b.kind} "${name}" of ${b.roleRef.kind} "${b.roleRef.name}" to ${describeSubject(src.subject, b.namespace)}`;
}

/** Several errors as Kubernetes' aggregate prints them: one alone, else `[a, b]` (repeats dropped). */
export function aggregateMessage(errs: readonly Error[]): string {
  const msgs = [...new Set(errs.map((e) => e.message))];
  return msgs.length === 1 ? msgs[0]! : `[${msgs.join(', ')}]`;
}

export class RbacAuthorizer implements Authorizer {
  readonly name = 'RBAC';
  /** Until the index is attached (the store is open) RBAC has no opinion and knows no rules. */
  constructor(private index?: RbacIndex) {}

  attach(index: RbacIndex): void {
    this.index = index;
  }

  authorize(a: AuthorizationAttributes): AuthorizationResult {
    if (!this.index) return NO_OPINION;
    let allowedBy: RuleSource | undefined;
    let errs: Error[] | undefined;
    this.index.visitRulesFor(a.user, a.namespace, (source, rule, err) => {
      if (rule && ruleAllows(a, rule)) { allowedBy = source; return false; }
      if (err) (errs ??= []).push(err);
      return true;
    });
    if (allowedBy) return { decision: 'allow', reason: `RBAC: allowed by ${describeSource(allowedBy)}` };
    return errs ? { decision: 'noOpinion', reason: `RBAC: ${aggregateMessage(errs)}` } : NO_OPINION;
  }

  /** The RuleResolver capability (rules-review.ts): the user's rules in a namespace. */
  async rulesFor(user: UserInfo, namespace: string): Promise<RbacSubjectRules> {
    if (!this.index) return { resourceRules: [], nonResourceRules: [], incomplete: true, evaluationError: 'RBAC: not started' };
    const { rules, errors } = this.index.rulesFor(user, namespace);
    const out: RbacSubjectRules = { ...splitRules(rules), incomplete: false };
    if (errors.length) out.evaluationError = aggregateMessage(errors);
    return out;
  }
}

/** PolicyRules as SelfSubjectRulesReview's resource and non-resource rules (a rule may give both). */
export function splitRules(rules: readonly PolicyRule[]): Pick<RbacSubjectRules, 'resourceRules' | 'nonResourceRules'> {
  const resourceRules: RbacSubjectRules['resourceRules'] = [];
  const nonResourceRules: RbacSubjectRules['nonResourceRules'] = [];
  for (const r of rules) {
    if (r.resources?.length) {
      const rr: RbacSubjectRules['resourceRules'][number] = { verbs: [...r.verbs], apiGroups: [...(r.apiGroups ?? [])], resources: [...r.resources] };
      if (r.resourceNames?.length) rr.resourceNames = [...r.resourceNames];
      resourceRules.push(rr);
    }
    if (r.nonResourceURLs?.length) nonResourceRules.push({ verbs: [...r.verbs], nonResourceURLs: [...r.nonResourceURLs] });
  }
  return { resourceRules, nonResourceRules };
}

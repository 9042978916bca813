/**
 * The RBAC objects the authorizer and the escalation checks read, kept in process from four
 * store mirrors (Roles, ClusterRoles, RoleBindings, ClusterRoleBindings) and compiled for
 * lookups by subject: user name → bindings and group name → bindings, cluster-wide and per
 * namespace. A request looks at the bindings naming its user or one of its groups, never at
 * every binding.
 *
 * A service-account subject is indexed under the user name it stands for
 * (`system:serviceaccount:<namespace>:<name>`); in a RoleBinding its namespace defaults to the
 * binding's, in a ClusterRoleBinding one without a namespace applies to nobody (as Kubernetes'
 * appliesToUser).
 *
 * Contract: the compiled tables are rebuilt lazily, at the first lookup after a mirror changed
 * (a burst of changes costs one rebuild), each table only from its own mirror. Lookups are
 * synchronous. `ready` settles once every mirror has read its first list. One index per store
 * (`rbacIndexFor`).
 */
import type { Logger } from 'pino';
import { pino } from 'pino';
import type { KubeObject } from '../../../api/resources/types.js';
import type { ObjectStore } from '../../../storage/object-store-types.js';
import { storeMirror, type StoreMirror } from '../../../storage/store-mirror.js';
import type { UserInfo } from '../../user.js';
import type { PolicyRule } from './rule-match.js';

export const RBAC_GROUP = 'rbac.authorization.k8s.io';
const SA_PREFIX = 'system:serviceaccount:';

export interface Subject {
  readonly kind: string;
  readonly name: string;
  readonly namespace: string;
}

export interface RoleRef {
  readonly kind: string;
  readonly name: string;
}

/** A RoleBinding or ClusterRoleBinding as the index keeps it. */
export interface Binding {
  readonly kind: 'ClusterRoleBinding' | 'RoleBinding';
  readonly name: string;
  /** '' for a ClusterRoleBinding. */
  readonly namespace: string;
  readonly roleRef: RoleRef;
  readonly subjects: readonly Subject[];
}

/** Bindings by user name (service accounts included) and by group name. */
interface SubjectTable {
  readonly byUser: Map<string, Binding[]>;
  readonly byGroup: Map<string, Binding[]>;
}

/** Where a rule came from: the binding and its first subject that applies to the user. */
export interface RuleSource {
  readonly binding: Binding;
  readonly subject: Subject;
}

/** Visits a rule (with its source) or an error; returns false to stop. */
export type RuleVisitor = (source: RuleSource | undefined, rule: PolicyRule | undefined, err: Error | undefined) => boolean;

const strs = (v: unknown): string[] => Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
const rec = (v: unknown): Record<string, unknown> => (typeof v === 'object' && v !== null ? v as Record<string, unknown> : {});
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/** A stored rule as a PolicyRule (only the fields matching reads; empty lists dropped). */
export function compileRule(raw: unknown): PolicyRule {
  const r = rec(raw);
  const rule: { -readonly [K in keyof PolicyRule]: PolicyRule[K] } = { verbs: strs(r.verbs) };
  const groups = strs(r.apiGroups), resources = strs(r.resources), names = strs(r.resourceNames), urls = strs(r.nonResourceURLs);
  if (groups.length) rule.apiGroups = groups;
  if (resources.length) rule.resources = resources;
  if (names.length) rule.resourceNames = names;
  if (urls.length) rule.nonResourceURLs = urls;
  return Object.freeze(rule);
}

export function compileRules(obj: KubeObject): readonly PolicyRule[] {
  return Object.freeze((Array.isArray(obj.rules) ? obj.rules : []).map(compileRule));
}

function compileBinding(obj: KubeObject): Binding {
  const ref = rec(obj.roleRef);
  return {
    kind: obj.kind === 'RoleBinding' || obj.metadata?.namespace ? 'RoleBinding' : 'ClusterRoleBinding',
    name: obj.metadata?.name ?? '',
    namespace: obj.metadata?.namespace ?? '',
    roleRef: { kind: str(ref.kind), name: str(ref.name) },
    subjects: (Array.isArray(obj.subjects) ? obj.subjects : []).map((s) => {
      const x = rec(s);
      return { kind: str(x.kind), name: str(x.name), namespace: str(x.namespace) };
    }),
  };
}

/** The user name a subject stands for in a binding of `namespace` ('' for cluster bindings); undefined when none. */
function subjectUserName(s: Subject, namespace: string): string | undefined {
  if (s.kind === 'User') return s.name;
  if (s.kind !== 'ServiceAccount') return undefined;
  const ns = s.namespace || namespace;
  return ns ? `${SA_PREFIX}${ns}:${s.name}` : undefined;
}

/** Whether a binding subject applies to `user` (Kubernetes' appliesToUser). */
export function subjectApplies(user: UserInfo, s: Subject, namespace: string): boolean {
  if (s.kind === 'Group') return user.groups.includes(s.name);
  const name = subjectUserName(s, namespace);
  return name !== undefined && name === user.name;
}

function push(m: Map<string, Binding[]>, key: string, b: Binding): void {
  const list = m.get(key);
  if (!list) m.set(key, [b]);
  else if (list[list.length - 1] !== b) list.push(b); // one entry per binding and key
}

function addToTable(t: SubjectTable, b: Binding): void {
  for (const s of b.subjects) {
    if (s.kind === 'Group') { push(t.byGroup, s.name, b); continue; }
    const name = subjectUserName(s, b.namespace);
    if (name !== undefined) push(t.byUser, name, b);
  }
}

const newTable = (): SubjectTable => ({ byUser: new Map(), byGroup: new Map() });

export class RbacIndex {
  readonly ready: Promise<void>;
  private readonly roles: StoreMirror;
  private readonly clusterRoles: StoreMirror;
  private readonly roleBindings: StoreMirror;
  private readonly clusterRoleBindings: StoreMirror;
  /** Mirror generations the tables were built from. */
  private built = { roles: -1, clusterRoles: -1, roleBindings: -1, clusterRoleBindings: -1 };
  private roleRules = new Map<string, readonly PolicyRule[]>();
  private clusterRoleRules = new Map<string, readonly PolicyRule[]>();
  private clusterTable: SubjectTable = newTable();
  private namespaceTables = new Map<string, SubjectTable>();

  constructor(store: ObjectStore, log: Logger) {
    this.roles = storeMirror(store, RBAC_GROUP, 'roles', log);
    this.clusterRoles = storeMirror(store, RBAC_GROUP, 'clusterroles', log);
    this.roleBindings = storeMirror(store, RBAC_GROUP, 'rolebindings', log);
    this.clusterRoleBindings = storeMirror(store, RBAC_GROUP, 'clusterrolebindings', log);
    this.ready = Promise.all([this.roles.ready, this.clusterRoles.ready, this.roleBindings.ready, this.clusterRoleBindings.ready]).then(() => undefined);
  }

  get synced(): boolean {
    return this.roles.synced && this.clusterRoles.synced && this.roleBindings.synced && this.clusterRoleBindings.synced;
  }

  /** Rebuilds what changed since the last lookup. */
  private refresh(): void {
    const b = this.built;
    if (b.roles !== this.roles.generation) {
      b.roles = this.roles.generation;
      const m = new Map<string, readonly PolicyRule[]>();
      for (const [key, o] of this.roles.objects) m.set(key, compileRules(o));
      this.roleRules = m;
    }
    if (b.clusterRoles !== this.clusterRoles.generation) {
      b.clusterRoles = this.clusterRoles.generation;
      const m = new Map<string, readonly PolicyRule[]>();
      for (const [key, o] of this.clusterRoles.objects) m.set(key, compileRules(o));
      this.clusterRoleRules = m;
    }
    if (b.clusterRoleBindings !== this.clusterRoleBindings.generation) {
      b.clusterRoleBindings = this.clusterRoleBindings.generation;
      const t = newTable();
      for (const o of this.clusterRoleBindings.objects.values()) addToTable(t, compileBinding(o));
      this.clusterTable = t;
    }
    if (b.roleBindings !== this.roleBindings.generation) {
      b.roleBindings = this.roleBindings.generation;
      const tables = new Map<string, SubjectTable>();
      for (const o of this.roleBindings.objects.values()) {
        const binding = compileBinding(o);
        let t = tables.get(binding.namespace);
        if (!t) tables.set(binding.namespace, t = newTable());
        addToTable(t, binding);
      }
      this.namespaceTables = tables;
    }
  }

  /**
   * The rules a role reference grants: a ClusterRole, or a Role of the binding's namespace.
   * A missing role is an error worded as Kubernetes' listers word it.
   */
  roleRefRules(ref: RoleRef, namespace: string): readonly PolicyRule[] | Error {
    this.refresh();
    return this.resolve(ref, namespace);
  }

  private resolve(ref: RoleRef, namespace: string): readonly PolicyRule[] | Error {
    if (ref.kind === 'ClusterRole') return this.clusterRoleRules.get(ref.name) ?? new Error(`clusterrole.${RBAC_GROUP} "${ref.name}" not found`);
    if (ref.kind === 'Role') return this.roleRules.get(`${namespace}/${ref.name}`) ?? new Error(`role.${RBAC_GROUP} "${ref.name}" not found`);
    return new Error(`unsupported role reference kind: "${ref.kind}"`);
  }

  /**
   * Visits the rules that apply to `user` in `namespace` (Kubernetes' VisitRulesFor): those of
   * the ClusterRoleBindings, then those of the RoleBindings of the namespace. A binding naming
   * the user more than once (by name and by group) may be visited more than once.
   */
  visitRulesFor(user: UserInfo, namespace: string, visit: RuleVisitor): void {
    this.refresh();
    if (!this.visitTable(this.clusterTable, user, '', visit)) return;
    if (!namespace) return;
    const t = this.namespaceTables.get(namespace);
    if (t) this.visitTable(t, user, namespace, visit);
  }

  private visitTable(t: SubjectTable, user: UserInfo, namespace: string, visit: RuleVisitor): boolean {
    const own = t.byUser.get(user.name);
    if (own && !this.visitBindings(own, user, namespace, visit)) return false;
    if (t.byGroup.size === 0) return true;
    for (const g of user.groups) {
      const list = t.byGroup.get(g);
      if (list && !this.visitBindings(list, user, namespace, visit)) return false;
    }
    return true;
  }

  private visitBindings(list: readonly Binding[], user: UserInfo, namespace: string, visit: RuleVisitor): boolean {
    for (const b of list) {
      const rules = this.resolve(b.roleRef, b.namespace);
      if (rules instanceof Error) {
        if (!visit(undefined, undefined, rules)) return false;
        continue;
      }
      let source: RuleSource | undefined;
      for (const rule of rules) {
        // The source is described only when asked for (an allowed request's reason).
        source ??= { binding: b, subject: b.subjects.find((s) => subjectApplies(user, s, namespace)) ?? b.subjects[0]! };
        if (!visit(source, rule, undefined)) return false;
      }
    }
    return true;
  }

  /** Every rule that applies to `user` in `namespace`, each binding once, and the errors met. */
  rulesFor(user: UserInfo, namespace: string): { rules: PolicyRule[]; errors: Error[] } {
    const rules: PolicyRule[] = [];
    const errors: Error[] = [];
    // A role reached through several bindings (or one binding twice) shares its rule objects.
    const seenRules = new Set<PolicyRule>();
    const seenErrors = new Set<string>();
    this.visitRulesFor(user, namespace, (_source, rule, err) => {
      if (err && !seenErrors.has(err.message)) { seenErrors.add(err.message); errors.push(err); }
      if (rule && !seenRules.has(rule)) { seenRules.add(rule); rules.push(rule); }
      return true;
    });
    return { rules, errors };
  }
}

const indexes = new WeakMap<ObjectStore, RbacIndex>();

/** The store's RBAC index, started on first use (shared by the authorizer and the escalation checks). */
export function rbacIndexFor(store: ObjectStore, log?: Logger): RbacIndex {
  let i = indexes.get(store);
  if (!i) indexes.set(store, i = new RbacIndex(store, log ?? pino({ level: 'silent' })));
  return i;
}

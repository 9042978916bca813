/**
 * Our bootstrap policy against Kubernetes' own bootstrap policy test data
 * (test/fixtures/rbac-bootstrap, see its README): role by role, names, labels, annotations,
 * aggregation rules, rules as sets (broken down to one verb × group × resource × name each), and
 * for bindings roleRef and subjects. Every difference is listed below with its reason; a
 * difference not listed fails, and so does a listed one that no longer exists.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { load } from 'js-yaml';
import type { KubeObject } from '../../../../../src/api/resources/types.js';
import { bootstrapPolicy } from '../../../../../src/auth/authorizers/rbac/bootstrap/policy.js';
import { CONTROLLER_SERVICE_ACCOUNTS, CONTROLLERS_WITHOUT_ACCOUNT, NAMESPACED_ROLE_ACCOUNTS } from '../../../../../src/auth/authorizers/rbac/bootstrap/controller-roles.js';
import { breakdownRule } from '../../../../../src/auth/authorizers/rbac/bootstrap/reconcile.js';
import type { PolicyRule } from '../../../../../src/auth/authorizers/rbac/rule-match.js';
import { nodeRules } from '../../../../../src/auth/authorizers/node/node-rules.js';
import { IMPLEMENTED } from '../../../../../src/daemons/controller-manager/controller-registry.js';

const FIXTURES = join(process.cwd(), 'test', 'fixtures', 'rbac-bootstrap');

/** Kubernetes' controller roles (and bindings) of controllers corectl does not run. */
const CONTROLLERS_NOT_RUN: Readonly<Record<string, string>> = {
  'device-taint-eviction-controller': 'dynamic resource allocation (resource.k8s.io) is not served',
  'endpointslicemirroring-controller': 'no mirroring of custom Endpoints into EndpointSlices',
  'ephemeral-volume-controller': 'generic ephemeral volumes are not provisioned by a controller',
  'legacy-service-account-token-cleaner': 'no legacy token tracking',
  'podcheckpoint-controller': 'pod checkpoints are not served',
  'resource-claim-controller': 'dynamic resource allocation (resource.k8s.io) is not served',
  'route-controller': 'no cloud provider routes',
  'selinux-warning-controller': 'no SELinux mount conflict detection',
  'service-cidrs-controller': 'ServiceCIDR objects are not served (one --service-cluster-ip-range)',
  'service-controller': 'no cloud provider load balancers',
  'ttl-after-finished-controller': 'ttlSecondsAfterFinished is not implemented',
  'validatingadmissionpolicy-status-controller': 'ValidatingAdmissionPolicy type checking is not implemented',
  'volumeattributesclass-protection-controller': 'VolumeAttributesClass is not served',
};

/** Objects of ours that Kubernetes' data does not have, by kind/name. */
const OURS_ONLY: Readonly<Record<string, string>> = {};

/** Rules (broken down, as `verb group resource[/name]` or `verb url`) we grant beyond Kubernetes, by role. */
const EXTRA_RULES: Readonly<Record<string, { rules: string[]; reason: string }>> = {};

/** Kubernetes' rules we leave out, by role. */
const MISSING_RULES: Readonly<Record<string, { rules: string[]; reason: string }>> = {};

function items(file: string): KubeObject[] {
  const list = load(readFileSync(join(FIXTURES, file), 'utf8')) as { items: KubeObject[] };
  return list.items;
}

const keyOf = (o: KubeObject): string => `${o.kind}/${o.metadata?.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata?.name}`;

function ruleKeys(rules: unknown): Set<string> {
  const out = new Set<string>();
  for (const r of (rules as PolicyRule[] | null) ?? []) {
    for (const p of breakdownRule(r)) {
      out.add(p.nonResourceURLs ? `${p.verbs[0]} ${p.nonResourceURLs[0]}`
        : `${p.verbs[0]} ${p.apiGroups![0] || 'core'} ${p.resources![0]}${p.resourceNames ? `/${p.resourceNames[0]}` : ''}`);
    }
  }
  return out;
}

const minus = (a: Set<string>, b: Set<string>): string[] => [...a].filter((x) => !b.has(x)).sort();

function subjectKeys(o: KubeObject): string[] {
  return ((o.subjects as Array<Record<string, string>> | undefined) ?? [])
    .map((s) => `${s.kind}:${s.apiGroup ?? ''}:${s.namespace ?? ''}:${s.name}`).sort();
}

const controllerOf = (name: string | undefined): string | undefined => name?.startsWith('system:controller:') ? name.slice('system:controller:'.length) : undefined;

const policy = bootstrapPolicy();
const ours = new Map<string, KubeObject>();
for (const o of [...policy.clusterRoles, ...policy.clusterRoleBindings, ...policy.roles, ...policy.roleBindings]) ours.set(keyOf(o), o);

const theirs = new Map<string, KubeObject>();
const clusterScopedControllerFiles = new Set(['controller-roles.yaml', 'controller-role-bindings.yaml']);
for (const f of ['cluster-roles.yaml', 'cluster-role-bindings.yaml', 'controller-roles.yaml', 'controller-role-bindings.yaml', 'namespace-roles.yaml', 'namespace-role-bindings.yaml']) {
  for (const o of items(f)) {
    if (clusterScopedControllerFiles.has(f)) t.ok(controllerOf(o.metadata?.name), `${f}: ${o.metadata?.name} is a controller object`);
    theirs.set(keyOf(o), o);
  }
}

t.test('every Kubernetes object is ours, or a controller we do not run', async (t) => {
  const usedNotRun = new Set<string>();
  for (const [key, k] of theirs) {
    if (ours.has(key)) continue;
    const c = controllerOf(k.metadata?.name);
    if (c && CONTROLLERS_NOT_RUN[c] && (k.kind === 'ClusterRole' || k.kind === 'ClusterRoleBinding')) { usedNotRun.add(c); continue; }
    t.fail(`${key}: Kubernetes has it, we do not (list it with a reason)`);
  }
  for (const c of Object.keys(CONTROLLERS_NOT_RUN)) t.ok(usedNotRun.has(c), `${c} is listed as not run and Kubernetes has its objects`);
  for (const c of Object.keys(CONTROLLERS_NOT_RUN)) {
    t.notOk(Object.values(CONTROLLER_SERVICE_ACCOUNTS).includes(c), `${c}: listed as not run, but a controller we run uses it`);
  }
});

t.test('every object of ours is Kubernetes\', or listed', async (t) => {
  for (const key of ours.keys()) {
    if (theirs.has(key)) continue;
    t.ok(OURS_ONLY[key], `${key}: ours only (list it with a reason)`);
  }
});

t.test('role by role: labels, annotations, aggregation, rules as sets', async (t) => {
  for (const [key, o] of ours) {
    const k = theirs.get(key);
    if (!k || !(o.kind === 'ClusterRole' || o.kind === 'Role')) continue;
    t.same(o.metadata?.labels, k.metadata?.labels, `${key}: labels`);
    t.same(o.metadata?.annotations, k.metadata?.annotations, `${key}: annotations`);
    t.same(o.aggregationRule ?? null, k.aggregationRule ?? null, `${key}: aggregationRule`);
    const mine = ruleKeys(o.rules);
    const theirRules = ruleKeys(k.rules);
    const name = o.metadata!.name!;
    t.same(minus(mine, theirRules), (EXTRA_RULES[name]?.rules ?? []).slice().sort(), `${key}: rules beyond Kubernetes'`);
    t.same(minus(theirRules, mine), (MISSING_RULES[name]?.rules ?? []).slice().sort(), `${key}: Kubernetes' rules we lack`);
  }
});

t.test('binding by binding: labels, annotations, roleRef, subjects', async (t) => {
  for (const [key, o] of ours) {
    const k = theirs.get(key);
    if (!k || !(o.kind === 'ClusterRoleBinding' || o.kind === 'RoleBinding')) continue;
    t.same(o.metadata?.labels, k.metadata?.labels, `${key}: labels`);
    t.same(o.metadata?.annotations, k.metadata?.annotations, `${key}: annotations`);
    t.same(o.roleRef, k.roleRef, `${key}: roleRef`);
    t.same(subjectKeys(o), subjectKeys(k), `${key}: subjects`);
  }
});

t.test('every controller we run has its role, or runs as the controller manager', async (t) => {
  for (const name of Object.keys(IMPLEMENTED)) {
    const sa = CONTROLLER_SERVICE_ACCOUNTS[name];
    if (CONTROLLERS_WITHOUT_ACCOUNT.includes(name)) { t.notOk(sa, `${name}: no account`); continue; }
    t.ok(sa, `${name} has a service account`);
    if (sa && NAMESPACED_ROLE_ACCOUNTS.includes(sa)) {
      t.notOk(ours.has(`ClusterRole/system:controller:${sa}`), `${name}: no ClusterRole, as in Kubernetes`);
      t.ok(ours.has(`RoleBinding/kube-system/system:controller:${sa}`), `${name}: RoleBinding kube-system/system:controller:${sa}`);
      continue;
    }
    t.ok(ours.has(`ClusterRole/system:controller:${sa}`), `${name}: ClusterRole system:controller:${sa}`);
    t.ok(ours.has(`ClusterRoleBinding/system:controller:${sa}`), `${name}: ClusterRoleBinding system:controller:${sa}`);
  }
  for (const name of Object.keys(CONTROLLER_SERVICE_ACCOUNTS)) t.ok(name in IMPLEMENTED, `${name} is a controller we run`);
});

t.test('the listed differences say why', async (t) => {
  for (const [k, v] of Object.entries({ ...CONTROLLERS_NOT_RUN, ...OURS_ONLY })) t.ok(v.length > 10, `${k}: reason given`);
  for (const [k, v] of Object.entries({ ...EXTRA_RULES, ...MISSING_RULES })) t.ok(v.reason.length > 10, `${k}: reason given`);
});

t.test('system:node is nodeRules()', async (t) => {
  t.same(ours.get('ClusterRole/system:node')?.rules, nodeRules());
});

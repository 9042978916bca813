import t from 'tap';
import type { KubeObject } from '../../../../../src/api/resources/types.js';
import { clusterRole, clusterRoleBinding, group, rule, urlRule, user } from '../../../../../src/auth/authorizers/rbac/bootstrap/builders.js';
import { reconcileBinding, reconcileRole, ruleCovers, uncoveredRules } from '../../../../../src/auth/authorizers/rbac/bootstrap/reconcile.js';

const stored = (o: KubeObject, patch: (o: KubeObject) => void = () => undefined): KubeObject => {
  const c = structuredClone(o);
  c.metadata!.resourceVersion = '7';
  c.metadata!.uid = 'u1';
  patch(c);
  return c;
};

t.test('covers: wildcards, */subresource, names, URL prefixes', async (t) => {
  t.ok(ruleCovers(rule(['*'], ['*'], ['*']), rule(['get'], [''], ['pods'])));
  t.ok(ruleCovers(rule(['get'], ['*'], ['*/scale']), rule(['get'], ['apps'], ['deployments/scale'])));
  t.notOk(ruleCovers(rule(['get'], ['*'], ['*/scale']), rule(['get'], ['apps'], ['deployments'])));
  t.ok(ruleCovers(rule(['get'], [''], ['configmaps']), rule(['get'], [''], ['configmaps'], ['a'])));
  t.notOk(ruleCovers(rule(['get'], [''], ['configmaps'], ['a']), rule(['get'], [''], ['configmaps'])));
  t.ok(ruleCovers(urlRule(['get'], ['/healthz/*']), urlRule(['get'], ['/healthz/etcd'])));
  t.notOk(ruleCovers(urlRule(['get'], ['/healthz']), urlRule(['get'], ['/healthz/etcd'])));
  t.same(uncoveredRules([rule(['get'], [''], ['pods'])], [rule(['get', 'list'], [''], ['pods'])]),
    [{ apiGroups: [''], resources: ['pods'], verbs: ['list'] }]);
});

t.test('a role: missing is created; unchanged is none', async (t) => {
  const want = clusterRole('r', [rule(['get'], [''], ['pods'])]);
  t.equal(reconcileRole(want, undefined).operation, 'create');
  t.equal(reconcileRole(want, stored(want)).operation, 'none');
});

t.test('a role with autoupdate true gets back missing rules, keeps what a user added', async (t) => {
  const want = clusterRole('r', [rule(['get', 'list'], [''], ['pods'])]);
  const cur = stored(want, (o) => { o.rules = [rule(['get'], [''], ['pods']), rule(['delete'], [''], ['secrets'])]; o.metadata!.labels!['mine'] = 'x'; });
  const r = reconcileRole(want, cur);
  t.equal(r.operation, 'update');
  t.same(r.object.rules, [rule(['get'], [''], ['pods']), rule(['delete'], [''], ['secrets']), { apiGroups: [''], resources: ['pods'], verbs: ['list'] }]);
  t.equal(r.object.metadata?.labels?.['mine'], 'x');
  t.equal(r.object.metadata?.resourceVersion, '7', 'written against the version read');
});

t.test('labels and annotations: missing keys added, stored values win', async (t) => {
  const want = clusterRole('r', []);
  const cur = stored(want, (o) => { o.metadata!.labels = { 'kubernetes.io/bootstrapping': 'mine' }; delete o.metadata!.annotations; });
  const r = reconcileRole(want, cur);
  t.equal(r.operation, 'update');
  t.same(r.object.metadata?.labels, { 'kubernetes.io/bootstrapping': 'mine' });
  t.same(r.object.metadata?.annotations, { 'rbac.authorization.kubernetes.io/autoupdate': 'true' });
});

t.test('autoupdate "false" protects a role and a binding', async (t) => {
  const want = clusterRole('r', [rule(['get'], [''], ['pods'])]);
  const cur = stored(want, (o) => { o.rules = []; o.metadata!.annotations!['rbac.authorization.kubernetes.io/autoupdate'] = 'false'; });
  const r = reconcileRole(want, cur);
  t.equal(r.operation, 'none');
  t.ok(r.protected);
  const b = clusterRoleBinding('b', 'r', [user('u')]);
  const bcur = stored(b, (o) => { o.subjects = []; o.roleRef = { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'other' }; o.metadata!.annotations!['rbac.authorization.kubernetes.io/autoupdate'] = 'false'; });
  t.equal(reconcileBinding(b, bcur).operation, 'none');
});

t.test('aggregation: missing selectors added; an unexpected aggregationRule removed', async (t) => {
  const want = clusterRole('admin', [], { aggregateFrom: [{ a: 'true' }] });
  const cur = stored(want, (o) => { o.aggregationRule = { clusterRoleSelectors: [{ matchLabels: { mine: 'true' } }] }; o.rules = [rule(['get'], [''], ['pods'])]; });
  const r = reconcileRole(want, cur);
  t.equal(r.operation, 'update');
  t.same(r.object.aggregationRule, { clusterRoleSelectors: [{ matchLabels: { mine: 'true' } }, { matchLabels: { a: 'true' } }] });
  t.same(r.object.rules, [rule(['get'], [''], ['pods'])], 'aggregated rules are the controller\'s');
  const plain = clusterRole('p', []);
  const r2 = reconcileRole(plain, stored(plain, (o) => { o.aggregationRule = { clusterRoleSelectors: [] }; }));
  t.equal(r2.operation, 'update');
  t.notOk('aggregationRule' in r2.object);
});

t.test('a binding: missing subjects added, extra kept; another roleRef recreates', async (t) => {
  const want = clusterRoleBinding('b', 'r', [group('system:authenticated')]);
  const cur = stored(want, (o) => { o.subjects = [user('someone')]; });
  const r = reconcileBinding(want, cur);
  t.equal(r.operation, 'update');
  t.same(r.object.subjects, [user('someone'), group('system:authenticated')]);
  // The server defaults apiGroup; subjects match without it.
  const noGroup = stored(want, (o) => { o.subjects = [{ kind: 'Group', name: 'system:authenticated' }]; });
  t.equal(reconcileBinding(want, noGroup).operation, 'none');
  const other = stored(want, (o) => { o.roleRef = { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'x' }; });
  t.equal(reconcileBinding(want, other).operation, 'recreate');
});

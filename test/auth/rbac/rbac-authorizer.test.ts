// The RBAC authorizer on a real LevelDB object store: ClusterRoleBindings and the namespace's
// RoleBindings by user, group and service account; a RoleBinding to a ClusterRole; Kubernetes'
// reasons (allowed by ..., a missing role); rules for SelfSubjectRulesReview; lookups by subject
// (a user's request never visits the rules of bindings naming others); and the changes followed.
import t, { type Test } from 'tap';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeObject } from '../../../src/api/resources/types.js';
import type { AuthorizationAttributes } from '../../../src/auth/authorizer.js';
import { rbacIndexFor } from '../../../src/auth/authorizers/rbac/policy-index.js';
import { RbacAuthorizer } from '../../../src/auth/authorizers/rbac/rbac-authorizer.js';
import type { UserInfo } from '../../../src/auth/user.js';
import { openLevelBackend } from '../../../src/storage/leveldb/level-backend.js';
import { createObjectStore } from '../../../src/storage/object-store.js';
import type { ObjectStore } from '../../../src/storage/object-store-types.js';
import { waitFor } from '../../helpers/wait-for.js';

const G = 'rbac.authorization.k8s.io';

async function openStore(t: Test): Promise<ObjectStore> {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-rbac-'));
  const backend = await openLevelBackend({ dir });
  const store = createObjectStore({ backendFor: () => backend, prefix: '/registry', watchCache: { enabled: true, defaultSize: 100, sizes: {} } });
  t.teardown(async () => { await store.close(); await backend.close(); await rm(dir, { recursive: true, force: true }); });
  return store;
}

const role = (kind: 'Role' | 'ClusterRole', name: string, rules: unknown[], namespace?: string): KubeObject =>
  ({ apiVersion: `${G}/v1`, kind, metadata: { name, uid: `uid-${name}`, ...(namespace ? { namespace } : {}) }, rules });
const binding = (kind: 'RoleBinding' | 'ClusterRoleBinding', name: string, roleRef: { kind: string; name: string }, subjects: unknown[], namespace?: string): KubeObject =>
  ({ apiVersion: `${G}/v1`, kind, metadata: { name, uid: `uid-${name}`, ...(namespace ? { namespace } : {}) }, roleRef: { apiGroup: G, ...roleRef }, subjects });

async function put(store: ObjectStore, o: KubeObject): Promise<void> {
  const resource = `${o.kind!.toLowerCase()}s`;
  await store.create({ group: G, resource, namespace: o.metadata?.namespace ?? '', name: o.metadata!.name! }, o);
}

function req(user: UserInfo, verb: string, resource: string, namespace = '', more: Partial<AuthorizationAttributes> = {}): AuthorizationAttributes {
  return { user, verb, isResourceRequest: true, path: '', namespace, apiGroup: '', apiVersion: 'v1', resource, subresource: '', name: '', ...more };
}

const alice: UserInfo = { name: 'alice', groups: ['devs', 'system:authenticated'] };
const robot: UserInfo = { name: 'system:serviceaccount:team:robot', groups: ['system:serviceaccounts', 'system:serviceaccounts:team', 'system:authenticated'] };

t.test('bindings by user, group and service account; reasons as Kubernetes words them', async (t) => {
  const store = await openStore(t);
  await put(store, role('ClusterRole', 'pod-reader', [{ verbs: ['get', 'list'], apiGroups: [''], resources: ['pods'] }]));
  await put(store, role('ClusterRole', 'url-reader', [{ verbs: ['get'], nonResourceURLs: ['/logs/*'] }]));
  await put(store, role('Role', 'secret-reader', [{ verbs: ['get'], apiGroups: [''], resources: ['secrets'], resourceNames: ['one'] }], 'team'));
  await put(store, binding('ClusterRoleBinding', 'alice-pods', { kind: 'ClusterRole', name: 'pod-reader' }, [{ kind: 'User', name: 'alice' }]));
  await put(store, binding('ClusterRoleBinding', 'devs-urls', { kind: 'ClusterRole', name: 'url-reader' }, [{ kind: 'Group', name: 'devs' }]));
  // A namespace-less service account in a ClusterRoleBinding applies to nobody.
  await put(store, binding('ClusterRoleBinding', 'sa-no-ns', { kind: 'ClusterRole', name: 'pod-reader' }, [{ kind: 'ServiceAccount', name: 'robot' }]));
  // In a RoleBinding the service account's namespace defaults to the binding's.
  await put(store, binding('RoleBinding', 'robot-secrets', { kind: 'Role', name: 'secret-reader' }, [{ kind: 'ServiceAccount', name: 'robot' }], 'team'));
  await put(store, binding('RoleBinding', 'robot-pods', { kind: 'ClusterRole', name: 'pod-reader' }, [{ kind: 'User', name: 'nobody' }, { kind: 'ServiceAccount', name: 'robot', namespace: 'team' }], 'team'));
  await put(store, binding('RoleBinding', 'dangling', { kind: 'Role', name: 'gone' }, [{ kind: 'Group', name: 'devs' }], 'team'));

  const index = rbacIndexFor(store);
  await index.ready;
  const rbac = new RbacAuthorizer(index);

  t.same(rbac.authorize(req(alice, 'list', 'pods', 'default')),
    { decision: 'allow', reason: 'RBAC: allowed by ClusterRoleBinding "alice-pods" of ClusterRole "pod-reader" to User "alice"' });
  t.same(rbac.authorize({ ...req(alice, 'get', ''), isResourceRequest: false, path: '/logs/kube.log' }),
    { decision: 'allow', reason: 'RBAC: allowed by ClusterRoleBinding "devs-urls" of ClusterRole "url-reader" to Group "devs"' }, 'by group, non-resource URL with *');
  t.same(rbac.authorize(req(alice, 'delete', 'pods', 'default')), { decision: 'noOpinion', reason: '' }, 'no opinion, no reason');
  t.same(rbac.authorize(req(alice, 'delete', 'pods', 'team')), { decision: 'noOpinion', reason: 'RBAC: role.rbac.authorization.k8s.io "gone" not found' },
    'a binding to a missing role is the reason');

  t.equal(rbac.authorize(req(robot, 'list', 'pods', 'default')).decision, 'noOpinion', 'no cluster-wide grant to a namespace-less service account');
  t.same(rbac.authorize(req(robot, 'list', 'pods', 'team')),
    { decision: 'allow', reason: 'RBAC: allowed by RoleBinding "robot-pods/team" of ClusterRole "pod-reader" to ServiceAccount "robot/team"' },
    'a RoleBinding to a ClusterRole, the applying subject described');
  t.same(rbac.authorize(req(robot, 'get', 'secrets', 'team', { name: 'one' })),
    { decision: 'allow', reason: 'RBAC: allowed by RoleBinding "robot-secrets/team" of Role "secret-reader" to ServiceAccount "robot/team"' });
  t.equal(rbac.authorize(req(robot, 'get', 'secrets', 'team', { name: 'two' })).decision, 'noOpinion', 'resourceNames');
  t.equal(rbac.authorize(req(robot, 'list', 'secrets', 'team')).decision, 'noOpinion', 'resourceNames do not allow a list');
  t.equal(rbac.authorize(req({ ...robot, name: 'system:serviceaccount:other:robot' }, 'get', 'secrets', 'team', { name: 'one' })).decision, 'noOpinion',
    'a service account of another namespace');

  const rules = await rbac.rulesFor(alice, 'team');
  t.same(rules.resourceRules, [{ verbs: ['get', 'list'], apiGroups: [''], resources: ['pods'] }]);
  t.same(rules.nonResourceRules, [{ verbs: ['get'], nonResourceURLs: ['/logs/*'] }]);
  t.equal(rules.incomplete, false);
  t.equal(rules.evaluationError, 'role.rbac.authorization.k8s.io "gone" not found');
  const robotRules = await rbac.rulesFor(robot, 'team');
  t.same(robotRules.resourceRules.map((r) => r.resources[0]).sort(), ['pods', 'secrets'], 'the rules of both bindings');
  t.ok(robotRules.resourceRules.some((r) => r.resourceNames?.[0] === 'one'), 'resourceNames kept');

  // Changes are followed: a new binding allows, a deleted one no longer does.
  await put(store, binding('ClusterRoleBinding', 'alice-secrets', { kind: 'ClusterRole', name: 'secret-admin' }, [{ kind: 'User', name: 'alice' }]));
  await put(store, role('ClusterRole', 'secret-admin', [{ verbs: ['*'], apiGroups: [''], resources: ['secrets'] }]));
  await waitFor('new binding followed', () => rbac.authorize(req(alice, 'delete', 'secrets', 'x')).decision === 'allow');
  await store.delete({ group: G, resource: 'clusterrolebindings', namespace: '', name: 'alice-pods' });
  await waitFor('deleted binding followed', () => rbac.authorize(req(alice, 'list', 'pods', 'default')).decision === 'noOpinion');
});

t.test('lookups by subject: rules of bindings naming others are never visited', async (t) => {
  const store = await openStore(t);
  await put(store, role('ClusterRole', 'reader', [{ verbs: ['get'], apiGroups: [''], resources: ['configmaps'] }]));
  await put(store, role('ClusterRole', 'writer', [{ verbs: ['create'], apiGroups: [''], resources: ['configmaps'] }]));
  for (let i = 0; i < 300; i++) {
    await put(store, binding('RoleBinding', `rb-${i}`, { kind: 'ClusterRole', name: 'writer' }, [{ kind: 'User', name: `user-${i}` }], 'team'));
  }
  await put(store, binding('RoleBinding', 'alice', { kind: 'ClusterRole', name: 'reader' }, [{ kind: 'User', name: 'alice' }], 'team'));
  const index = rbacIndexFor(store);
  await index.ready;
  await waitFor('all bindings mirrored', () => new RbacAuthorizer(index).authorize(req(alice, 'get', 'configmaps', 'team')).decision === 'allow');
  let visited = 0;
  index.visitRulesFor(alice, 'team', (_s, rule) => { if (rule) visited++; return true; });
  t.equal(visited, 1, 'only the rule of the binding naming alice');
  visited = 0;
  index.visitRulesFor({ name: 'user-7', groups: [] }, 'team', (_s, rule) => { if (rule) visited++; return true; });
  t.equal(visited, 1, 'only the rule of the binding naming user-7');
});

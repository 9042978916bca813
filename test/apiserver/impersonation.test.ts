// Impersonation (Impersonate-User, -Group, -Uid, -Extra-*): every value needs the `impersonate`
// verb for the authenticated user (ABAC grants it here, AlwaysAllow is off), refusals are 403 in
// Kubernetes' words, the request then runs as the impersonated user (SelfSubjectReview shows
// it), the authenticated user stays on the context as originalUser and the headers are gone.
import t from 'tap';
import type { RequestContext } from '../../src/daemons/apiserver/context.js';
import { abacServer } from '../helpers/abac-server.js';
import { h1request, h2request, startApiserver, type TestRequest } from '../helpers/apiserver.js';

t.test('impersonation under ABAC', async (t) => {
  const { s, users } = await abacServer(t);
  const as = (who: string, path: string, headers: Record<string, string> = {}, extra: Partial<TestRequest> = {}) =>
    h2request(s.url, { path, ca: s.ca.certPem, cert: users[who]!.certPem, key: users[who]!.keyPem, headers, ...extra });
  const whoami = async (who: string, headers: Record<string, string>) => {
    const r = await as(who, '/apis/authentication.k8s.io/v1/selfsubjectreviews', { 'content-type': 'application/json', ...headers },
      { method: 'POST', body: JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' }) });
    t.equal(r.status, 201, `whoami as ${JSON.stringify(headers)}: ${r.body}`);
    return JSON.parse(r.body).status.userInfo;
  };
  const forbidden = async (r: { status: number; body: string }, message: string, what: string) => {
    t.equal(r.status, 403, what);
    const st = JSON.parse(r.body);
    t.equal(st.reason, 'Forbidden');
    t.equal(st.message, message, what);
  };

  // Without the verb: 403, and nothing runs as the other user.
  await forbidden(await as('bob', '/api/v1/namespaces/dave-ns/pods', { 'impersonate-user': 'dave' }),
    'users "dave" is forbidden: User "bob" cannot impersonate resource "users" in API group "" at the cluster scope: No policy matched.', 'bob may not impersonate');
  t.equal((await as('bob', '/api/v1/namespaces/dave-ns/pods')).status, 200, 'bob himself may read');

  // With it: the request runs as dave, with dave's permissions only.
  t.equal((await as('alice', '/api/v1/namespaces/dave-ns/pods', { 'impersonate-user': 'dave' })).status, 200, 'alice as dave lists pods in dave-ns');
  await forbidden(await as('alice', '/api/v1/namespaces/other/pods', { 'impersonate-user': 'dave' }),
    'pods is forbidden: User "dave" cannot list resource "pods" in API group "" in the namespace "other": No policy matched.', 'dave may not list elsewhere');
  t.same(await whoami('alice', { 'impersonate-user': 'dave' }), { username: 'dave', groups: ['system:authenticated'] }, 'SelfSubjectReview shows dave');

  // Groups: the given ones plus system:authenticated; permissions of the group apply.
  t.same(await whoami('alice', { 'impersonate-user': 'dave', 'impersonate-group': 'ops' }), { username: 'dave', groups: ['ops', 'system:authenticated'] });
  t.equal((await as('alice', '/api/v1/namespaces/other/secrets', { 'impersonate-user': 'dave', 'impersonate-group': 'ops' })).status, 200, 'as dave in ops');
  await forbidden(await as('carol', '/api/v1/namespaces/dave-ns/pods', { 'impersonate-user': 'dave', 'impersonate-group': 'ops' }),
    'groups "ops" is forbidden: User "carol" cannot impersonate resource "groups" in API group "" at the cluster scope: No policy matched.', 'carol may not impersonate groups');
  const alone = await as('alice', '/api/v1/namespaces/dave-ns/pods', { 'impersonate-group': 'ops' });
  t.equal(alone.status, 500, 'a group without a user');
  t.match(JSON.parse(alone.body).message, /^Internal error occurred: requested \[group ops\] without impersonating a user$/);

  // Service accounts: checked as serviceaccounts in their namespace; their groups come along.
  t.same(await whoami('alice', { 'impersonate-user': 'system:serviceaccount:ns1:sa1' }),
    { username: 'system:serviceaccount:ns1:sa1', groups: ['system:serviceaccounts', 'system:serviceaccounts:ns1', 'system:authenticated'] });
  t.equal((await as('alice', '/api/v1/namespaces/ns1/configmaps', { 'impersonate-user': 'system:serviceaccount:ns1:sa1' })).status, 200, 'as the service account');
  await forbidden(await as('alice', '/api/v1/namespaces/ns2/configmaps', { 'impersonate-user': 'system:serviceaccount:ns2:sa2' }),
    'serviceaccounts "sa2" is forbidden: User "alice" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "ns2": No policy matched.', 'a service account of another namespace');
  await forbidden(await as('carol', '/api/v1/namespaces/ns1/configmaps', { 'impersonate-user': 'system:serviceaccount:ns1:sa1' }),
    'serviceaccounts "sa1" is forbidden: User "carol" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "ns1": No policy matched.', 'users is not serviceaccounts');

  // Uid and extras (keys percent-decoded and lower-cased).
  t.same(await whoami('alice', { 'impersonate-user': 'dave', 'impersonate-uid': 'uid-1234', 'impersonate-extra-acme.com%2FProject': 'p1' }),
    { username: 'dave', uid: 'uid-1234', groups: ['system:authenticated'], extra: { 'acme.com/project': ['p1'] } });
  await forbidden(await as('carol', '/api/v1/namespaces/dave-ns/pods', { 'impersonate-user': 'dave', 'impersonate-uid': 'uid-1234' }),
    'uids.authentication.k8s.io "uid-1234" is forbidden: User "carol" cannot impersonate resource "uids" in API group "authentication.k8s.io" at the cluster scope: No policy matched.', 'carol may not impersonate uids');
  await forbidden(await as('carol', '/api/v1/namespaces/dave-ns/pods', { 'impersonate-user': 'dave', 'impersonate-extra-scopes': 'view' }),
    'userextras.authentication.k8s.io "view" is forbidden: User "carol" cannot impersonate resource "userextras/scopes" in API group "authentication.k8s.io" at the cluster scope: No policy matched.', 'carol may not impersonate extras');
  t.equal((await as('carol', '/api/v1/namespaces/dave-ns/pods', { 'impersonate-user': 'dave' })).status, 200, 'carol may impersonate the user alone');

  // Anonymous: system:unauthenticated instead of system:authenticated.
  const anon = await as('alice', '/api/v1/namespaces/dave-ns/pods', { 'impersonate-user': 'system:anonymous' });
  t.equal(anon.status, 403, 'anonymous has no rights here');
  t.match(JSON.parse(anon.body).message, /User "system:anonymous" cannot list/);
});

t.test('the context keeps the original user, repeated groups stay apart, the headers are removed', async (t) => {
  const seen: Array<{ user: unknown; originalUser: unknown; headers: string[] }> = [];
  const s = await startApiserver({
    rest: {
      async handle(ctx: RequestContext, req, res) {
        seen.push({ user: ctx.user, originalUser: ctx.originalUser, headers: Object.keys(req.headers).filter((h) => h.startsWith('impersonate-')) });
        res.statusCode = 200;
        res.end('{}');
      },
    },
    serving: { authorizationMode: ['AlwaysAllow'] },
  });
  t.teardown(() => s.stop());
  const alice = await s.issueClient('alice', ['staff']);
  const base = { path: '/api/v1/pods', ca: s.ca.certPem, cert: alice.certPem, key: alice.keyPem };
  // HTTP/1.1 with repeated Impersonate-Group headers (an array value sends one header each).
  const r1 = await h1request(s.url, { ...base, headers: { 'impersonate-user': 'Doe, John', 'impersonate-group': ['g1, x', 'g2'] as unknown as string } });
  t.equal(r1.status, 200);
  t.same(seen[0]!.user, { name: 'Doe, John', groups: ['g1, x', 'g2', 'system:authenticated'] });
  t.same(seen[0]!.originalUser, { name: 'alice', groups: ['staff', 'system:authenticated'] }, 'originalUser: the authenticated user');
  t.same(seen[0]!.headers, [], 'impersonation headers removed');
  const r2 = await h2request(s.url, { ...base, headers: { 'impersonate-user': 'Doe, John', 'impersonate-group': ['g1, x', 'g2'] as unknown as string, 'impersonate-extra-scopes': ['a, b', 'c'] as unknown as string } });
  t.equal(r2.status, 200);
  t.same(seen[1]!.user, { name: 'Doe, John', groups: ['g1, x', 'g2', 'system:authenticated'], extra: { scopes: ['a, b', 'c'] } }, 'HTTP/2 too (values with ", " intact)');
  await h2request(s.url, { ...base });
  t.equal(seen[2]!.originalUser, undefined, 'no impersonation: no originalUser');
});

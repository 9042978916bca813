/**
 * The RBAC bootstrap policy reconciled at API server start (src/daemons/apiserver/rbac-bootstrap.ts):
 * a fresh server has every default object and /readyz waits for them; a changed autoupdate
 * object gets back what it lost, one annotated autoupdate "false" is left alone; two API servers
 * starting at once on one etcd end with one copy of each object and no error.
 */
import { pino, type Logger } from 'pino';
import t, { type Test } from 'tap';
import type { KubeObject } from '../../src/api/resources/types.js';
import { bootstrapPolicy } from '../../src/auth/authorizers/rbac/bootstrap/policy.js';
import { reconcileBootstrapPolicy, RBAC_BOOTSTRAP_CHECK } from '../../src/daemons/apiserver/rbac-bootstrap.js';
import { startApiserver, type StartedApiserver } from '../helpers/apiserver.js';
import { skipWithoutEtcd, startEtcd } from '../helpers/etcd.js';
import { connectClient, type RestClient } from '../helpers/rest-client.js';

const RBAC = '/apis/rbac.authorization.k8s.io/v1';
const policy = bootstrapPolicy();

function capture(): { log: Logger; lines: string[] } {
  const lines: string[] = [];
  return { lines, log: pino({ level: 'info' }, { write(l: string) { lines.push(l); } }) };
}

async function waitReady(c: RestClient, deadlineMs = 20_000): Promise<void> {
  const end = Date.now() + deadlineMs;
  for (;;) {
    const r = await c.request('GET', '/readyz');
    if (r.status === 200) return;
    if (Date.now() > end) throw new Error(`not ready: ${r.body.toString()}`);
    await new Promise((res) => setTimeout(res, 50));
  }
}

async function names(c: RestClient, plural: string): Promise<string[]> {
  const r = await c.request('GET', `${RBAC}/${plural}`);
  if (r.status !== 200) throw new Error(`list ${plural}: ${r.status}`);
  return (r.json.items as KubeObject[]).map((o) => `${o.metadata?.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata?.name}`).sort();
}

const expectedNames = (objs: KubeObject[]): string[] =>
  objs.map((o) => `${o.metadata?.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata?.name}`).sort();

async function assertAllThere(t: Test, c: RestClient): Promise<void> {
  t.same(await names(c, 'clusterroles'), expectedNames(policy.clusterRoles), 'clusterroles');
  t.same(await names(c, 'clusterrolebindings'), expectedNames(policy.clusterRoleBindings), 'clusterrolebindings');
  t.same(await names(c, 'roles'), expectedNames(policy.roles), 'roles');
  t.same(await names(c, 'rolebindings'), expectedNames(policy.roleBindings), 'rolebindings');
}

async function get(c: RestClient, path: string): Promise<KubeObject> {
  const r = await c.request('GET', `${RBAC}/${path}`);
  if (r.status !== 200) throw new Error(`GET ${path}: ${r.status}`);
  return r.json as KubeObject;
}

async function put(c: RestClient, path: string, o: KubeObject): Promise<void> {
  const r = await c.request('PUT', `${RBAC}/${path}`, { body: o });
  if (r.status !== 200) throw new Error(`PUT ${path}: ${r.status} ${r.body.toString()}`);
}

/** Changes three defaults the way a user might: one autoupdate role and binding stripped, one role pinned with autoupdate "false". */
async function tamper(c: RestClient): Promise<void> {
  const basic = await get(c, 'clusterroles/system:basic-user');
  basic.rules = [{ verbs: ['get'], apiGroups: [''], resources: ['pods'] }];
  basic.metadata!.labels = { mine: 'yes' };
  await put(c, 'clusterroles/system:basic-user', basic);
  const discovery = await get(c, 'clusterroles/system:discovery');
  discovery.rules = [];
  discovery.metadata!.annotations!['rbac.authorization.kubernetes.io/autoupdate'] = 'false';
  await put(c, 'clusterroles/system:discovery', discovery);
  const viewer = await get(c, 'clusterrolebindings/system:public-info-viewer');
  viewer.subjects = [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'alice' }];
  await put(c, 'clusterrolebindings/system:public-info-viewer', viewer);
}

async function assertReconciled(t: Test, c: RestClient): Promise<void> {
  const basic = await get(c, 'clusterroles/system:basic-user');
  const verbsOn = (res: string): string[] => ((basic.rules as Array<{ verbs: string[]; resources?: string[] }>) ?? [])
    .filter((r) => r.resources?.includes(res)).flatMap((r) => r.verbs);
  t.same(verbsOn('selfsubjectaccessreviews'), ['create'], 'autoupdate role: rules given back');
  t.same(verbsOn('selfsubjectreviews'), ['create']);
  t.same(verbsOn('pods'), ['get'], 'the rule a user added is kept');
  t.same(basic.metadata?.labels, { 'kubernetes.io/bootstrapping': 'rbac-defaults', mine: 'yes' }, 'missing label added, the user\'s kept');
  const discovery = await get(c, 'clusterroles/system:discovery');
  t.same(discovery.rules ?? [], [], 'autoupdate "false": left alone');
  const viewer = await get(c, 'clusterrolebindings/system:public-info-viewer');
  t.same((viewer.subjects as Array<{ name: string }>).map((s) => s.name), ['alice', 'system:authenticated', 'system:unauthenticated'],
    'binding: subjects given back, the user\'s kept');
}

t.test('a fresh server has every default object; /readyz waits for them', async (t) => {
  const { log, lines } = capture();
  const a = await startApiserver({ log });
  t.teardown(() => a.stop());
  const c = await connectClient(a);
  t.teardown(() => c.close());
  await waitReady(c);
  const verbose = await c.request('GET', '/readyz?verbose');
  t.match(verbose.body.toString(), `[+]${RBAC_BOOTSTRAP_CHECK} ok`);
  t.equal((await c.request('GET', `/healthz/${RBAC_BOOTSTRAP_CHECK}`)).status, 200);
  await assertAllThere(t, c);
  const admin = await get(c, 'clusterroles/admin');
  t.same(admin.aggregationRule, { clusterRoleSelectors: [{ matchLabels: { 'rbac.authorization.k8s.io/aggregate-to-admin': 'true' } }] });
  t.equal(admin.metadata?.annotations?.['rbac.authorization.kubernetes.io/autoupdate'], 'true');
  const done = lines.map((l) => JSON.parse(l) as { msg: string; ms?: number; created?: number }).find((l) => l.msg === 'RBAC bootstrap policy reconciled');
  t.ok(done, 'the pass logs its counts and duration');
  t.equal(done?.created, policy.clusterRoles.length + policy.clusterRoleBindings.length + policy.roles.length + policy.roleBindings.length);
  t.comment(`reconciliation on LevelDB, fresh: ${done?.ms} ms`);

  await tamper(c);
  // The pass a start runs, again (a restart on etcd is tested below).
  const started = performance.now();
  const counts = await reconcileBootstrapPolicy(a.parts!.rest.registry, pino({ level: 'silent' }));
  t.comment(`reconciliation on LevelDB, nothing missing but 2 objects: ${Math.round(performance.now() - started)} ms`);
  t.same(counts, { created: 0, updated: 2, recreated: 0, protected: 1, unchanged: counts.unchanged });
  await assertReconciled(t, c);
  const again = await reconcileBootstrapPolicy(a.parts!.rest.registry, pino({ level: 'silent' }));
  t.equal(again.updated, 0, 'a second pass finds nothing to do');
});

t.test('a binding whose roleRef was changed is recreated', async (t) => {
  const a = await startApiserver();
  t.teardown(() => a.stop());
  const c = await connectClient(a);
  t.teardown(() => c.close());
  await waitReady(c);
  const r = await c.request('DELETE', `${RBAC}/clusterrolebindings/system:basic-user`);
  t.equal(r.status, 200);
  t.equal((await c.request('POST', `${RBAC}/clusterrolebindings`, { body: {
    apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'system:basic-user' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
    subjects: [{ kind: 'Group', apiGroup: 'rbac.authorization.k8s.io', name: 'system:authenticated' }],
  } })).status, 201);
  const counts = await reconcileBootstrapPolicy(a.parts!.rest.registry, pino({ level: 'silent' }));
  t.equal(counts.recreated, 1);
  const b = await get(c, 'clusterrolebindings/system:basic-user');
  t.equal((b.roleRef as { name: string }).name, 'system:basic-user');
  t.equal(b.metadata?.annotations?.['rbac.authorization.kubernetes.io/autoupdate'], 'true');
});

t.test('the rbac API switched off: no bootstrap, ready all the same', async (t) => {
  const a = await startApiserver({ args: ['--runtime-config=rbac.authorization.k8s.io/v1=false'] });
  t.teardown(() => a.stop());
  const c = await connectClient(a);
  t.teardown(() => c.close());
  await waitReady(c);
  t.notMatch((await c.request('GET', '/readyz?verbose')).body.toString(), RBAC_BOOTSTRAP_CHECK);
  t.equal((await c.request('GET', `${RBAC}/clusterroles`)).status, 404);
});

t.test('runs whatever --authorization-mode says', async (t) => {
  const a = await startApiserver({ args: ['--authorization-mode=AlwaysAllow'] });
  t.teardown(() => a.stop());
  const c = await connectClient(a);
  t.teardown(() => c.close());
  await waitReady(c);
  await assertAllThere(t, c);
});

t.test('two API servers starting at once on one etcd: one copy of each, no error; a restart reconciles', { skip: skipWithoutEtcd() }, async (t) => {
  const etcd = await startEtcd();
  t.teardown(() => etcd.stop());
  const args = [`--kvstore-servers=${etcd.endpoint}`];
  const logs = [capture(), capture()];
  const started = await Promise.allSettled(logs.map(({ log }) => startApiserver({ args, log })));
  const servers: StartedApiserver[] = started.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  t.teardown(async () => { for (const s of servers) await s.stop(); });
  for (const r of started) if (r.status === 'rejected') throw r.reason;
  const clients = await Promise.all(servers.map((s) => connectClient(s)));
  t.teardown(() => clients.forEach((c) => c.close()));
  await Promise.all(clients.map((c) => waitReady(c)));
  for (const c of clients) await assertAllThere(t, c);
  const total = policy.clusterRoles.length + policy.clusterRoleBindings.length + policy.roles.length + policy.roleBindings.length;
  let created = 0;
  for (const { lines } of logs) {
    const parsed = lines.map((l) => JSON.parse(l) as { msg: string; level: number; component?: string; created?: number; updated?: number });
    t.same(parsed.filter((l) => l.component === 'rbac-bootstrap' && l.level >= 40), [], 'no warning or error from the bootstrap');
    const done = parsed.find((l) => l.msg === 'RBAC bootstrap policy reconciled');
    t.ok(done, 'each server finished its pass');
    t.equal(done?.updated, 0, 'nobody rewrote what the other made');
    created += done?.created ?? 0;
  }
  t.equal(created, total, 'each object created once, by one of them');

  // A third server started later on the same store reconciles what users changed.
  await tamper(clients[0]!);
  const c3 = await startApiserver({ args });
  servers.push(c3);
  const client3 = await connectClient(c3);
  t.teardown(() => client3.close());
  await waitReady(client3);
  await assertReconciled(t, client3);
});

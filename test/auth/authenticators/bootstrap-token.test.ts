// Bootstrap tokens (--enable-bootstrap-token-auth) through the real HTTP stack of an in-process
// API server with RBAC and real kubectl 1.27 and 1.33 with --token: the user and groups a good
// token maps to, and every refusal (expired, unparseable expiration, malformed token, wrong
// secret, usage absent or false, bad extra group, wrong type, id mismatch, another namespace,
// secret being deleted, deleted secret, option off). Each refusal has its own Secret; a sentinel
// Secret created after them all authenticates first, so the in-process copy has seen them.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { h2request, startApiserver, type StartedApiserver } from '../../helpers/apiserver.js';
import { kubectl } from '../../helpers/kubectl.js';
import { kubectlRunner } from '../../helpers/kubectl-run.js';
import { connectClient, type RestClient } from '../../helpers/rest-client.js';
import { waitFor } from '../../helpers/wait-for.js';

const k133 = kubectl(33);
const k127 = kubectl(27);
const b64 = (s: string): string => Buffer.from(s).toString('base64');
const inAnHour = (): string => new Date(Date.now() + 3600_000).toISOString().replace(/\.\d+Z$/, 'Z');

interface TokenSecret {
  id: string;
  secret: string;
  data?: Record<string, string | undefined>;
  type?: string;
  namespace?: string;
  finalizers?: string[];
}

/** Creates bootstrap-token-<id> with the usual keys; `data` overrides (undefined removes a key). */
async function createToken(admin: RestClient, t: Test, s: TokenSecret): Promise<string> {
  const data: Record<string, string | undefined> = {
    'token-id': s.id, 'token-secret': s.secret, expiration: inAnHour(),
    'usage-bootstrap-authentication': 'true', 'usage-bootstrap-signing': 'true', ...s.data,
  };
  const ns = s.namespace ?? 'kube-system';
  const r = await admin.request('POST', `/api/v1/namespaces/${ns}/secrets`, { body: {
    apiVersion: 'v1', kind: 'Secret',
    metadata: { name: `bootstrap-token-${s.id}`, namespace: ns, ...(s.finalizers ? { finalizers: s.finalizers } : {}) },
    type: s.type ?? 'bootstrap.kubernetes.io/token',
    data: Object.fromEntries(Object.entries(data).filter(([, v]) => v !== undefined).map(([k, v]) => [k, b64(v!)])),
  } });
  t.equal(r.status, 201, `created ${ns}/bootstrap-token-${s.id}`);
  return `${s.id}.${s.secret}`;
}

async function getPods(s: StartedApiserver, token: string): Promise<{ status: number; body: string }> {
  const ca = await readFile(s.caFile);
  return h2request(s.url, { path: '/api/v1/namespaces/default/pods', ca, headers: { authorization: `Bearer ${token}` } });
}

async function tokenConfig(s: StartedApiserver): Promise<string> {
  const path = join(s.dir, 'coreconfig-token');
  await writeFile(path, [
    'apiVersion: v1', 'kind: Config', 'current-context: t',
    'clusters:', '- name: t', '  cluster:', `    server: ${s.url}`, `    certificate-authority: ${s.caFile}`,
    'users:', '- name: t', '  user: {}',
    'contexts:', '- name: t', '  context:', '    cluster: t', '    user: t', '',
  ].join('\n'), { mode: 0o600 });
  return path;
}

async function allowWhoami(admin: RestClient, t: Test): Promise<void> {
  const role = await admin.request('POST', '/apis/rbac.authorization.k8s.io/v1/clusterroles', { body: {
    apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'whoami' },
    rules: [
      { apiGroups: ['authentication.k8s.io'], resources: ['selfsubjectreviews'], verbs: ['create'] },
      { nonResourceURLs: ['/api', '/api/*', '/apis', '/apis/*', '/version'], verbs: ['get'] },
    ],
  } });
  t.equal(role.status, 201, JSON.stringify(role.json));
  const binding = await admin.request('POST', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', { body: {
    apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'whoami' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'whoami' },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'system:authenticated' }],
  } });
  t.equal(binding.status, 201, JSON.stringify(binding.json));
}

t.test('bootstrap tokens: the user and groups, every refusal, kubectl', async (t) => {
  const s = await startApiserver({ args: ['--authorization-mode=RBAC', '--enable-bootstrap-token-auth'] });
  t.teardown(() => s.stop());
  const admin = await connectClient(s);
  t.teardown(() => admin.close());
  await allowWhoami(admin, t);

  const past = new Date(Date.now() - 60_000).toISOString();
  const refusals: Array<[string, string]> = [
    ['expired', await createToken(admin, t, { id: 'exp001', secret: 'aaaaaaaaaaaaaaaa', data: { expiration: past } })],
    ['expiration that does not parse', await createToken(admin, t, { id: 'exp002', secret: 'aaaaaaaaaaaaaaaa', data: { expiration: 'tomorrow' } })],
    ['wrong secret', (await createToken(admin, t, { id: 'sec001', secret: 'aaaaaaaaaaaaaaaa' })).replace(/a$/, 'b')],
    ['usage-bootstrap-authentication absent', await createToken(admin, t, { id: 'use001', secret: 'aaaaaaaaaaaaaaaa', data: { 'usage-bootstrap-authentication': undefined } })],
    ['usage-bootstrap-authentication=false', await createToken(admin, t, { id: 'use002', secret: 'aaaaaaaaaaaaaaaa', data: { 'usage-bootstrap-authentication': 'false' } })],
    ['an extra group outside system:bootstrappers:', await createToken(admin, t, { id: 'grp001', secret: 'aaaaaaaaaaaaaaaa', data: { 'auth-extra-groups': 'system:bootstrappers:ok,system:masters' } })],
    ['type Opaque', await createToken(admin, t, { id: 'typ001', secret: 'aaaaaaaaaaaaaaaa', type: 'Opaque' })],
    ['token-id not the name\'s id', (await createToken(admin, t, { id: 'ide001', secret: 'aaaaaaaaaaaaaaaa', data: { 'token-id': 'ide002' } }))],
    ['the secret in another namespace', await createToken(admin, t, { id: 'nsp001', secret: 'aaaaaaaaaaaaaaaa', namespace: 'default' })],
    ['the secret being deleted', await createToken(admin, t, { id: 'del001', secret: 'aaaaaaaaaaaaaaaa', finalizers: ['example.com/hold'] })],
  ];
  const malformedSecret = await createToken(admin, t, { id: 'mal001', secret: 'aaaaaaaaaaaaaaa' }); // 15 characters
  refusals.push(['malformed: a 15-character secret', malformedSecret]);
  await createToken(admin, t, { id: 'mal002', secret: 'AAAAAAAAAAAAAAAA' });
  refusals.push(['malformed: upper case', 'mal002.AAAAAAAAAAAAAAAA']);
  const held = await admin.request('DELETE', '/api/v1/namespaces/kube-system/secrets/bootstrap-token-del001');
  t.equal(held.status, 200, 'the held secret is marked for deletion');

  const good = await createToken(admin, t, { id: 'abc123', secret: '0123456789abcdef', data: { 'auth-extra-groups': 'system:bootstrappers:corectl:default-node-token,system:bootstrappers:extra' } });
  // The sentinel, created last: once it authenticates the copy has every Secret above.
  const first = await waitFor('the good token to authenticate', async () => { const r = await getPods(s, good); return r.status === 403 && r; });
  t.match(JSON.parse(first.body).message, 'User "system:bootstrap:abc123" cannot list resource "pods"', 'a good token is system:bootstrap:<id>');

  for (const [what, token] of refusals) {
    const r = await getPods(s, token);
    t.equal(r.status, 401, `${what}: 401`);
    t.equal(JSON.parse(r.body).reason, 'Unauthorized', `${what}: a Status with reason Unauthorized`);
  }

  const review = await admin.request('POST', '/apis/authentication.k8s.io/v1/tokenreviews', { body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token: good } } });
  t.equal(review.json.status?.authenticated, true, 'TokenReview: authenticated');
  t.same(review.json.status?.user?.groups, ['system:bootstrappers', 'system:bootstrappers:corectl:default-node-token', 'system:bootstrappers:extra', 'system:authenticated'], 'TokenReview: the groups');

  const cfg = await tokenConfig(s);
  for (const bin of [k133, k127]) {
    if (!bin) { t.comment('a kubectl version is missing'); continue; }
    const k = kubectlRunner(bin, cfg, join(s.dir, `kcache-${bin.slice(-2)}`));
    if (bin === k133) {
      const out = await k.run(['auth', 'whoami', `--token=${good}`, '-o', 'json']);
      t.equal(out.code, 0, `${k.ver} auth whoami: ${out.stderr}`);
      const who = JSON.parse(out.stdout || '{}');
      t.equal(who.status?.userInfo?.username, 'system:bootstrap:abc123', `${k.ver} auth whoami: the user`);
      t.same(who.status?.userInfo?.groups, ['system:bootstrappers', 'system:bootstrappers:corectl:default-node-token', 'system:bootstrappers:extra', 'system:authenticated'], `${k.ver} auth whoami: the groups`);
    } else {
      // kubectl 1.27 asks for SelfSubjectReview v1beta1, which is not served: the 403 names the user.
      const denied = await k.run(['get', 'pods', `--token=${good}`]);
      t.not(denied.code, 0, `${k.ver} get pods: refused`);
      t.match(denied.stderr, 'User "system:bootstrap:abc123" cannot list resource "pods"', `${k.ver}: the 403 names the bootstrap user`);
    }
    const refused = await k.run(['get', 'pods', `--token=${refusals[0]![1]}`]);
    t.not(refused.code, 0, `${k.ver}: an expired token fails`);
    t.match(refused.stderr, /Unauthorized|must be logged in/, `${k.ver}: as unauthorized`);
  }

  // Deleting the Secret withdraws the token.
  const del = await admin.request('DELETE', '/api/v1/namespaces/kube-system/secrets/bootstrap-token-abc123');
  t.equal(del.status, 200, 'the good token\'s secret is deleted');
  await waitFor('the deleted token to be refused', async () => (await getPods(s, good)).status === 401);
  t.pass('a deleted secret no longer authenticates');
});

t.test('without --enable-bootstrap-token-auth a good token is not accepted', async (t) => {
  const s = await startApiserver({ args: ['--authorization-mode=RBAC'] });
  t.teardown(() => s.stop());
  const admin = await connectClient(s);
  t.teardown(() => admin.close());
  const good = await createToken(admin, t, { id: 'off001', secret: '0123456789abcdef' });
  // The secret is stored (read back), yet nothing reads it for authentication.
  t.equal((await admin.request('GET', '/api/v1/namespaces/kube-system/secrets/bootstrap-token-off001')).status, 200);
  t.equal((await getPods(s, good)).status, 401, 'option off: 401');
});

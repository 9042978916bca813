// Security regressions on `corectl server` with its secure defaults (Node,RBAC authorization,
// anonymous requests allowed in with only public info, NodeRestriction, controllers on their
// own service accounts): each case fails if the hole it names reopens, and each refusal has a
// control next to it that the same credentials do work, so a refusal cannot pass by accident.
// With containerd (as root) pods run for real and the pod's token is read from inside it;
// otherwise containers are simulated and the token comes from TokenRequest bound to the pod
// (the same identity the node agent mounts).
import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../helpers/corectl-server.js';
import { kubectl } from '../helpers/kubectl.js';
import { componentForbidden, poll, startSecureCluster, type Creds, type SecureCluster } from './security-fixture.js';

const bin = kubectl(33);
const NODE = 'sec-node';
const POD = (ns: string, name: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: ns },
  spec: { containers: [{ name: 'c', image: 'localhost/busybox:static', command: ['sleep', '3600'] }], terminationGracePeriodSeconds: 0, ...extra },
});

t.test('security regressions on corectl server', { skip: bin ? false : 'kubectl.1.33 not installed', timeout: 420_000 }, async (t) => {
  // The components' secure ports on, to check their delegated authorization too.
  const [cmPort, schedPort] = [await freePort(), await freePort()];
  const c: SecureCluster = await startSecureCluster(bin!, NODE, { args: [
    `--controller-manager-arg=--secure-port=${cmPort}`, '--controller-manager-arg=--bind-address=127.0.0.1',
    `--scheduler-arg=--secure-port=${schedPort}`, '--scheduler-arg=--bind-address=127.0.0.1',
  ] });
  t.teardown(() => c.stop());
  t.comment(c.realContainers ? 'real containers through containerd' : 'simulated containers (no containerd)');
  const admin = { cert: readFileSync(join(c.dataDir, 'pki', 'admin.crt')), key: readFileSync(join(c.dataDir, 'pki', 'admin.key')) };
  const ok = async (method: string, path: string, body?: unknown, contentType?: string): Promise<Record<string, unknown>> => {
    const r = await c.call(method, path, admin, body, contentType);
    if (r.status >= 300) throw new Error(`admin ${method} ${path}: ${r.status} ${r.body}`);
    return r.json;
  };

  // Two namespaces; a pod of each; a secret for each, mounted by its pod; a second node (an
  // object only) with a pod bound to it that mounts its own secret.
  for (const ns of ['sec-a', 'sec-b']) await ok('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  await poll('default service accounts', () => Promise.all(['sec-a', 'sec-b'].map((ns) => c.call('GET', `/api/v1/namespaces/${ns}/serviceaccounts/default`, admin))), (rs) => rs.every((r) => r.status === 200));
  const secret = (ns: string, name: string) => ({ apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: ns }, stringData: { password: `${name}-value` } });
  const withSecret = (s: string) => ({ volumes: [{ name: 's', secret: { secretName: s } }] });
  await ok('POST', '/api/v1/namespaces/sec-a/secrets', secret('sec-a', 's-a'));
  await ok('POST', '/api/v1/namespaces/sec-b/secrets', secret('sec-b', 's-b'));
  await ok('POST', '/api/v1/namespaces/sec-b/secrets', secret('sec-b', 's-other'));
  await ok('POST', '/api/v1/namespaces/sec-a/pods', POD('sec-a', 'attacker', withSecret('s-a')));
  await ok('POST', '/api/v1/namespaces/sec-b/pods', POD('sec-b', 'victim'));
  await ok('POST', '/api/v1/nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name: 'node-b' } });
  await ok('POST', '/api/v1/namespaces/sec-b/pods', POD('sec-b', 'on-b', { nodeName: 'node-b', ...withSecret('s-other') }));
  const running = async (ns: string, name: string) => poll(`${ns}/${name} running`, async () => (await c.call('GET', `/api/v1/namespaces/${ns}/pods/${name}`, admin)).json, (p) => (p.status as { phase?: string } | undefined)?.phase === 'Running', 90_000);
  const attacker = await running('sec-a', 'attacker');
  await running('sec-b', 'victim');

  // The pod's own token: read inside it with real containers, else what the agent would mount.
  let podToken: string;
  if (c.realContainers) {
    const r = c.kubectl(['exec', '-n', 'sec-a', 'attacker', '--', 'cat', '/var/run/secrets/kubernetes.io/serviceaccount/token']);
    if (r.code !== 0) throw new Error(`exec: ${r.err}`);
    podToken = r.out.trim();
  } else {
    const tr = await ok('POST', '/api/v1/namespaces/sec-a/serviceaccounts/default/token', {
      apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest',
      spec: { boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: 'attacker', uid: (attacker.metadata as { uid: string }).uid } },
    });
    podToken = (tr.status as { token: string }).token;
  }
  const pod: Creds = { token: podToken };

  await t.test('a pod\'s default service-account token', async (t) => {
    const who = await c.call('POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', pod, { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' });
    t.equal((who.json.status as { userInfo: { username: string } }).userInfo.username, 'system:serviceaccount:sec-a:default', 'control: the token authenticates');
    t.equal((await c.call('GET', '/api/v1/namespaces/sec-a/serviceaccounts', pod)).status, 403, 'it reads nothing beyond discovery');
    t.equal((await c.call('GET', '/apis', pod)).status, 200, 'control: discovery works for it');
    for (const path of ['/api/v1/secrets', '/api/v1/secrets?watch=true&timeoutSeconds=2', '/api/v1/namespaces/sec-a/secrets', '/api/v1/namespaces/sec-a/secrets/s-a',
      '/api/v1/namespaces/sec-b/secrets', '/api/v1/namespaces/kube-system/secrets']) {
      const r = await c.call('GET', path, pod);
      t.equal(r.status, 403, `cannot read secrets: GET ${path}`);
      t.match(r.json.message, /is forbidden: User "system:serviceaccount:sec-a:default" cannot (list|get|watch) resource "secrets"/);
    }
    const crb = await c.call('POST', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', pod, {
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'pwned' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
      subjects: [{ kind: 'ServiceAccount', name: 'default', namespace: 'sec-a' }],
    });
    t.equal(crb.status, 403, 'cannot bind itself cluster-admin');
    t.equal((await c.call('GET', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/pwned', admin)).status, 404, 'and nothing was stored');
    for (const [ns, name] of [['sec-b', 'victim'], ['sec-a', 'attacker']] as const) {
      const r = await c.call('POST', `/api/v1/namespaces/${ns}/pods/${name}/exec?command=id&stdout=true`, pod);
      t.equal(r.status, 403, `cannot exec into ${ns}/${name}`);
      t.match(r.json.message, /cannot create resource "pods\/exec"/);
    }
  });

  await t.test('a node certificate', async (t) => {
    const node: Creds = { cert: readFileSync(join(c.dataDir, 'pki', 'nodeagent-client.crt')), key: readFileSync(join(c.dataDir, 'pki', 'nodeagent-client.key')) };
    t.equal((await c.call('GET', '/api/v1/namespaces/sec-a/secrets/s-a', node)).status, 200, 'control: the secret of a pod on this node');
    const other = await c.call('GET', '/api/v1/namespaces/sec-b/secrets/s-other', node);
    t.equal(other.status, 403, 'not the secret of a pod on another node');
    t.match(other.json.message, `User "system:node:${NODE}" cannot get resource "secrets"`);
    t.equal((await c.call('GET', '/api/v1/namespaces/sec-b/secrets/s-b', node)).status, 403, 'nor one no pod of its uses');
    t.equal((await c.call('GET', '/api/v1/secrets', node)).status, 403, 'nor list them');
    const label = (key: string) => ({ metadata: { labels: { [key]: 'x' } } });
    const patch = (name: string, body: unknown) => c.call('PATCH', `/api/v1/nodes/${name}`, node, body, 'application/merge-patch+json');
    t.equal((await patch(NODE, label('example.com/own'))).status, 200, 'control: it patches its own Node');
    const foreign = await patch('node-b', label('example.com/pwned'));
    t.equal(foreign.status, 403, 'not another Node');
    t.match(foreign.json.message, `node "${NODE}" is not allowed to modify node "node-b"`);
    t.equal((await c.call('PATCH', '/api/v1/nodes/node-b/status', node, { status: { phase: 'Running' } }, 'application/merge-patch+json')).status, 403, 'nor its status');
    t.equal((await c.call('DELETE', '/api/v1/nodes/node-b', node)).status, 403, 'nor delete it');
    t.equal((await patch(NODE, label('node-restriction.kubernetes.io/pwned'))).status, 403, 'nor set node-restriction labels on its own');
  });

  const mallory = await c.csrUser('mallory');
  const m: Creds = { cert: mallory.cert, key: mallory.key };
  // mallory may view sec-a and manage its roles and bindings, but holds nothing more.
  t.equal(c.kubectl(['create', 'rolebinding', 'mallory-view', '--clusterrole=view', '--user=mallory', '-n', 'sec-a']).code, 0);
  t.equal(c.kubectl(['create', 'role', 'rbac-editor', '--verb=get,list,create,update,patch', '--resource=roles.rbac.authorization.k8s.io,rolebindings.rbac.authorization.k8s.io', '-n', 'sec-a']).code, 0);
  t.equal(c.kubectl(['create', 'rolebinding', 'mallory-rbac', '--role=rbac-editor', '--user=mallory', '-n', 'sec-a']).code, 0);
  t.equal(c.kubectl(['create', 'role', 'pod-reader', '--verb=get', '--resource=pods', '-n', 'sec-a']).code, 0);

  await t.test('a view user made through a CSR cannot escalate', async (t) => {
    t.equal((await c.call('GET', '/api/v1/namespaces/sec-a/pods', m)).status, 200, 'control: it views sec-a');
    t.equal((await c.call('GET', '/api/v1/namespaces/sec-a/secrets', m)).status, 403, 'view holds no secrets');
    const RB = '/apis/rbac.authorization.k8s.io/v1/namespaces/sec-a/rolebindings';
    const binding = (name: string, role: string) => ({
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name, namespace: 'sec-a' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role }, subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'mallory' }],
    });
    const up = await c.call('POST', RB, m, binding('up', 'admin'));
    t.equal(up.status, 403, 'cannot bind itself admin');
    t.match(up.json.message, /cannot bind|attempting to grant RBAC permissions not currently held/);
    t.equal((await c.call('POST', RB, m, binding('also-view', 'view'))).status, 201, 'control: it can bind what it holds');
    const crb = await c.call('POST', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', m, {
      ...binding('root', 'cluster-admin'), kind: 'ClusterRoleBinding', metadata: { name: 'root' },
    });
    t.equal(crb.status, 403, 'cannot bind itself cluster-admin');
    const ROLE = '/apis/rbac.authorization.k8s.io/v1/namespaces/sec-a/roles/pod-reader';
    const role = (await c.call('GET', ROLE, m)).json;
    const withRule = (resource: string) => ({ ...role, rules: [...(role.rules as unknown[]), { apiGroups: [''], resources: [resource], verbs: ['get'] }] });
    const esc = await c.call('PUT', ROLE, m, withRule('secrets'));
    t.equal(esc.status, 403, 'cannot edit a role to grant secrets');
    t.match(esc.json.message, /attempting to grant RBAC permissions not currently held/);
    t.equal((await c.call('PUT', ROLE, m, withRule('configmaps'))).status, 200, 'control: it may add what it holds');
    const created = await c.call('POST', '/apis/rbac.authorization.k8s.io/v1/namespaces/sec-a/roles', m, {
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'wide', namespace: 'sec-a' },
      rules: [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }],
    });
    t.equal(created.status, 403, 'cannot create a wider role');
  });

  await t.test('an unauthenticated request gets only public info', async (t) => {
    for (const path of ['/healthz', '/livez', '/readyz', '/version']) t.equal((await c.call('GET', path, {})).status, 200, `${path} is public`);
    // Kubernetes (since 1.14): discovery needs authentication (system:discovery is bound to
    // system:authenticated only); so does everything else.
    for (const path of ['/api', '/apis', '/api/v1', '/apis/apps/v1', '/openapi/v2', '/openapi/v3', '/api/v1/namespaces', '/api/v1/namespaces/sec-a/secrets', '/metrics']) {
      const r = await c.call('GET', path, {});
      t.equal(r.status, 403, `${path} is refused`);
      t.match(r.json.message ?? r.body, /system:anonymous/);
    }
    t.equal((await c.call('POST', '/api/v1/namespaces', {}, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'anon' } })).status, 403, 'no writes');
  });

  await t.test('impersonation without the verb is 403', async (t) => {
    for (const [who, creds] of [['mallory', m], ['the pod', pod]] as const) {
      for (const headers of [{ 'impersonate-user': 'corectl-admin' } as Record<string, string>, { 'impersonate-user': 'mallory', 'impersonate-group': 'system:masters' }, { 'impersonate-user': `system:node:${NODE}`, 'impersonate-group': 'system:nodes' }]) {
        const r = await c.call('GET', '/api/v1/namespaces/sec-a/secrets', creds, undefined, undefined, headers);
        t.equal(r.status, 403, `${who} as ${JSON.stringify(headers)}`);
        t.match(r.json.message, /cannot impersonate/);
      }
    }
    t.equal((await c.call('GET', '/api/v1/namespaces/sec-a/secrets', admin, undefined, undefined, { 'impersonate-user': 'mallory' })).status, 403, 'control: impersonation works for the admin (and mallory may not read secrets)');
  });

  await t.test('the controller manager\'s and scheduler\'s secure ports authorize by SubjectAccessReview', async (t) => {
    for (const [what, port] of [['controller manager', cmPort], ['scheduler', schedPort]] as const) {
      t.equal((await c.getPort(port, '/healthz', {})).status, 200, `${what}: /healthz is always allowed`);
      const anon = await c.getPort(port, '/metrics', {});
      t.equal(anon.status, 403, `${what}: anonymous may not read /metrics`);
      t.match(anon.body, 'User "system:anonymous" cannot get path "/metrics"');
      t.equal((await c.getPort(port, '/metrics', pod)).status, 403, `${what}: nor a pod's token (TokenReview, then SubjectAccessReview)`);
      t.equal((await c.getPort(port, '/metrics', { token: 'not-a-token' })).status, 401, `${what}: a bad token is a 401`);
      t.equal((await c.getPort(port, '/metrics', admin)).status, 200, `${what}: system:masters may`);
    }
    // system:monitoring grants /metrics: the same pod token is then let in.
    t.equal(c.kubectl(['create', 'clusterrolebinding', 'pod-monitoring', '--clusterrole=system:monitoring', '--serviceaccount=sec-a:default']).code, 0);
    for (const port of [cmPort, schedPort]) {
      t.equal((await poll('monitoring granted', () => c.getPort(port, '/metrics', pod), (r) => r.status === 200, 30_000)).status, 200, 'granted by RBAC, allowed');
    }
  });

  await t.test('no component was refused anything', async (t) => {
    // Work that exercises the controllers and the scheduler under their own identities.
    t.equal(c.kubectl(['-n', 'sec-a', 'create', 'deployment', 'web', '--image=localhost/busybox:static', '--replicas=2', '--', 'sleep', '3600']).code, 0);
    t.equal(c.kubectl(['-n', 'sec-a', 'create', 'job', 'once', '--image=localhost/busybox:static', '--', 'true']).code, 0);
    await poll('deployment available', () => c.kubectl(['-n', 'sec-a', 'get', 'deploy', 'web', '-o', 'jsonpath={.status.availableReplicas}']).out, (s) => s === '2', 120_000);
    t.equal(c.kubectl(['delete', 'ns', 'sec-b', '--wait=true', '--timeout=120s']).code, 0, 'a namespace is emptied and removed');
    t.same(componentForbidden(c.forbiddenLines), [], 'no "forbidden" in the controller manager\'s, scheduler\'s or node agent\'s log');
  });
});

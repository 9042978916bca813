// End to end: real kubectl 1.27 and 1.33 against the in-process API server with
// --authorization-mode=RBAC, as a client-certificate user and as a service account (token):
// `auth can-i` (and --list), `create role/clusterrole/rolebinding/clusterrolebinding`,
// `auth reconcile -f`, and the refusals: a user who may write RBAC objects cannot grant more
// than it holds (binding a cluster-admin-like role, editing a role to escalate) unless it has
// `bind`/`escalate`; a service account token cannot list Secrets nor create a
// ClusterRoleBinding without a grant.
//
// The default roles come from the bootstrap policy (another part of the server); this test
// makes the roles it needs itself (discovery and self-reviews for every authenticated user).
import { execFile } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import type { KubeObject } from '../../src/api/resources/types.js';
import { loadCoreconfig } from '../../src/client/coreconfig.js';
import { RestClient } from '../../src/client/rest-client.js';
import { h2request, startApiserver, type StartedApiserver } from '../helpers/apiserver.js';
import { kubectl } from '../helpers/kubectl.js';
import { waitFor } from '../helpers/wait-for.js';

const versions = [27, 33].filter((v) => kubectl(v) !== undefined);

const G = 'rbac.authorization.k8s.io';
const CR = { group: G, version: 'v1', resource: 'clusterroles' };
const CRB = { group: G, version: 'v1', resource: 'clusterrolebindings' };
const RB = (namespace: string) => ({ group: G, version: 'v1', resource: 'rolebindings', namespace });

const clusterRole = (name: string, rules: unknown[]): KubeObject => ({ apiVersion: `${G}/v1`, kind: 'ClusterRole', metadata: { name }, rules });
const crb = (name: string, role: string, subjects: unknown[]): KubeObject =>
  ({ apiVersion: `${G}/v1`, kind: 'ClusterRoleBinding', metadata: { name }, roleRef: { apiGroup: G, kind: 'ClusterRole', name: role }, subjects });
const rb = (namespace: string, name: string, role: string, subjects: unknown[]): KubeObject =>
  ({ apiVersion: `${G}/v1`, kind: 'RoleBinding', metadata: { name, namespace }, roleRef: { apiGroup: G, kind: 'ClusterRole', name: role }, subjects });

interface Run { code: number; out: string; err: string }

async function main(): Promise<void> {
  const keyPem = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  // The API server's own files live in its temp dir; the signing key is written first beside them.
  const { mkdtemp, rm } = await import('node:fs/promises');
  const { tmpdir } = await import('node:os');
  const keyDir = await mkdtemp(join(tmpdir(), 'rbac-kubectl-'));
  t.teardown(() => rm(keyDir, { recursive: true, force: true }));
  const keyFile = join(keyDir, 'sa.key');
  await writeFile(keyFile, keyPem, { mode: 0o600 });
  const s = await startApiserver({ args: ['--authorization-mode=RBAC', '--feature-gates=TokenRequest=true', `--service-account-signing-key-file=${keyFile}`, '--service-account-issuer=https://issuer.rbac.test'] });
  const admin = new RestClient({ connection: await loadCoreconfig({ path: s.coreconfigPath }), contentType: 'application/json' });
  t.teardown(async () => { admin.close(); await s.stop(); });

  // What Kubernetes' bootstrap policy gives every authenticated user: discovery and self-reviews.
  await admin.create(CR, clusterRole('discovery-test', [
    { verbs: ['get'], nonResourceURLs: ['/api', '/api/*', '/apis', '/apis/*', '/version', '/version/', '/openapi', '/openapi/*'] },
    { verbs: ['create'], apiGroups: ['authorization.k8s.io'], resources: ['selfsubjectaccessreviews', 'selfsubjectrulesreviews'] },
    { verbs: ['create'], apiGroups: ['authentication.k8s.io'], resources: ['selfsubjectreviews'] },
  ]));
  await admin.create(CRB, crb('discovery-test', 'discovery-test', [{ kind: 'Group', apiGroup: G, name: 'system:authenticated' }]));
  await admin.create(CR, clusterRole('everything-test', [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'] }, { verbs: ['*'], nonResourceURLs: ['*'] }]));
  await admin.create(CR, clusterRole('view-test', [{ verbs: ['get', 'list', 'watch'], apiGroups: [''], resources: ['pods', 'configmaps', 'services'] }]));
  await admin.create(CR, clusterRole('rbac-writer-test', [{ verbs: ['get', 'list', 'create', 'update', 'patch', 'delete'], apiGroups: [G], resources: ['roles', 'rolebindings', 'clusterroles', 'clusterrolebindings'] }]));

  const run = (minor: number, config: string, args: string[]): Promise<Run> => new Promise((resolve) => {
    // execFile (async): the server runs in this process, so the event loop must stay free.
    execFile(kubectl(minor)!, [...args, '--kubeconfig', config, '--cache-dir', join(s.dir, `kcache-${minor}-${config.split('-').pop()}`)], { timeout: 30_000 },
      (e, out, err) => resolve({ code: e ? (typeof e.code === 'number' ? e.code : 1) : 0, out, err }));
  });
  const canI = async (minor: number, config: string, ...args: string[]): Promise<string> => (await run(minor, config, ['auth', 'can-i', ...args])).out.trim();

  t.test('streaming subresources are authorized by the verb Kubernetes uses (exec: create)', async (t) => {
    const ns = 'streams';
    await admin.create({ group: '', version: 'v1', resource: 'namespaces' }, { metadata: { name: ns } });
    await admin.create(CR, clusterRole('exec-get-test', [{ verbs: ['get'], apiGroups: [''], resources: ['pods/exec', 'pods/proxy'] }]));
    await admin.create(CR, clusterRole('exec-create-test', [{ verbs: ['create'], apiGroups: [''], resources: ['pods/exec'] }]));
    await admin.create(RB(ns), rb(ns, 'getter', 'exec-get-test', [{ kind: 'User', apiGroup: G, name: 'getter' }]));
    await admin.create(RB(ns), rb(ns, 'creator', 'exec-create-test', [{ kind: 'User', apiGroup: G, name: 'creator' }]));
    const ca = await readFile(s.caFile);
    const as = async (cn: string, method: string, path: string): Promise<{ status: number; body: string }> => {
      const { certPem, keyPem } = await s.issueClient(cn, []);
      return h2request(s.url, { path, method, ca, cert: certPem, key: keyPem });
    };
    const exec = `/api/v1/namespaces/${ns}/pods/p/exec?command=ls&stdout=true`;
    let r = await as('getter', 'POST', exec);
    t.equal(r.status, 403, 'get on pods/exec does not allow exec');
    t.match(r.body, 'User \\"getter\\" cannot create resource \\"pods/exec\\" in API group \\"\\" in the namespace \\"streams\\"');
    r = await as('getter', 'GET', exec);
    t.equal(r.status, 403, 'not with a GET either (a websocket exec needs create too)');
    await waitFor('creator binding in effect', async () => (await as('creator', 'POST', exec)).status !== 403, 10_000);
    r = await as('creator', 'POST', exec);
    t.not(r.status, 403, `create on pods/exec passes authorization (then HTTP ${r.status}: ${r.body.slice(0, 120)})`);
    r = await as('getter', 'GET', `/api/v1/namespaces/${ns}/pods/p/proxy/`);
    t.not(r.status, 403, 'a proxy GET needs get');
    r = await as('getter', 'POST', `/api/v1/namespaces/${ns}/pods/p/proxy/`);
    t.equal(r.status, 403, 'a proxy POST needs create');
    t.match(r.body, 'cannot create resource \\"pods/proxy\\"');
  });

  for (const minor of versions) {
    t.test(`kubectl 1.${minor}`, async (t) => {
      const ns = `team-${minor}`;
      await admin.create({ group: '', version: 'v1', resource: 'namespaces' }, { metadata: { name: ns } });
      const viewerName = `viewer-${minor}`;
      const viewer = await certConfig(s, viewerName, ['viewers']);
      // The viewer may read pods cluster-wide and write RBAC objects (in its namespace and
      // cluster-wide), nothing more: it must not be able to hand itself more.
      await admin.create(CRB, crb(`${viewerName}-view`, 'view-test', [{ kind: 'User', apiGroup: G, name: viewerName }]));
      await admin.create(CRB, crb(`${viewerName}-rbac`, 'rbac-writer-test', [{ kind: 'User', apiGroup: G, name: viewerName }]));
      await waitFor('viewer bindings in effect', async () => await canI(minor, viewer, 'create', 'rolebindings', '-n', ns) === 'yes', 10_000);

      t.test('auth can-i and --list as a certificate user', async (t) => {
        t.equal(await canI(minor, viewer, 'list', 'pods', '-n', ns), 'yes');
        t.equal(await canI(minor, viewer, 'list', 'pods', '--all-namespaces'), 'yes', 'a ClusterRoleBinding reaches every namespace');
        const no = await run(minor, viewer, ['auth', 'can-i', 'list', 'secrets', '-n', ns]);
        t.equal(no.out.trim(), 'no');
        t.equal(no.code, 1, 'kubectl exits 1 on no');
        t.equal(await canI(minor, viewer, 'get', '/version'), 'yes', 'non-resource URL');
        t.equal(await canI(minor, viewer, 'get', '/metrics'), 'no');
        const list = await run(minor, viewer, ['auth', 'can-i', '--list', '-n', ns]);
        t.equal(list.code, 0, list.err);
        t.match(list.out, /^Resources\s+Non-Resource URLs\s+Resource Names\s+Verbs/m, 'the table header');
        t.match(list.out, /^pods\s+\[\]\s+\[\]\s+\[get list watch\]/m, 'the view rule');
        t.match(list.out, /^roles\.rbac\.authorization\.k8s\.io\s+\[\]\s+\[\]\s+\[get list create update patch delete\]/m, 'the RBAC writer rule');
        t.match(list.out, /^\s+\[\/version\]\s+\[\]\s+\[get\]/m, 'a non-resource rule');
        t.notMatch(list.out, /secrets/, 'nothing about secrets');
      });

      t.test('create role/clusterrole/rolebinding/clusterrolebinding within what the user holds', async (t) => {
        let r = await run(minor, viewer, ['create', 'role', 'pod-reader', '--verb=get,list', '--resource=pods', '-n', ns]);
        t.equal(r.code, 0, r.err);
        t.equal(r.out.trim(), 'role.rbac.authorization.k8s.io/pod-reader created');
        r = await run(minor, viewer, ['create', 'clusterrole', `cm-reader-${minor}`, '--verb=get', '--resource=configmaps']);
        t.equal(r.out.trim(), `clusterrole.rbac.authorization.k8s.io/cm-reader-${minor} created`, r.err);
        r = await run(minor, viewer, ['create', 'rolebinding', 'pod-reader', '--role=pod-reader', '--user=someone', '-n', ns]);
        t.equal(r.out.trim(), 'rolebinding.rbac.authorization.k8s.io/pod-reader created', r.err);
        r = await run(minor, viewer, ['create', 'clusterrolebinding', `cm-reader-${minor}`, `--clusterrole=cm-reader-${minor}`, '--group=readers']);
        t.equal(r.out.trim(), `clusterrolebinding.rbac.authorization.k8s.io/cm-reader-${minor} created`, r.err);
      });

      t.test('no escalation: binding a role with more, editing a role to grant more', async (t) => {
        const granting = new RegExp(`is forbidden: user "${viewerName}" \\(groups=\\["viewers" "system:authenticated"\\]\\) is attempting to grant RBAC permissions not currently held:\\n`);
        let r = await run(minor, viewer, ['create', 'clusterrolebinding', `${viewerName}-admin`, '--clusterrole=everything-test', `--user=${viewerName}`]);
        t.not(r.code, 0);
        // kubectl's create subcommands print `error: failed to create clusterrolebinding: <message>`.
        t.match(r.err, /clusterrolebindings\.rbac\.authorization\.k8s\.io ".*-admin" is forbidden/);
        t.match(r.err, granting);
        t.match(r.err, /\{APIGroups:\["\*"\], Resources:\["\*"\], Verbs:\["\*"\]\}/, 'the missing rules, as Kubernetes prints them');
        t.match(r.err, /\{NonResourceURLs:\["\*"\], Verbs:\["\*"\]\}/);
        r = await run(minor, viewer, ['create', 'rolebinding', 'me-admin', '--clusterrole=everything-test', `--user=${viewerName}`, '-n', ns]);
        t.not(r.code, 0);
        t.match(r.err, /rolebindings\.rbac\.authorization\.k8s\.io "me-admin" is forbidden: user .* is attempting to grant RBAC permissions not currently held/);
        r = await run(minor, viewer, ['create', 'role', 'secret-reader', '--verb=get', '--resource=secrets', '-n', ns]);
        t.not(r.code, 0, 'a role with a permission the user lacks');
        t.match(r.err, /roles\.rbac\.authorization\.k8s\.io "secret-reader" is forbidden: .*not currently held:\n\{APIGroups:\[""\], Resources:\["secrets"\], Verbs:\["get"\]\}/);
        r = await run(minor, viewer, ['patch', 'role', 'pod-reader', '-n', ns, '--type=json', '-p', '[{"op":"add","path":"/rules/-","value":{"apiGroups":[""],"resources":["secrets"],"verbs":["*"]}}]']);
        t.not(r.code, 0, 'editing a role to escalate');
        t.match(r.err, /roles\.rbac\.authorization\.k8s\.io "pod-reader" is forbidden: .*attempting to grant RBAC permissions not currently held/);
        r = await run(minor, viewer, ['create', 'clusterrolebinding', `${viewerName}-missing`, '--clusterrole=no-such-role', `--user=${viewerName}`]);
        t.match(r.err, /clusterroles\.rbac\.authorization\.k8s\.io "no-such-role" not found/, 'a binding to a missing role');
        t.equal(await canI(minor, viewer, 'list', 'secrets', '-n', ns), 'no', 'still no secrets');
        r = await run(minor, viewer, ['create', 'clusterrole', `agg-${minor}`, '--aggregation-rule=rbac.example.com/aggregate=true']);
        t.not(r.code, 0, 'an aggregationRule needs full authority');
        t.match(r.err, `clusterroles.rbac.authorization.k8s.io "agg-${minor}" is forbidden: must have cluster-admin privileges to use the aggregationRule`);

        // A role granting more than the viewer holds: only what the garbage collector changes may be changed.
        await admin.create({ group: G, version: 'v1', resource: 'roles', namespace: ns }, { metadata: { name: 'big', namespace: ns }, rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['*'] }] });
        await waitFor('big role readable', async () => (await run(minor, viewer, ['get', 'role', 'big', '-n', ns])).code === 0, 10_000);
        r = await run(minor, viewer, ['patch', 'role', 'big', '-n', ns, '--type=merge', '-p', '{"metadata":{"labels":{"a":"b"}}}']);
        t.not(r.code, 0, 'a label change on a role granting more is refused');
        t.match(r.err, /roles\.rbac\.authorization\.k8s\.io "big" is forbidden: .*attempting to grant RBAC permissions not currently held/);
        r = await run(minor, viewer, ['patch', 'role', 'big', '-n', ns, '--type=merge', '-p', '{"metadata":{"finalizers":["example.com/keep"]}}']);
        t.equal(r.code, 0, `finalizers alone may change: ${r.err}`);
        r = await run(minor, viewer, ['patch', 'role', 'big', '-n', ns, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
        t.equal(r.code, 0, r.err);

        // bind on that role (by name) and escalate on roles lift exactly these checks.
        await admin.create(CR, clusterRole(`${viewerName}-bind`, [
          { verbs: ['bind'], apiGroups: [G], resources: ['clusterroles'], resourceNames: ['everything-test'] },
          { verbs: ['escalate'], apiGroups: [G], resources: ['roles'] },
        ]));
        await admin.create(RB(ns), rb(ns, `${viewerName}-bind`, `${viewerName}-bind`, [{ kind: 'User', apiGroup: G, name: viewerName }]));
        await waitFor('bind granted', async () => await canI(minor, viewer, 'bind', 'clusterroles/everything-test', '-n', ns) === 'yes', 10_000);
        r = await run(minor, viewer, ['create', 'rolebinding', 'me-admin', '--clusterrole=everything-test', `--user=${viewerName}`, '-n', ns]);
        t.equal(r.code, 0, `with bind: ${r.err}`);
        r = await run(minor, viewer, ['create', 'clusterrolebinding', `${viewerName}-admin`, '--clusterrole=everything-test', `--user=${viewerName}`]);
        t.not(r.code, 0, 'bind granted in a namespace does not allow a ClusterRoleBinding');
        await waitFor('namespace admin in effect', async () => await canI(minor, viewer, 'list', 'secrets', '-n', ns) === 'yes', 10_000);
        t.equal(await canI(minor, viewer, 'list', 'secrets', '-n', 'default'), 'no', 'only in that namespace');
      });

      t.test('a service account token', async (t) => {
        const sa = { group: '', version: 'v1', resource: 'serviceaccounts', namespace: ns };
        await admin.create(sa, { metadata: { name: 'robot' } });
        const tr = await admin.create<KubeObject & { status?: { token?: string } }>(sa, { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: {} }, { name: 'robot', subresource: 'token' });
        const robot = await tokenConfig(s, `robot-${minor}`, tr.status?.token ?? '');
        const user = `system:serviceaccount:${ns}:robot`;
        let r = await run(minor, robot, ['get', 'secrets', '-n', ns]);
        t.not(r.code, 0);
        t.match(r.err, `Error from server (Forbidden): secrets is forbidden: User "${user}" cannot list resource "secrets" in API group "" in the namespace "${ns}"`);
        r = await run(minor, robot, ['get', 'secrets', '-A']);
        t.match(r.err, `User "${user}" cannot list resource "secrets" in API group "" at the cluster scope`);
        r = await run(minor, robot, ['create', 'clusterrolebinding', `robot-${minor}`, '--clusterrole=everything-test', `--serviceaccount=${ns}:robot`]);
        t.not(r.code, 0);
        t.match(r.err, `clusterrolebindings.rbac.authorization.k8s.io is forbidden: User "${user}" cannot create resource "clusterrolebindings" in API group "rbac.authorization.k8s.io" at the cluster scope`);
        t.equal(await canI(minor, robot, 'create', 'clusterrolebindings'), 'no');

        // A RoleBinding naming the service account without a namespace: the binding's namespace.
        await admin.create(RB(ns), rb(ns, 'robot-view', 'view-test', [{ kind: 'ServiceAccount', name: 'robot' }]));
        await waitFor('robot binding in effect', async () => await canI(minor, robot, 'list', 'pods', '-n', ns) === 'yes', 10_000);
        t.equal(await canI(minor, robot, 'list', 'pods', '-n', 'default'), 'no', 'only in its namespace');
        r = await run(minor, robot, ['get', 'pods', '-n', ns]);
        t.equal(r.code, 0, r.err);
        const list = await run(minor, robot, ['auth', 'can-i', '--list', '-n', ns]);
        t.match(list.out, /^pods\s+\[\]\s+\[\]\s+\[get list watch\]/m);
        t.equal(await canI(minor, robot, 'list', 'secrets', '-n', ns), 'no');
      });

      t.test('auth reconcile -f', async (t) => {
        const file = join(s.dir, `reconcile-${minor}.yaml`);
        await writeFile(file, [
          `apiVersion: ${G}/v1`, 'kind: Role', 'metadata:', '  name: cm-editor', `  namespace: ${ns}`,
          'rules:', '- apiGroups: [""]', '  resources: [configmaps]', '  verbs: [get, list]', '---',
          `apiVersion: ${G}/v1`, 'kind: RoleBinding', 'metadata:', '  name: cm-editor', `  namespace: ${ns}`,
          `roleRef: {apiGroup: ${G}, kind: Role, name: cm-editor}`, `subjects: [{apiGroup: ${G}, kind: User, name: carol-${minor}}]`, '',
        ].join('\n'));
        let r = await run(minor, s.coreconfigPath, ['auth', 'reconcile', '-f', file]);
        t.equal(r.code, 0, r.err);
        t.match(r.out, /role\.rbac\.authorization\.k8s\.io\/cm-editor reconciled/);
        t.match(r.out, /rolebinding\.rbac\.authorization\.k8s\.io\/cm-editor reconciled/);
        r = await run(minor, s.coreconfigPath, ['auth', 'reconcile', '-f', file]);
        t.equal(r.code, 0, 'again: nothing to change');
        const carol = await certConfig(s, `carol-${minor}`, []);
        await waitFor('reconciled binding in effect', async () => await canI(minor, carol, 'list', 'configmaps', '-n', ns) === 'yes', 10_000);
        t.equal(await canI(minor, carol, 'delete', 'configmaps', '-n', ns), 'no');

        // Reconcile as the viewer: adding a rule it does not hold is refused like any write.
        await writeFile(file, [
          `apiVersion: ${G}/v1`, 'kind: Role', 'metadata:', '  name: cm-editor', `  namespace: default`,
          'rules:', '- apiGroups: [""]', '  resources: [nodes]', '  verbs: [delete]', '',
        ].join('\n'));
        r = await run(minor, viewer, ['auth', 'reconcile', '-f', file]);
        t.not(r.code, 0);
        t.match(r.err, /attempting to grant RBAC permissions not currently held/);
      });

      t.test('403 messages as Kubernetes words them', async (t) => {
        const nobody = await certConfig(s, `nobody-${minor}`, []);
        const r = await run(minor, nobody, ['get', 'configmaps', '-n', ns]);
        t.match(r.err, `Error from server (Forbidden): configmaps is forbidden: User "nobody-${minor}" cannot list resource "configmaps" in API group "" in the namespace "${ns}"`);
        t.notMatch(r.err, /RBAC/, 'no reason appended when RBAC has nothing to say');
      });
    });
  }
}

/** A coreconfig for a certificate user issued by the cluster CA. */
async function certConfig(s: StartedApiserver, cn: string, orgs: string[]): Promise<string> {
  const { certPem, keyPem } = await s.issueClient(cn, orgs);
  const b64 = (x: string): string => Buffer.from(x).toString('base64');
  const text = (await readFile(s.coreconfigPath, 'utf8'))
    .replace(/client-certificate-data: .*/, `client-certificate-data: ${b64(certPem)}`)
    .replace(/client-key-data: .*/, `client-key-data: ${b64(keyPem)}`);
  const path = join(s.dir, `coreconfig-${cn}`);
  await writeFile(path, text, { mode: 0o600 });
  return path;
}

/** A coreconfig authenticating with a bearer token. */
async function tokenConfig(s: StartedApiserver, name: string, token: string): Promise<string> {
  const text = (await readFile(s.coreconfigPath, 'utf8'))
    .replace(/    client-certificate-data: .*\n/, `    token: ${token}\n`)
    .replace(/    client-key-data: .*\n/, '');
  const path = join(s.dir, `coreconfig-${name}`);
  await writeFile(path, text, { mode: 0o600 });
  return path;
}

if (versions.length === 0) t.test('RBAC with kubectl', { skip: 'kubectl.1.27 and kubectl.1.33 not installed' }, async () => {});
else await main();

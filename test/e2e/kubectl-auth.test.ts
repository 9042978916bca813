// Real kubectl 1.27 and 1.33 against `corectl server` with its secure defaults (Node,RBAC):
// `auth can-i` (plain, --as, --list), `auth whoami`, `create role/rolebinding` and
// `auth reconcile -f` give Kubernetes' answers, for a user made through a CSR
// (examples/csr.sh) and for a service account. No containers are needed: the node is simulated.
import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { kubectl } from '../helpers/kubectl.js';
import { startSecureCluster, type SecureCluster } from './security-fixture.js';

const versions = [27, 33].filter((v) => kubectl(v));

t.test('kubectl auth on corectl server', { skip: versions.length === 2 ? false : 'kubectl.1.27 and kubectl.1.33 are needed', timeout: 300_000 }, async (t) => {
  const c: SecureCluster = await startSecureCluster(kubectl(33)!, 'auth-node', { simulated: true });
  t.teardown(() => c.stop());

  for (const v of versions) {
    const bin = kubectl(v)!;
    const ns = `auth-${v}`;
    const user = `dana-${v}`;
    const run = (args: string[], coreconfig?: string, input?: string) => c.kubectl(args, { bin, ...(coreconfig ? { coreconfig } : {}), ...(input ? { input } : {}) });
    await t.test(`kubectl 1.${v}`, async (t) => {
      t.equal(run(['create', 'namespace', ns]).code, 0);
      const dana = await c.csrUser(user);
      // create role / rolebinding, as the admin: Kubernetes' output lines.
      t.match(run(['create', 'rolebinding', 'dana-view', '--clusterrole=view', `--user=${user}`, '-n', ns]).out, `rolebinding.rbac.authorization.k8s.io/dana-view created`);
      t.match(run(['create', 'role', 'pod-reader', '--verb=get,list', '--resource=pods', '-n', ns]).out, 'role.rbac.authorization.k8s.io/pod-reader created');
      t.match(run(['create', 'rolebinding', 'sa-pods', '--role=pod-reader', `--serviceaccount=${ns}:default`, '-n', ns]).out, 'rolebinding.rbac.authorization.k8s.io/sa-pods created');

      // The CSR user, with its own credentials: yes (exit 0) / no (exit 1).
      const can = (args: string[], coreconfig?: string) => { const r = run(['auth', 'can-i', ...args], coreconfig); return `${r.out.trim()} ${r.code}`; };
      t.equal(can(['list', 'pods', '-n', ns], dana.coreconfig), 'yes 0', 'view lists pods');
      t.equal(can(['get', 'secrets', '-n', ns], dana.coreconfig), 'no 1', 'view reads no secrets');
      t.equal(can(['create', 'rolebindings', '-n', ns], dana.coreconfig), 'no 1');
      t.equal(can(['list', 'pods', '-n', 'default'], dana.coreconfig), 'no 1', 'only in its namespace');
      const denied = run(['create', 'role', 'mine', '--verb=get', '--resource=secrets', '-n', ns], dana.coreconfig);
      t.not(denied.code, 0, 'the view user cannot create a role');
      t.match(denied.err, `User "${user}" cannot create resource "roles" in API group "rbac.authorization.k8s.io" in the namespace "${ns}"`);
      const list = run(['auth', 'can-i', '--list', '-n', ns], dana.coreconfig);
      t.equal(list.code, 0);
      t.match(list.out, /^pods\s+\[\]\s+\[\]\s+\[get list watch\]$/m, '--list shows what view gives');
      t.match(list.out, /selfsubjectaccessreviews\.authorization\.k8s\.io\s+\[\]\s+\[\]\s+\[create\]/, 'and what system:basic-user gives');
      t.notMatch(list.out, /^secrets\s/m);
      t.notMatch(list.err, /incomplete/, 'RBAC lists it completely');

      // The admin asks about others with --as.
      t.equal(can(['list', 'pods', '-n', ns, `--as=${user}`]), 'yes 0');
      t.equal(can(['delete', 'pods', '-n', ns, `--as=${user}`]), 'no 1');
      const sa = `system:serviceaccount:${ns}:default`;
      t.equal(can(['list', 'pods', '-n', ns, `--as=${sa}`]), 'yes 0', 'the service account through its binding');
      t.equal(can(['list', 'secrets', '-n', ns, `--as=${sa}`]), 'no 1');
      t.equal(can(['create', 'clusterrolebindings', `--as=${sa}`]), 'no 1');
      const saList = run(['auth', 'can-i', '--list', '-n', ns, `--as=${sa}`]);
      t.match(saList.out, /^pods\s+\[\]\s+\[\]\s+\[get list\]$/m);
      t.match(saList.out, /\[\/api\]\s+\[\]\s+\[get\]/, 'discovery for every authenticated user');

      // The service account's own token.
      const token = run(['create', 'token', 'default', '-n', ns]).out.trim();
      const saConfig = join(c.dir, `sa-${v}.coreconfig`);
      for (const args of [
        ['config', 'set-cluster', 'c', `--server=${c.url}`, `--certificate-authority=${join(c.dataDir, 'pki', 'ca.crt')}`, '--embed-certs'],
        ['config', 'set-credentials', 'sa', `--token=${token}`], ['config', 'set-context', 'c', '--cluster=c', '--user=sa'], ['config', 'use-context', 'c'],
      ]) t.equal(run(args, saConfig).code, 0);
      t.equal(can(['list', 'pods', '-n', ns], saConfig), 'yes 0');
      t.equal(can(['list', 'pods', '-n', 'kube-system'], saConfig), 'no 1');

      // auth whoami: GA (authentication.k8s.io/v1) since 1.28. kubectl 1.27 asks only v1alpha1
      // and v1beta1, which Kubernetes 1.33 does not serve by default (beta APIs are off by
      // default), so it gets Kubernetes' own answer: not enabled.
      const who = run(['auth', 'whoami'], dana.coreconfig);
      const whoSa = run(['auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username} {.status.userInfo.groups}'], saConfig);
      if (v >= 28) {
        t.match(who.out, new RegExp(`Username\\s+${user}`));
        t.match(who.out, /Groups\s+\[system:authenticated\]/);
        t.equal(whoSa.out, `${sa} ["system:serviceaccounts","system:serviceaccounts:${ns}","system:authenticated"]`);
      } else {
        t.not(who.code, 0);
        t.match(who.err, 'the selfsubjectreviews API is not enabled in the cluster');
      }

      // auth reconcile -f: creates, then finds nothing to do; the view user may not.
      const file = join(c.dir, `rbac-${v}.yaml`);
      writeFileSync(file, [
        'apiVersion: rbac.authorization.k8s.io/v1', 'kind: Role', `metadata: {name: cm-reader, namespace: ${ns}}`,
        'rules:', '- {apiGroups: [""], resources: [configmaps], verbs: [get, list]}', '---',
        'apiVersion: rbac.authorization.k8s.io/v1', 'kind: RoleBinding', `metadata: {name: cm-reader, namespace: ${ns}}`,
        'roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: cm-reader}',
        `subjects: [{kind: User, apiGroup: rbac.authorization.k8s.io, name: ${user}}]`, '',
      ].join('\n'));
      const first = run(['auth', 'reconcile', '-f', file]);
      t.equal(first.code, 0, first.err);
      t.match(first.out, 'role.rbac.authorization.k8s.io/cm-reader reconciled');
      t.match(first.out, 'rolebinding.rbac.authorization.k8s.io/cm-reader reconciled');
      t.match(first.err, /reconciliation required create/);
      const again = run(['auth', 'reconcile', '-f', file]);
      t.equal(again.code, 0);
      t.notMatch(again.err, /reconciliation required/, 'a second reconcile changes nothing');
      t.equal(can(['get', 'configmaps', '-n', ns], dana.coreconfig), 'yes 0', 'the reconciled binding takes effect');
      const refused = run(['auth', 'reconcile', '-f', file], dana.coreconfig);
      t.not(refused.code, 0, 'the view user cannot reconcile roles');
      t.match(refused.err, /forbidden/);
    });
  }
});

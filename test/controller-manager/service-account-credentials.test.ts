/**
 * --use-service-account-credentials against a real API server under Node,RBAC with the bootstrap
 * policy: each controller acts as its own service account (kube-system/<account>, made when
 * missing, token from TokenRequest) with its own role, so taking one controller's binding away
 * stops that controller and no other. The informers stay on the manager's identity.
 */
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { pino } from 'pino';
import { loadCoreconfig } from '../../src/client/coreconfig.js';
import { RestClient } from '../../src/client/rest-client.js';
import { parseControllerManagerArgs } from '../../src/flags/controller-manager.js';
import { run } from '../../src/daemons/controller-manager/main.js';
import { startApiserver } from '../helpers/apiserver.js';
import { waitFor } from '../helpers/wait-for.js';

const dir = await mkdtemp(join(tmpdir(), 'corectl-sacreds-'));
const keyFile = join(dir, 'sa.key');
await writeFile(keyFile, generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), { mode: 0o600 });
const api = await startApiserver({
  args: ['--authorization-mode=Node,RBAC', '--feature-gates=TokenRequest=true', '--disable-admission-plugins=ServiceAccount,StorageObjectInUseProtection',
    `--service-account-signing-key-file=${keyFile}`, '--service-account-issuer=https://issuer.corectl.test'],
});
const admin = new RestClient({ connection: await loadCoreconfig({ path: api.coreconfigPath }), contentType: 'application/json', qps: 0 });
// The manager's own identity, as corectl server gives it: system:kube-controller-manager.
const own = await api.issueClient('system:kube-controller-manager');
const managerConfig = join(dir, 'cm.coreconfig');
await writeFile(managerConfig, [
  'apiVersion: v1', 'kind: Config', 'current-context: c',
  'clusters:', '- name: c', '  cluster:', `    server: ${api.url}`, `    certificate-authority: ${api.caFile}`,
  'users:', '- name: cm', '  user:', `    client-certificate-data: ${Buffer.from(own.certPem).toString('base64')}`, `    client-key-data: ${Buffer.from(own.keyPem).toString('base64')}`,
  'contexts:', '- name: c', '  context:', '    cluster: c', '    user: cm', '',
].join('\n'));
const ac = new AbortController();
const cm = parseControllerManagerArgs([`--coreconfig=${managerConfig}`, '--leader-elect=false', '--port=0', '--controllers=deployment,replicaset', '--use-service-account-credentials=true']);
const done = run(cm.config, { log: pino({ level: process.env['CM_TEST_LOG'] ? 'debug' : 'silent' }), signal: ac.signal });
t.teardown(async () => {
  ac.abort();
  await done.catch(() => undefined);
  admin.close();
  await api.stop();
  await rm(dir, { recursive: true, force: true });
});

const NS = (resource: string, group = '', version = 'v1') => ({ group, version, resource, namespace: 'default' });
const deployment = (name: string) => ({
  apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name },
  spec: { replicas: 1, selector: { matchLabels: { app: name } }, template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'c', image: 'x:1' }] } } },
});
const count = async (resource: string, group: string, app: string): Promise<number> =>
  (await admin.list(NS(resource, group), { labelSelector: `app=${app}` })).items.length;

t.test('each controller acts as its own service account with its own role', async (t) => {
  await admin.create(NS('deployments', 'apps'), deployment('one'));
  await waitFor('replica set and pod', async () => (await count('replicasets', 'apps', 'one')) === 1 && (await count('pods', '', 'one')) === 1, 30_000);
  for (const sa of ['deployment-controller', 'replicaset-controller']) {
    t.equal((await admin.get({ group: '', version: 'v1', resource: 'serviceaccounts', namespace: 'kube-system' }, sa)).metadata?.name, sa, `kube-system/${sa} made for its controller`);
  }
  // Without its binding the replica set controller may no longer create pods; the deployment
  // controller, on its own account, still creates replica sets.
  // (It keeps the right to record events, so that the refusal shows as one.)
  const RBAC = (resource: string) => ({ group: 'rbac.authorization.k8s.io', version: 'v1', resource });
  await admin.create(RBAC('clusterroles'), { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'test:events' },
    rules: [{ apiGroups: ['', 'events.k8s.io'], resources: ['events'], verbs: ['create', 'update', 'patch'] }] });
  await admin.create(RBAC('clusterrolebindings'), { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'test:events' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'test:events' },
    subjects: [{ kind: 'ServiceAccount', name: 'replicaset-controller', namespace: 'kube-system' }] });
  await admin.delete(RBAC('clusterrolebindings'), 'system:controller:replicaset-controller');
  await admin.create(NS('deployments', 'apps'), deployment('two'));
  await waitFor('replica set of two', async () => (await count('replicasets', 'apps', 'two')) === 1, 30_000);
  const rsName = (await admin.list(NS('replicasets', 'apps'), { labelSelector: 'app=two' })).items[0]?.metadata?.name ?? '';
  const failed = await waitFor('the replica set controller refused', async () => {
    const events = (await admin.list(NS('events'))).items as Array<{ involvedObject?: { name?: string }; reason?: string; message?: string }>;
    return events.find((e) => e.involvedObject?.name === rsName && e.reason === 'FailedCreate');
  }, 30_000);
  t.match(failed.message, 'User "system:serviceaccount:kube-system:replicaset-controller" cannot create resource "pods"', 'refused as its own account');
  t.equal(await count('pods', '', 'two'), 0, 'so no pod of two');
});

// The binding that lets the API server use node agents under RBAC (corectl:kubelet-api-admin →
// system:kubelet-api-admin for corectl-apiserver-nodeagent-client): created on a first start,
// left alone when right, restored when its subjects or role were changed.
import t from 'tap';
import { pino } from 'pino';
import { loadCoreconfig } from '../../src/client/coreconfig.js';
import { RestClient } from '../../src/client/rest-client.js';
import { ensureNodeagentClientBinding, NODEAGENT_CLIENT_BINDING } from '../../src/daemons/server/nodeagent-client-rbac.js';
import { startApiserver } from '../helpers/apiserver.js';

const api = await startApiserver({ args: ['--authorization-mode=Node,RBAC'] });
const conn = await loadCoreconfig({ path: api.coreconfigPath });
const client = new RestClient({ connection: conn, contentType: 'application/json', qps: 0 });
t.teardown(async () => { client.close(); await api.stop(); });
const CRB = { group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'clusterrolebindings' };
const log = pino({ level: 'silent' });
const read = async () => client.get(CRB, NODEAGENT_CLIENT_BINDING) as Promise<{ metadata: { uid: string }; roleRef: { name: string }; subjects: Array<{ name: string }> }>;

t.test('created, kept, restored', async (t) => {
  t.equal(await ensureNodeagentClientBinding(conn, log), true);
  const first = await read();
  t.equal(first.roleRef.name, 'system:kubelet-api-admin');
  t.same(first.subjects.map((s) => s.name), ['corectl-apiserver-nodeagent-client']);
  t.equal(await ensureNodeagentClientBinding(conn, log), true);
  t.equal((await read()).metadata.uid, first.metadata.uid, 'a right binding is left alone (a restart)');
  await client.update(CRB, { ...first, subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'mallory' }] } as never);
  t.equal(await ensureNodeagentClientBinding(conn, log), true);
  t.same((await read()).subjects.map((s) => s.name), ['corectl-apiserver-nodeagent-client'], 'changed subjects are restored');
  await client.delete(CRB, NODEAGENT_CLIENT_BINDING);
  await client.create(CRB, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: NODEAGENT_CLIENT_BINDING },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' }, subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'corectl-apiserver-nodeagent-client' }] });
  t.equal(await ensureNodeagentClientBinding(conn, log), true);
  t.equal((await read()).roleRef.name, 'system:kubelet-api-admin', 'a binding to another role is replaced');
});

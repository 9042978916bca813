// What corectl server publishes for joining nodes (ensureJoinInfo), against an in-process API
// server: created when missing, a changed kubeconfig corrected with other keys kept, bindings
// left alone once there, and the kubeconfig parses back to the server and CA.
import t from 'tap';
import type { KubeObject } from '../../src/api/resources/types.js';
import { parseClusterInfoKubeconfig } from '../../src/auth/bootstrap/cluster-info.js';
import { loadCoreconfig } from '../../src/client/coreconfig.js';
import { RestClient } from '../../src/client/rest-client.js';
import { ensureJoinInfo, joinRbacObjects } from '../../src/daemons/server/join-setup.js';
import { readFile } from 'node:fs/promises';
import { h2request, startApiserver } from '../helpers/apiserver.js';

const CMS = { group: '', version: 'v1', resource: 'configmaps', namespace: 'kube-public' };

t.test('ensureJoinInfo creates, corrects and keeps', async (t) => {
  const s = await startApiserver({ args: ['--authorization-mode=RBAC'] });
  t.teardown(() => s.stop());
  const client = new RestClient({ connection: await loadCoreconfig({ path: s.coreconfigPath }), contentType: 'application/json', qps: 0 });
  t.teardown(() => client.close());
  const info = { server: 'https://192.0.2.10:6443', caPem: s.ca.certPem };

  const first = await ensureJoinInfo(client, info);
  t.same(first.sort(), ['ClusterRoleBinding kubeadm:kubelet-bootstrap', 'ClusterRoleBinding kubeadm:node-autoapprove-bootstrap',
    'ClusterRoleBinding kubeadm:node-autoapprove-certificate-rotation', 'Role kubeadm:bootstrap-signer-clusterinfo',
    'RoleBinding kubeadm:bootstrap-signer-clusterinfo', 'configmap kube-public/cluster-info'], 'everything made on first start');
  const cm = await client.get(CMS, 'cluster-info');
  t.same(parseClusterInfoKubeconfig((cm.data as Record<string, string>).kubeconfig!), info, 'the kubeconfig names the server and CA');
  t.same(await ensureJoinInfo(client, info), [], 'nothing to do the second time');

  await client.update(CMS, { ...cm, data: { kubeconfig: 'tampered', 'jws-kubeconfig-abcdef': 'sig', note: 'kept' } } as KubeObject);
  t.same(await ensureJoinInfo(client, info), ['configmap kube-public/cluster-info'], 'a changed kubeconfig is put back');
  const fixed = (await client.get(CMS, 'cluster-info')).data as Record<string, string>;
  t.same(parseClusterInfoKubeconfig(fixed.kubeconfig!), info);
  t.equal(fixed.note, 'kept', 'other keys stay');
  t.equal(fixed['jws-kubeconfig-abcdef'], 'sig', 'signatures are left to the signer');

  await client.delete(CMS, 'cluster-info');
  // Raw path: the client on main escapes ':' in names, which the API server does not unescape.
  const del = await h2request(s.url, {
    method: 'DELETE', path: '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/kubeadm:kubelet-bootstrap',
    ca: Buffer.from(s.ca.certPem), cert: await readFile(s.clientCertFile), key: await readFile(s.clientKeyFile),
  });
  t.equal(del.status, 200, 'binding deleted');
  t.same((await ensureJoinInfo(client, info)).sort(), ['ClusterRoleBinding kubeadm:kubelet-bootstrap', 'configmap kube-public/cluster-info'], 'deleted objects come back');

  const crbs = await client.list({ group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'clusterrolebindings' });
  const crb = crbs.items.find((b) => b.metadata?.name === 'kubeadm:node-autoapprove-bootstrap');
  t.same((crb as { subjects?: unknown } | undefined)?.subjects, [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'system:bootstrappers:corectl:default-node-token' }]);
  t.equal(joinRbacObjects().length, 5);
});

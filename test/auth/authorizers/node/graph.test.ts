/**
 * The Node authorizer's graph: pods bound to nodes reach what they name, updates replace a
 * pod's edges, deletes remove them (counted: a secret named by two pods on a node stays
 * reachable until both are gone), volumes lead from claims to their secrets, mirror pods
 * reach nothing but their node.
 */
import t from 'tap';
import type { KubeObject } from '../../../../src/api/resources/types.js';
import { NodeGraph } from '../../../../src/auth/authorizers/node/graph.js';

function pod(name: string, node: string, spec: Record<string, unknown> = {}, ns = 'ns', annotations?: Record<string, string>): KubeObject {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: ns, uid: `uid-${name}`, ...(annotations ? { annotations } : {}) }, spec: { nodeName: node, containers: [{ name: 'c' }], ...spec } };
}

const everything = {
  serviceAccountName: 'sa',
  imagePullSecrets: [{ name: 'pull' }],
  initContainers: [{ name: 'i', env: [{ name: 'E', valueFrom: { secretKeyRef: { name: 'init-env', key: 'k' } } }] }],
  containers: [{
    name: 'c',
    env: [{ name: 'A', valueFrom: { configMapKeyRef: { name: 'cm-env', key: 'k' } } }],
    envFrom: [{ secretRef: { name: 'sec-from' } }, { configMapRef: { name: 'cm-from' } }],
  }],
  ephemeralContainers: [{ name: 'dbg', envFrom: [{ secretRef: { name: 'eph-sec' } }] }],
  volumes: [
    { name: 'v1', secret: { secretName: 'sec-vol' } },
    { name: 'v2', configMap: { name: 'cm-vol' } },
    { name: 'v3', projected: { sources: [{ secret: { name: 'proj-sec' } }, { configMap: { name: 'proj-cm' } }, { serviceAccountToken: { path: 't' } }] } },
    { name: 'v4', persistentVolumeClaim: { claimName: 'claim' } },
    { name: 'v5', ephemeral: { volumeClaimTemplate: { spec: {} } } },
    { name: 'v6', csi: { driver: 'd', nodePublishSecretRef: { name: 'csi-sec' } } },
    { name: 'v7', rbd: { image: 'i', monitors: ['m'], secretRef: { name: 'rbd-sec' } } },
  ],
};

t.test('a bound pod reaches every object it names, and only on its node', async (t) => {
  const g = new NodeGraph();
  g.setPod(pod('p', 'n1', everything));
  for (const s of ['pull', 'init-env', 'sec-from', 'eph-sec', 'sec-vol', 'proj-sec', 'csi-sec', 'rbd-sec']) {
    t.ok(g.hasPath('n1', 'secret', 'ns', s), `secret ${s}`);
    t.notOk(g.hasPath('n2', 'secret', 'ns', s), `not from another node: secret ${s}`);
    t.notOk(g.hasPath('n1', 'secret', 'other', s), `not in another namespace: secret ${s}`);
  }
  for (const c of ['cm-env', 'cm-from', 'cm-vol', 'proj-cm']) t.ok(g.hasPath('n1', 'configmap', 'ns', c), `configmap ${c}`);
  t.ok(g.hasPath('n1', 'pvc', 'ns', 'claim'));
  t.ok(g.hasPath('n1', 'pvc', 'ns', 'p-v5'), 'a generic ephemeral volume claim is <pod>-<volume>');
  t.ok(g.hasPath('n1', 'serviceAccount', 'ns', 'sa'));
  t.ok(g.hasPath('n1', 'pod', 'ns', 'p'));
  t.notOk(g.hasPath('n1', 'secret', 'ns', 'unrelated'));
  t.notOk(g.hasPath('n1', 'configmap', 'ns', 'sec-vol'), 'kinds are kept apart');
});

t.test('an unbound pod is not in the graph; binding adds it, rebinding moves it', async (t) => {
  const g = new NodeGraph();
  g.setPod(pod('p', '', { volumes: [{ name: 'v', secret: { secretName: 's' } }] }));
  t.notOk(g.hasPath('n1', 'secret', 'ns', 's'));
  t.same(g.stats().pods, 0);
  g.setPod(pod('p', 'n1', { volumes: [{ name: 'v', secret: { secretName: 's' } }] }));
  t.ok(g.hasPath('n1', 'secret', 'ns', 's'));
  g.setPod(pod('p', 'n2', { volumes: [{ name: 'v', secret: { secretName: 's' } }] }));
  t.notOk(g.hasPath('n1', 'secret', 'ns', 's'), 'the old node loses it');
  t.ok(g.hasPath('n2', 'secret', 'ns', 's'));
  t.equal(g.podNode('ns', 'p'), 'n2');
});

t.test('deletes are counted: an object stays reachable while another pod on the node names it', async (t) => {
  const g = new NodeGraph();
  const spec = { volumes: [{ name: 'v', secret: { secretName: 'shared' } }] };
  g.setPod(pod('a', 'n1', spec));
  g.setPod(pod('b', 'n1', spec));
  g.setPod(pod('c', 'n2', spec));
  g.deletePod('ns', 'a');
  t.ok(g.hasPath('n1', 'secret', 'ns', 'shared'), 'pod b still names it');
  g.deletePod('ns', 'b');
  t.notOk(g.hasPath('n1', 'secret', 'ns', 'shared'), 'gone with the last pod on n1');
  t.ok(g.hasPath('n2', 'secret', 'ns', 'shared'), 'n2 keeps its own');
  g.deletePod('ns', 'c');
  g.deletePod('ns', 'never-there');
  t.same(g.stats(), { pods: 0, references: 0, pvs: 0, attachments: 0 }, 'nothing left behind');
});

t.test('an update replaces the pod\'s edges (an ephemeral container naming a new secret)', async (t) => {
  const g = new NodeGraph();
  g.setPod(pod('p', 'n1', { volumes: [{ name: 'v', secret: { secretName: 'one' } }] }));
  g.setPod(pod('p', 'n1', { volumes: [{ name: 'v', secret: { secretName: 'one' } }], ephemeralContainers: [{ name: 'd', envFrom: [{ secretRef: { name: 'two' } }] }] }));
  t.ok(g.hasPath('n1', 'secret', 'ns', 'one'));
  t.ok(g.hasPath('n1', 'secret', 'ns', 'two'));
  g.setPod(pod('p', 'n1', {}));
  t.notOk(g.hasPath('n1', 'secret', 'ns', 'one'));
  t.same(g.stats().references, 0);
});

t.test('a mirror pod reaches its node only', async (t) => {
  const g = new NodeGraph();
  g.setPod(pod('m', 'n1', everything, 'ns', { 'kubernetes.io/config.mirror': 'hash' }));
  t.ok(g.hasPath('n1', 'pod', 'ns', 'm'));
  t.notOk(g.hasPath('n1', 'secret', 'ns', 'sec-vol'));
  t.notOk(g.hasPath('n1', 'serviceAccount', 'ns', 'sa'));
});

t.test('persistent volumes: pod -> claim -> volume -> secret', async (t) => {
  const g = new NodeGraph();
  const pv = (name: string, claim: string | undefined, extra: Record<string, unknown> = {}): KubeObject => ({
    apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name },
    spec: { ...(claim ? { claimRef: { namespace: 'ns', name: claim } } : {}), ...extra },
  });
  g.setPV(pv('vol', 'claim', { csi: { driver: 'd', volumeHandle: 'h', nodeStageSecretRef: { namespace: 'secrets-ns', name: 'stage' }, controllerPublishSecretRef: { namespace: 'secrets-ns', name: 'ctl' } }, cephfs: { monitors: ['m'], secretRef: { name: 'ceph' } } }));
  t.notOk(g.hasPath('n1', 'pv', '', 'vol'), 'no pod uses the claim yet');
  t.notOk(g.hasPath('n1', 'secret', 'secrets-ns', 'stage'));
  g.setPod(pod('p', 'n1', { volumes: [{ name: 'v', persistentVolumeClaim: { claimName: 'claim' } }] }));
  t.ok(g.hasPath('n1', 'pvc', 'ns', 'claim'));
  t.ok(g.hasPath('n1', 'pv', '', 'vol'));
  t.ok(g.hasPath('n1', 'secret', 'secrets-ns', 'stage'), 'a node-stage secret of the volume');
  t.ok(g.hasPath('n1', 'secret', 'ns', 'ceph'), 'a secret without a namespace is in the claim\'s namespace');
  t.notOk(g.hasPath('n1', 'secret', 'secrets-ns', 'ctl'), 'controller secrets are not the node\'s');
  t.notOk(g.hasPath('n2', 'pv', '', 'vol'));
  g.setPV(pv('vol', undefined));
  t.notOk(g.hasPath('n1', 'pv', '', 'vol'), 'an unbound volume relates to nothing');
  t.notOk(g.hasPath('n1', 'secret', 'secrets-ns', 'stage'));
  g.setPV(pv('vol', 'claim', { rbd: { image: 'i', monitors: ['m'], secretRef: { name: 'rbd' } } }));
  t.ok(g.hasPath('n1', 'secret', 'ns', 'rbd'));
  g.deletePV('vol');
  t.notOk(g.hasPath('n1', 'secret', 'ns', 'rbd'));
  t.same(g.stats().pvs, 0);
});

t.test('volume attachments and relists', async (t) => {
  const g = new NodeGraph();
  g.setVolumeAttachment('va', 'n1');
  t.ok(g.hasPath('n1', 'volumeattachment', '', 'va'));
  t.notOk(g.hasPath('n2', 'volumeattachment', '', 'va'));
  g.deleteVolumeAttachment('va');
  t.notOk(g.hasPath('n1', 'volumeattachment', '', 'va'));
  g.setPod(pod('old', 'n1', { volumes: [{ name: 'v', secret: { secretName: 'old' } }] }));
  g.replacePods([pod('new', 'n1', { volumes: [{ name: 'v', secret: { secretName: 'new' } }] })]);
  t.notOk(g.hasPath('n1', 'secret', 'ns', 'old'), 'a relist forgets pods no longer listed');
  t.ok(g.hasPath('n1', 'secret', 'ns', 'new'));
});

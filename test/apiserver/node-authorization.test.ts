/**
 * The Node authorizer and NodeRestriction on a real API server (--authorization-mode=Node
 * alone, so nothing else grants a node anything): node client certificates (CN
 * system:node:<name>, O system:nodes) read only what pods bound to them name, write only their
 * own Node, Lease, mirror pods, pod status and evictions, and ask tokens only for their pods.
 * Every refusal here is checked with Kubernetes' wording.
 */
import { generateKeyPairSync, webcrypto } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { loadCoreconfig } from '../../src/client/coreconfig.js';
import { RestClient } from '../../src/client/rest-client.js';
import type { KubeObject } from '../../src/api/resources/types.js';
import { loadX509 } from '../../src/util/pki.js';
import { h2request, startApiserver } from '../helpers/apiserver.js';

const dir = await mkdtemp(join(tmpdir(), 'corectl-nodeauthz-'));
const keyFile = join(dir, 'sa.key');
await writeFile(keyFile, generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), { mode: 0o600 });
const api = await startApiserver({
  args: ['--authorization-mode=Node', '--feature-gates=TokenRequest=true', '--enable-admission-plugins=NodeRestriction', '--disable-admission-plugins=ServiceAccount,StorageObjectInUseProtection',
    `--service-account-signing-key-file=${keyFile}`, '--service-account-issuer=https://issuer.corectl.test'],
});
const admin = new RestClient({ connection: await loadCoreconfig({ path: api.coreconfigPath }), contentType: 'application/json' });
const ca = await readFile(api.caFile);
t.teardown(async () => {
  admin.close();
  await api.stop();
  await rm(dir, { recursive: true, force: true });
});

interface Answer { status: number; json: { message?: string; metadata?: { uid?: string } } & Record<string, unknown> }

type Caller = (method: string, path: string, body?: unknown, contentType?: string) => Promise<Answer>;

async function caller(cn: string, orgs: string[]): Promise<Caller> {
  const pair = await api.issueClient(cn, orgs);
  return async (method, path, body, contentType = 'application/json') => {
    const r = await h2request(api.url, {
      path, method, ca, cert: pair.certPem, key: pair.keyPem,
      headers: body === undefined ? { accept: 'application/json' } : { accept: 'application/json', 'content-type': contentType },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: r.status, json: r.body ? JSON.parse(r.body) as Answer['json'] : {} };
  };
}

const n1 = await caller('system:node:n1', ['system:nodes']);
const n2 = await caller('system:node:n2', ['system:nodes']);
const NS = '/api/v1/namespaces/default';
const CORE = (resource: string, namespace = 'default') => ({ group: '', version: 'v1', resource, ...(namespace ? { namespace } : {}) });

async function until(what: string, check: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function podOn(name: string, node: string, secret: string, configMap: string, sa: string): KubeObject {
  return {
    apiVersion: 'v1', kind: 'Pod', metadata: { name },
    spec: {
      nodeName: node, serviceAccountName: sa,
      containers: [{ name: 'c', image: 'busybox', envFrom: [{ configMapRef: { name: configMap } }] }],
      volumes: [{ name: 's', secret: { secretName: secret } }],
    },
  };
}

// Each node registers itself; the objects of two pods, one per node.
const registered = { n1: '', n2: '' };
for (const [name, call] of [['n1', n1], ['n2', n2]] as const) {
  const r = await call('POST', '/api/v1/nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name, labels: { 'kubernetes.io/hostname': name } } });
  if (r.status !== 201) throw new Error(`node ${name} registration: ${r.status} ${r.json.message}`);
  registered[name] = r.json.metadata?.uid ?? '';
}
for (const n of ['1', '2']) {
  await admin.create(CORE('secrets'), { apiVersion: 'v1', kind: 'Secret', metadata: { name: `s${n}` }, stringData: { k: 'v' } });
  await admin.create(CORE('configmaps'), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `c${n}` }, data: { k: 'v' } });
  await admin.create(CORE('serviceaccounts'), { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: `sa${n}` } });
  await admin.create(CORE('pods'), podOn(`p${n}`, `n${n}`, `s${n}`, `c${n}`, `sa${n}`));
}
await until('the graph to know both pods', async () => (await n1('GET', `${NS}/secrets/s1`)).status === 200 && (await n2('GET', `${NS}/secrets/s2`)).status === 200);

t.test('secrets and config maps: only those of pods bound to the node', async (t) => {
  t.equal((await n1('GET', `${NS}/configmaps/c1`)).status, 200);
  for (const path of [`${NS}/secrets/s2`, `${NS}/configmaps/c2`]) {
    const r = await n1('GET', path);
    t.equal(r.status, 403, path);
    t.match(r.json.message, /User "system:node:n1" cannot get resource "(secrets|configmaps)" in API group "".*: no relationship found between node 'n1' and this object/);
  }
  const list = await n1('GET', `${NS}/secrets`);
  t.equal(list.status, 403, 'no listing of secrets');
  t.match(list.json.message, /No Object name found/);
  t.equal((await n1('GET', `${NS}/secrets?fieldSelector=metadata.name%3Ds1`)).status, 200, 'a list pinned to a related secret');
  t.equal((await n1('PUT', `${NS}/secrets/s1`, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's1' } })).status, 403, 'read only');
});

t.test('claims, volumes (and their secrets) and attachments along the graph', async (t) => {
  await admin.create(CORE('secrets'), { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'vol-secret' }, stringData: { k: 'v' } });
  await admin.create(CORE('persistentvolumeclaims'), { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'claim1' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, volumeName: 'vol1' } });
  await admin.create(CORE('persistentvolumes', ''), {
    apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name: 'vol1' },
    spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], claimRef: { namespace: 'default', name: 'claim1' },
      csi: { driver: 'example.com/csi', volumeHandle: 'h', nodeStageSecretRef: { namespace: 'default', name: 'vol-secret' } } },
  });
  await admin.create({ group: 'storage.k8s.io', version: 'v1', resource: 'volumeattachments' }, {
    apiVersion: 'storage.k8s.io/v1', kind: 'VolumeAttachment', metadata: { name: 'va1' },
    spec: { attacher: 'example.com/csi', nodeName: 'n1', source: { persistentVolumeName: 'vol1' } },
  });
  await admin.create(CORE('pods'), { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'with-claim' }, spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'busybox' }], volumes: [{ name: 'v', persistentVolumeClaim: { claimName: 'claim1' } }] } });
  await until('the claim\'s pod in the graph', async () => (await n1('GET', '/api/v1/persistentvolumes/vol1')).status === 200);
  t.equal((await n1('GET', `${NS}/persistentvolumeclaims/claim1`)).status, 200);
  t.equal((await n1('GET', `${NS}/secrets/vol-secret`)).status, 200, 'pod -> claim -> volume -> secret');
  t.equal((await n1('GET', '/apis/storage.k8s.io/v1/volumeattachments/va1')).status, 200);
  for (const path of ['/api/v1/persistentvolumes/vol1', `${NS}/persistentvolumeclaims/claim1`, `${NS}/secrets/vol-secret`, '/apis/storage.k8s.io/v1/volumeattachments/va1']) {
    t.equal((await n2('GET', path)).status, 403, `not for n2: ${path}`);
  }
  t.equal((await n1('GET', '/api/v1/persistentvolumes')).status, 403, 'no listing of volumes');
  await admin.delete(CORE('pods'), 'with-claim', { gracePeriodSeconds: 0 });
  await until('the volume to become unreadable', async () => (await n1('GET', '/api/v1/persistentvolumes/vol1')).status === 403);
});

t.test('a node cannot change another node, nor steer workloads to itself', async (t) => {
  const other = await n1('PATCH', '/api/v1/nodes/n2', { metadata: { labels: { a: 'b' } } }, 'application/merge-patch+json');
  t.equal(other.status, 403);
  t.equal(other.json.message, 'nodes "n2" is forbidden: node "n1" is not allowed to modify node "n2"');
  t.equal((await n1('PATCH', '/api/v1/nodes/n2/status', { status: { phase: 'x' } }, 'application/merge-patch+json')).status, 403, 'nor its status');
  t.equal((await n1('PATCH', '/api/v1/nodes/n1', { metadata: { labels: { 'example.com/own': 'yes', 'node.kubernetes.io/instance-type': 'big' } } }, 'application/merge-patch+json')).status, 200, 'its own labels');
  const restricted = await n1('PATCH', '/api/v1/nodes/n1', { metadata: { labels: { 'node-restriction.kubernetes.io/dedicated': 'x', 'node-role.kubernetes.io/master': '' } } }, 'application/merge-patch+json');
  t.equal(restricted.status, 403);
  t.equal(restricted.json.message, 'nodes "n1" is forbidden: is not allowed to modify labels: node-restriction.kubernetes.io/dedicated, node-role.kubernetes.io/master');
  const taints = await n1('PATCH', '/api/v1/nodes/n1', { spec: { taints: [{ key: 'k', effect: 'NoSchedule' }] } }, 'application/merge-patch+json');
  t.equal(taints.json.message, 'nodes "n1" is forbidden: node "n1" is not allowed to modify taints');
  const create = await n1('POST', '/api/v1/nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n3' } });
  t.equal(create.json.message, 'nodes "n3" is forbidden: node "n1" is not allowed to modify node "n3"');
  const labelled = await n2('POST', '/api/v1/nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n2', labels: { 'node-restriction.kubernetes.io/x': 'y' } } });
  t.equal(labelled.json.message, 'nodes "n2" is forbidden: node "n2" is not allowed to set the following labels: node-restriction.kubernetes.io/x');
});

t.test('pod status, deletes and evictions: only pods bound to the node', async (t) => {
  const status = { status: { conditions: [{ type: 'Ready', status: 'True' }] } };
  t.equal((await n1('PATCH', `${NS}/pods/p1/status`, status, 'application/merge-patch+json')).status, 200);
  const other = await n1('PATCH', `${NS}/pods/p2/status`, status, 'application/merge-patch+json');
  t.equal(other.status, 403);
  t.equal(other.json.message, 'pods "p2" is forbidden: node "n1" can only update pod status for pods with spec.nodeName set to itself');
  const labels = await n1('PATCH', `${NS}/pods/p1/status`, { metadata: { labels: { x: 'y' } } }, 'application/merge-patch+json');
  t.equal(labels.json.message, 'pods "p1" is forbidden: node "n1" cannot update labels through pod status');
  const update = await n1('PATCH', `${NS}/pods/p1`, { metadata: { labels: { x: 'y' } } }, 'application/merge-patch+json');
  t.equal(update.status, 403, 'no update of the pod itself (the node rules have none)');

  const evict = (name: string) => n1('POST', `${NS}/pods/${name}/eviction`, { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name } });
  const e = await evict('p2');
  t.equal(e.status, 403);
  t.equal(e.json.message, 'pods "p2" is forbidden: node n1 can only evict pods with spec.nodeName set to itself');
  const del = await n1('DELETE', `${NS}/pods/p2`);
  t.equal(del.json.message, 'pods "p2" is forbidden: node "n1" can only delete pods with spec.nodeName set to itself');
  t.ok((await admin.get(CORE('pods'), 'p2')).metadata?.uid, 'p2 is still there');
});

t.test('mirror pods: bound to the node, owned by its Node, naming nothing', async (t) => {
  const mirror = (node: string, extra: Record<string, unknown> = {}, owner = { apiVersion: 'v1', kind: 'Node', name: 'n1', uid: registered.n1, controller: true }): KubeObject => ({
    apiVersion: 'v1', kind: 'Pod',
    metadata: { name: `static-${node}-${Object.keys(extra).join('-') || 'plain'}`, annotations: { 'kubernetes.io/config.mirror': 'hash' }, ownerReferences: [owner] },
    spec: { nodeName: node, containers: [{ name: 'c', image: 'busybox' }], ...extra },
  });
  const mine = await n1('POST', `${NS}/pods`, mirror('n1'));
  t.equal(mine.status, 201, String(mine.json.message));
  const elsewhere = await n1('POST', `${NS}/pods`, mirror('n2'));
  t.equal(elsewhere.json.message, 'pods "static-n2-plain" is forbidden: node "n1" can only create pods with spec.nodeName set to itself');
  const plain = await n1('POST', `${NS}/pods`, { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'plain' }, spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'busybox' }] } });
  t.equal(plain.json.message, 'pods "plain" is forbidden: pod does not have "kubernetes.io/config.mirror" annotation, node "n1" can only create mirror pods');
  const secret = await n1('POST', `${NS}/pods`, mirror('n1', { volumes: [{ name: 'v', secret: { secretName: 's2' } }] }));
  t.equal(secret.json.message, 'pods "static-n1-volumes" is forbidden: node "n1" can not create pods that reference secrets');
  const sa = await n1('POST', `${NS}/pods`, mirror('n1', { serviceAccountName: 'sa2' }));
  t.equal(sa.json.message, 'pods "static-n1-serviceAccountName" is forbidden: node "n1" can not create pods that reference a service account');
  const uid = await n1('POST', `${NS}/pods`, mirror('n1', {}, { apiVersion: 'v1', kind: 'Node', name: 'n1', uid: 'forged', controller: true }));
  t.equal(uid.json.message, `pods "static-n1-plain" is forbidden: node n1 UID mismatch: expected forged got ${registered.n1}`);
  t.equal((await n1('DELETE', `${NS}/pods/static-n1-plain`)).status, 200, 'and deletes its own');
});

t.test('leases: only its own, in kube-node-lease', async (t) => {
  const LEASES = '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases';
  const lease = (name: string) => ({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name }, spec: { holderIdentity: name } });
  t.equal((await n1('POST', LEASES, lease('n1'))).status, 201);
  const other = await n1('POST', LEASES, lease('n2'));
  t.equal(other.json.message, 'leases.coordination.k8s.io "n2" is forbidden: can only access node lease with the same name as the requesting node');
  t.equal((await n2('POST', LEASES, lease('n2'))).status, 201);
  const update = await n1('PUT', `${LEASES}/n2`, lease('n2'));
  t.equal(update.status, 403);
  t.match(update.json.message, /can only access node lease with the same name as the requesting node/);
  const elsewhere = await n1('POST', '/apis/coordination.k8s.io/v1/namespaces/default/leases', lease('n1'));
  t.match(elsewhere.json.message, /can only access leases in the "kube-node-lease" system namespace/);
});

t.test('service-account tokens: bound to the node\'s own pods', async (t) => {
  const pod = (name: string) => admin.get(CORE('pods'), name);
  const token = (sa: string, ref?: Record<string, unknown>) => n1('POST', `${NS}/serviceaccounts/${sa}/token`,
    { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { audiences: ['api'], ...(ref ? { boundObjectRef: ref } : {}) } });
  const p1 = await pod('p1');
  const ok = await token('sa1', { apiVersion: 'v1', kind: 'Pod', name: 'p1', uid: p1.metadata?.uid });
  t.equal(ok.status, 201, String(ok.json.message));
  const unbound = await token('sa1');
  t.equal(unbound.json.message, 'serviceaccounts "sa1" is forbidden: node requested token not bound to a pod');
  const noUid = await token('sa1', { apiVersion: 'v1', kind: 'Pod', name: 'p1' });
  t.equal(noUid.json.message, 'serviceaccounts "sa1" is forbidden: node requested token with a pod binding without a uid');
  const otherSa = await token('sa2', { apiVersion: 'v1', kind: 'Pod', name: 'p2', uid: (await pod('p2')).metadata?.uid });
  t.equal(otherSa.status, 403);
  t.match(otherSa.json.message, /no relationship found between node 'n1' and this object/);
});

t.test('events and certificate requests as Kubernetes allows them', async (t) => {
  const ev = await n1('POST', `${NS}/events`, {
    apiVersion: 'v1', kind: 'Event', metadata: { name: 'p1.1' }, involvedObject: { kind: 'Pod', namespace: 'default', name: 'p1' },
    reason: 'Started', message: 'started', type: 'Normal', source: { component: 'kubelet', host: 'n1' },
  });
  t.equal(ev.status, 201);
  const x509 = await loadX509();
  const alg = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
  const csrFor = async (cn: string) => {
    const keys = await webcrypto.subtle.generateKey(alg, true, ['sign', 'verify']);
    const req = await x509.Pkcs10CertificateRequestGenerator.create({ name: [{ O: ['system:nodes'] }, { CN: [cn] }], keys, signingAlgorithm: alg });
    return {
      apiVersion: 'certificates.k8s.io/v1', kind: 'CertificateSigningRequest', metadata: { name: `csr-${cn.replaceAll(':', '-')}` },
      spec: { request: Buffer.from(req.toString('pem')).toString('base64'), signerName: 'kubernetes.io/kube-apiserver-client-kubelet', usages: ['digital signature', 'client auth'] },
    };
  };
  const CSRS = '/apis/certificates.k8s.io/v1/certificatesigningrequests';
  t.equal((await n1('POST', CSRS, await csrFor('system:node:n1'))).status, 201);
  const other = await n1('POST', CSRS, await csrFor('system:node:n2'));
  t.equal(other.json.message, 'certificatesigningrequests.certificates.k8s.io "csr-system-node-n2" is forbidden: can only create a node CSR with CN=system:node:n1');
});

t.test('the graph follows deletes and new pods; other users get no opinion', async (t) => {
  await admin.delete(CORE('pods'), 'p1', { gracePeriodSeconds: 0 });
  await until('p1\'s secret to become unreadable', async () => (await n1('GET', `${NS}/secrets/s1`)).status === 403);
  await admin.create(CORE('pods'), podOn('p3', 'n1', 's2', 'c2', 'sa2'));
  await until('a new pod naming s2 on n1', async () => (await n1('GET', `${NS}/secrets/s2`)).status === 200);
  t.equal((await n1('GET', `${NS}/configmaps/c2`)).status, 200);
  const alice = await caller('alice', ['developers']);
  const r = await alice('GET', `${NS}/secrets/s2`);
  t.equal(r.status, 403, 'Node is the only mode: nobody else is allowed anything');
  const impostor = await caller('system:node:n1', []);
  t.equal((await impostor('GET', `${NS}/secrets/s2`)).status, 403, 'the name without the system:nodes group is not a node');
});

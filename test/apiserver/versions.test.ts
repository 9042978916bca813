/**
 * Old API versions served by conversion: policy/v1beta1 PodDisruptionBudget,
 * certificates.k8s.io/v1beta1 CertificateSigningRequest, extensions/v1beta1 workloads/ingress.
 */
import t from 'tap';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { startApiserver } from '../helpers/apiserver.js';
import { connectClient } from '../helpers/rest-client.js';
import { kubectl } from '../helpers/kubectl.js';

// Until the registry lists them, register the extensions/v1beta1 views here (a no-op replace after).

const run = promisify(execFile);
// extensions/v1beta1 is meant to be off by default (Kubernetes stopped serving it in 1.16): turn it on.
const a = await startApiserver({ args: ['--runtime-config=extensions/v1beta1=true'] });
const c = await connectClient(a);
t.teardown(async () => { c.close(); await a.stop(); });

const PDB_LABEL = 'pdb.kubernetes.io/deprecated-v1beta1-empty-selector-match';
const pdbPath = (v: string, name = ''): string => `/apis/policy/${v}/namespaces/default/poddisruptionbudgets${name ? `/${name}` : ''}`;

t.test('discovery lists old versions, v1 preferred', async (t) => {
  const policy = await c.request('GET', '/apis/policy');
  t.same(policy.json.versions.map((v: { version: string }) => v.version), ['v1', 'v1beta1']);
  t.equal(policy.json.preferredVersion.version, 'v1');
  const certs = await c.request('GET', '/apis/certificates.k8s.io');
  t.same(certs.json.versions.map((v: { version: string }) => v.version), ['v1', 'v1beta1']);
  const res = await c.request('GET', '/apis/policy/v1beta1');
  t.equal(res.status, 200);
  t.ok(res.json.resources.some((r: { name: string }) => r.name === 'poddisruptionbudgets'));
});

t.test('policy/v1beta1 PDB: empty selector means none, round trips both ways', async (t) => {
  const created = await c.request('POST', pdbPath('v1beta1'), { body: { apiVersion: 'policy/v1beta1', kind: 'PodDisruptionBudget', metadata: { name: 'none' }, spec: { minAvailable: 1, selector: {} } } });
  t.equal(created.status, 201, JSON.stringify(created.json));
  t.equal(created.json.apiVersion, 'policy/v1beta1');
  t.same(created.json.spec.selector, {});
  const v1 = await c.request('GET', pdbPath('v1', 'none'));
  t.equal(v1.json.apiVersion, 'policy/v1');
  t.same(v1.json.spec.selector, { matchExpressions: [{ key: PDB_LABEL, operator: 'Exists' }] }, 'stored as select-nothing');

  const all = await c.request('POST', pdbPath('v1'), { body: { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name: 'all' }, spec: { maxUnavailable: '50%', selector: {}, unhealthyPodEvictionPolicy: 'AlwaysAllow' } } });
  t.equal(all.status, 201, JSON.stringify(all.json));
  const old = await c.request('GET', pdbPath('v1beta1', 'all'));
  t.same(old.json.spec.selector, { matchExpressions: [{ key: PDB_LABEL, operator: 'DoesNotExist' }] }, 'v1 select-all in v1beta1 form');
  t.equal(old.json.spec.unhealthyPodEvictionPolicy, 'AlwaysAllow');
  // Writing the v1beta1 form back keeps the v1 meaning.
  const put = await c.request('PUT', pdbPath('v1beta1', 'all'), { body: old.json });
  t.equal(put.status, 200, JSON.stringify(put.json));
  t.same((await c.request('GET', pdbPath('v1', 'all'))).json.spec.selector, {});

  const labels = await c.request('POST', pdbPath('v1beta1'), { body: { metadata: { name: 'app' }, spec: { minAvailable: '30%', selector: { matchLabels: { app: 'x' } } } } });
  t.equal(labels.status, 201);
  t.same((await c.request('GET', pdbPath('v1', 'app'))).json.spec, { minAvailable: '30%', selector: { matchLabels: { app: 'x' } } });

  const patched = await c.request('PATCH', pdbPath('v1beta1', 'app'), { raw: JSON.stringify({ spec: { minAvailable: 2 } }), contentType: 'application/merge-patch+json' });
  t.equal(patched.status, 200, JSON.stringify(patched.json));
  t.equal((await c.request('GET', pdbPath('v1', 'app'))).json.spec.minAvailable, 2);

  const list = await c.request('GET', pdbPath('v1beta1'));
  t.equal(list.json.kind, 'PodDisruptionBudgetList');
  t.equal(list.json.apiVersion, 'policy/v1beta1');
  t.same(list.json.items.map((i: { metadata: { name: string } }) => i.metadata.name).sort(), ['all', 'app', 'none']);
  t.ok(list.json.items.every((i: { apiVersion?: string }) => i.apiVersion === undefined || i.apiVersion === 'policy/v1beta1'), 'no item in another version');
  const none = list.json.items.find((i: { metadata: { name: string } }) => i.metadata.name === 'none');
  t.same(none.spec.selector, {});
});

t.test('policy/v1beta1 watch converts events', async (t) => {
  const list = await c.request('GET', pdbPath('v1beta1'));
  const w = c.stream(`${pdbPath('v1beta1')}?watch=1&resourceVersion=${list.json.metadata.resourceVersion}`);
  t.teardown(() => w.close());
  await c.request('POST', pdbPath('v1'), { body: { metadata: { name: 'watched' }, spec: { minAvailable: 1, selector: {} } } });
  const line = await w.next(10_000);
  t.ok(line);
  const ev = JSON.parse(line!);
  t.equal(ev.type, 'ADDED');
  t.equal(ev.object.apiVersion, 'policy/v1beta1');
  t.equal(ev.object.metadata.name, 'watched');
  t.same(ev.object.spec.selector, { matchExpressions: [{ key: PDB_LABEL, operator: 'DoesNotExist' }] });
});

const CSR_PEM = '-----BEGIN CERTIFICATE REQUEST-----\nMIIBVzCBwQIBADAYMRYwFAYDVQQDDA1zeXN0ZW06bm9kZTphMIGfMA0GCSqGSIb3\n-----END CERTIFICATE REQUEST-----\n';

t.test('certificates.k8s.io/v1beta1 CSR: old defaults applied, read in v1', async (t) => {
  const body = { apiVersion: 'certificates.k8s.io/v1beta1', kind: 'CertificateSigningRequest', metadata: { name: 'old' }, spec: { request: Buffer.from(CSR_PEM).toString('base64') } };
  const created = await c.request('POST', '/apis/certificates.k8s.io/v1beta1/certificatesigningrequests', { body });
  t.equal(created.status, 201, JSON.stringify(created.json));
  t.equal(created.json.apiVersion, 'certificates.k8s.io/v1beta1');
  const v1 = await c.request('GET', '/apis/certificates.k8s.io/v1/certificatesigningrequests/old');
  t.equal(v1.json.spec.signerName, 'kubernetes.io/legacy-unknown');
  t.same(v1.json.spec.usages, ['digital signature', 'key encipherment']);
  // The same body in v1 is rejected: v1 requires signerName and usages.
  const strict = await c.request('POST', '/apis/certificates.k8s.io/v1/certificatesigningrequests', { body: { ...body, apiVersion: 'certificates.k8s.io/v1', metadata: { name: 'new' } } });
  t.equal(strict.status, 422);
  const list = await c.request('GET', '/apis/certificates.k8s.io/v1beta1/certificatesigningrequests');
  t.equal(list.json.apiVersion, 'certificates.k8s.io/v1beta1');
  t.ok(list.json.items.some((i: { metadata: { name: string } }) => i.metadata.name === 'old'));
});

const template = { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'c', image: 'busybox' }] } };

t.test('extensions/v1beta1 Deployment: old defaults, rollbackTo kept, read in apps/v1', async (t) => {
  const created = await c.request('POST', '/apis/extensions/v1beta1/namespaces/default/deployments', { body: { apiVersion: 'extensions/v1beta1', kind: 'Deployment', metadata: { name: 'web' }, spec: { template, rollbackTo: { revision: 3 } } } });
  t.equal(created.status, 201, JSON.stringify(created.json));
  t.equal(created.json.apiVersion, 'extensions/v1beta1');
  t.same(created.json.spec.rollbackTo, { revision: 3 });
  t.same(created.json.spec.selector, { matchLabels: { app: 'web' } });
  const v1 = await c.request('GET', '/apis/apps/v1/namespaces/default/deployments/web');
  t.equal(v1.status, 200);
  t.same(v1.json.spec.selector, { matchLabels: { app: 'web' } }, 'selector defaulted from template labels');
  t.same(v1.json.metadata.labels, { app: 'web' });
  t.equal(v1.json.spec.revisionHistoryLimit, 2147483647);
  t.equal(v1.json.spec.progressDeadlineSeconds, 2147483647);
  t.same(v1.json.spec.strategy, { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1, maxSurge: 1 } });
  t.equal(v1.json.spec.rollbackTo, undefined);
  t.equal(v1.json.metadata.annotations['deprecated.deployment.rollback.to'], '3');

  const fromApps = await c.request('POST', '/apis/apps/v1/namespaces/default/deployments', { body: { metadata: { name: 'api' }, spec: { selector: { matchLabels: { app: 'web' } }, template } } });
  t.equal(fromApps.status, 201);
  const ext = await c.request('GET', '/apis/extensions/v1beta1/namespaces/default/deployments/api');
  t.equal(ext.json.apiVersion, 'extensions/v1beta1');
  t.equal(ext.json.spec.revisionHistoryLimit, 10, 'apps/v1 defaults stay');
  const list = await c.request('GET', '/apis/extensions/v1beta1/namespaces/default/deployments');
  t.equal(list.json.kind, 'DeploymentList');
  t.same(list.json.items.map((i: { metadata: { name: string } }) => i.metadata.name).sort(), ['api', 'web']);
});

t.test('extensions/v1beta1 uses its own schema: strict decoding, strategic merge, protobuf', async (t) => {
  const strict = await c.request('POST', '/apis/extensions/v1beta1/namespaces/default/deployments?fieldValidation=Strict', { body: { metadata: { name: 'strict' }, spec: { template, bogus: 1 } } });
  t.equal(strict.status, 400);
  t.match(strict.json.message, /unknown field "spec.bogus"/);
  const smp = await c.request('PATCH', '/apis/extensions/v1beta1/namespaces/default/deployments/web', { raw: JSON.stringify({ spec: { replicas: 3, template: { spec: { containers: [{ name: 'c', image: 'nginx' }] } } } }), contentType: 'application/strategic-merge-patch+json' });
  t.equal(smp.status, 200, JSON.stringify(smp.json));
  const v1 = await c.request('GET', '/apis/apps/v1/namespaces/default/deployments/web');
  t.equal(v1.json.spec.replicas, 3);
  t.same(v1.json.spec.template.spec.containers.map((x: { name: string; image: string }) => [x.name, x.image]), [['c', 'nginx']], 'containers merged by name');
  t.equal(v1.json.metadata.annotations['deprecated.deployment.rollback.to'], '3', 'stash survives a patch');
  const pb = await c.request('GET', '/apis/extensions/v1beta1/namespaces/default/deployments/web', { accept: 'application/vnd.kubernetes.protobuf' });
  t.equal(pb.status, 200);
  t.equal(pb.headers['content-type'], 'application/vnd.kubernetes.protobuf');
  t.ok(pb.body.includes(Buffer.from('extensions/v1beta1')), 'protobuf envelope names the old version');
});

t.test('extensions/v1beta1 watch sees apps/v1 writes in the old form', async (t) => {
  const list = await c.request('GET', '/apis/extensions/v1beta1/namespaces/default/deployments');
  const w = c.stream(`/apis/extensions/v1beta1/namespaces/default/deployments?watch=1&resourceVersion=${list.json.metadata.resourceVersion}`);
  t.teardown(() => w.close());
  await c.request('POST', '/apis/apps/v1/namespaces/default/deployments', { body: { metadata: { name: 'watched', annotations: { 'deprecated.deployment.rollback.to': '5' } }, spec: { selector: { matchLabels: { app: 'web' } }, template } } });
  const ev = JSON.parse((await w.next(10_000))!);
  t.equal(ev.type, 'ADDED');
  t.equal(ev.object.apiVersion, 'extensions/v1beta1');
  t.same(ev.object.spec.rollbackTo, { revision: 5 });
  t.equal(ev.object.metadata.annotations, undefined, 'stash annotation not shown in the old version');
});

t.test('extensions/v1beta1 DaemonSet and ReplicaSet', async (t) => {
  const ds = await c.request('POST', '/apis/extensions/v1beta1/namespaces/default/daemonsets', { body: { metadata: { name: 'ds' }, spec: { template, templateGeneration: 2 } } });
  t.equal(ds.status, 201, JSON.stringify(ds.json));
  t.equal(ds.json.spec.templateGeneration, 2);
  const dsV1 = await c.request('GET', '/apis/apps/v1/namespaces/default/daemonsets/ds');
  t.equal(dsV1.json.spec.updateStrategy.type, 'OnDelete');
  t.equal(dsV1.json.metadata.annotations['deprecated.daemonset.template.generation'], '2');
  const rs = await c.request('POST', '/apis/extensions/v1beta1/namespaces/default/replicasets', { body: { metadata: { name: 'rs' }, spec: { template } } });
  t.equal(rs.status, 201, JSON.stringify(rs.json));
  t.same((await c.request('GET', '/apis/apps/v1/namespaces/default/replicasets/rs')).json.spec.selector, { matchLabels: { app: 'web' } });
});

t.test('extensions/v1beta1 Ingress and NetworkPolicy', async (t) => {
  const ing = await c.request('POST', '/apis/extensions/v1beta1/namespaces/default/ingresses', { body: {
    metadata: { name: 'ing' },
    spec: { backend: { serviceName: 'def', servicePort: 80 }, rules: [{ host: 'a.example', http: { paths: [{ path: '/x', backend: { serviceName: 'svc', servicePort: 'http' } }] } }] },
  } });
  t.equal(ing.status, 201, JSON.stringify(ing.json));
  const v1 = await c.request('GET', '/apis/networking.k8s.io/v1/namespaces/default/ingresses/ing');
  t.same(v1.json.spec.defaultBackend, { service: { name: 'def', port: { number: 80 } } });
  t.same(v1.json.spec.rules[0].http.paths[0], { path: '/x', pathType: 'ImplementationSpecific', backend: { service: { name: 'svc', port: { name: 'http' } } } });
  const back = await c.request('GET', '/apis/extensions/v1beta1/namespaces/default/ingresses/ing');
  t.same(back.json.spec.backend, { serviceName: 'def', servicePort: 80 });
  t.same(back.json.spec.rules[0].http.paths[0].backend, { serviceName: 'svc', servicePort: 'http' });

  const np = await c.request('POST', '/apis/extensions/v1beta1/namespaces/default/networkpolicies', { body: { metadata: { name: 'np' }, spec: { podSelector: {} } } });
  t.equal(np.status, 201, JSON.stringify(np.json));
  t.same((await c.request('GET', '/apis/networking.k8s.io/v1/namespaces/default/networkpolicies/np')).json.spec.policyTypes, ['Ingress']);
});

t.test('pods/eviction accepts a policy/v1beta1 Eviction', async (t) => {
  const pod = await c.request('POST', '/api/v1/namespaces/default/pods', { body: { metadata: { name: 'evict-me' }, spec: { containers: [{ name: 'c', image: 'busybox' }] } } });
  t.equal(pod.status, 201, JSON.stringify(pod.json));
  const ev = await c.request('POST', '/api/v1/namespaces/default/pods/evict-me/eviction', { body: { apiVersion: 'policy/v1beta1', kind: 'Eviction', metadata: { name: 'evict-me', namespace: 'default' }, deleteOptions: { gracePeriodSeconds: 0 } } });
  t.equal(ev.status, 201, JSON.stringify(ev.json));
  t.equal((await c.request('GET', '/api/v1/namespaces/default/pods/evict-me')).status, 404);
});

t.test('kubectl reads the old versions', async (t) => {
  const bin = kubectl(33);
  if (!bin) { t.comment('kubectl.1.33 not found'); return; }
  const env = { ...process.env, KUBECONFIG: a.coreconfigPath };
  const got = await run(bin, ['get', 'poddisruptionbudgets.v1beta1.policy', 'none', '-n', 'default', '-o', 'json'], { env });
  const obj = JSON.parse(got.stdout);
  t.equal(obj.apiVersion, 'policy/v1beta1');
  t.same(obj.spec.selector, {});
  const raw = await run(bin, ['get', '--raw', '/apis/policy/v1beta1/namespaces/default/poddisruptionbudgets/app'], { env });
  t.equal(JSON.parse(raw.stdout).apiVersion, 'policy/v1beta1');
  // With extensions/v1beta1 served, plain `deployments` still means apps (the group listed first).
  const names = await run(bin, ['get', 'deployments', '-n', 'default', '-o', 'name'], { env });
  t.match(names.stdout, /^deployment\.apps\/web$/m);
  const ext = await run(bin, ['get', 'deployments.v1beta1.extensions', 'web', '-n', 'default', '-o', 'jsonpath={.apiVersion} {.spec.rollbackTo.revision}'], { env });
  t.equal(ext.stdout, 'extensions/v1beta1 3');
  const extTable = await run(bin, ['get', 'deployments.v1beta1.extensions', '-n', 'default'], { env });
  t.match(extTable.stdout, /^NAME\s+READY\s+UP-TO-DATE\s+AVAILABLE\s+AGE$/m);
  const table = await run(bin, ['get', 'poddisruptionbudgets.v1beta1.policy', '-n', 'default'], { env });
  t.match(table.stdout, /NAME\s+MIN AVAILABLE\s+MAX UNAVAILABLE/);
  t.match(table.stdout, /\bnone\b/);
});

t.test('--runtime-config switches old versions off', async (t) => {
  const b = await startApiserver({ args: ['--runtime-config=policy/v1beta1=false,certificates.k8s.io/v1beta1=false,extensions/v1beta1=false'] });
  const bc = await connectClient(b);
  t.teardown(async () => { bc.close(); await b.stop(); });
  t.equal((await bc.request('GET', '/apis/policy/v1beta1/namespaces/default/poddisruptionbudgets')).status, 404);
  t.equal((await bc.request('GET', '/apis/policy/v1/namespaces/default/poddisruptionbudgets')).status, 200);
  t.same((await bc.request('GET', '/apis/policy')).json.versions.map((v: { version: string }) => v.version), ['v1']);
  t.equal((await bc.request('GET', '/apis/certificates.k8s.io/v1beta1/certificatesigningrequests')).status, 404);
  t.equal((await bc.request('GET', '/apis/extensions/v1beta1/namespaces/default/deployments')).status, 404, 'extensions/v1beta1 off');
  t.equal((await bc.request('GET', '/apis/extensions')).status, 404);
});

t.test('--runtime-config can serve one extensions resource', async (t) => {
  const b = await startApiserver({ args: ['--runtime-config=extensions/v1beta1=false,extensions/v1beta1/ingresses=true'] });
  const bc = await connectClient(b);
  t.teardown(async () => { bc.close(); await b.stop(); });
  t.equal((await bc.request('GET', '/apis/extensions/v1beta1/namespaces/default/ingresses')).status, 200);
  t.equal((await bc.request('GET', '/apis/extensions/v1beta1/namespaces/default/deployments')).status, 404);
});

// Needs ApiEnablement to treat extensions/v1beta1 as off by default (a lead-owned file).
t.test('extensions/v1beta1 is off by default', async (t) => {
  const b = await startApiserver();
  const bc = await connectClient(b);
  t.teardown(async () => { bc.close(); await b.stop(); });
  t.equal((await bc.request('GET', '/apis/extensions/v1beta1/namespaces/default/deployments')).status, 404);
});

/**
 * Admission plugins through the real API server: the option rules, the default set, and what
 * each plugin built here does to (or refuses of) a write.
 */
import t, { type Test } from 'tap';
import { pino } from 'pino';
import { parseApiserverArgs } from '../../src/flags/apiserver.js';
import { DEFAULT_ON_PLUGINS, selectedPlugins } from '../../src/daemons/apiserver/admission/chain.js';
import { runExpectingStartFailure, startApiserver, type StartedApiserver } from '../helpers/apiserver.js';
import { connectClient, type RestClient } from '../helpers/rest-client.js';

type Obj = Record<string, unknown>;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;

const pod = (name: string, spec: Obj = {}, meta: Obj = {}): Obj => ({
  apiVersion: 'v1', kind: 'Pod', metadata: { name, ...meta }, spec: { containers: [{ name: 'c', image: 'busybox' }], ...spec },
});

async function server(t: Test, args: string[]): Promise<{ a: StartedApiserver; c: RestClient }> {
  const a = await startApiserver({ args });
  const c = await connectClient(a);
  t.teardown(async () => { c.close(); await a.stop(); });
  return { a, c };
}

async function namespace(c: RestClient, name: string, accounts: Obj[] = []): Promise<void> {
  const r = await c.request('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name } } });
  if (r.status !== 201) throw new Error(`namespace ${name}: ${r.status}`);
  for (const sa of accounts) {
    const s = await c.request('POST', `/api/v1/namespaces/${name}/serviceaccounts`, { body: { apiVersion: 'v1', kind: 'ServiceAccount', ...sa } });
    if (s.status !== 201) throw new Error(`serviceaccount: ${s.status} ${s.body}`);
  }
}

t.test('option rules: the defaults, enable and disable, order, and a name in both', async (t) => {
  t.same(selectedPlugins({ enable: [], disable: [] }).filter((n) => !DEFAULT_ON_PLUGINS.has(n)), [], 'only default-on plugins by default');
  t.ok(selectedPlugins({ enable: [], disable: [] }).includes('ServiceAccount'));
  t.same(selectedPlugins({ enable: ['AlwaysDeny', 'AlwaysAdmit', 'NamespaceAutoProvision'], disable: ['ServiceAccount', 'LimitRanger'] }).slice(0, 3),
    ['AlwaysAdmit', 'NamespaceAutoProvision', 'NamespaceLifecycle'], 'Kubernetes order, whatever the order of the option');
  t.equal(selectedPlugins({ enable: ['AlwaysDeny'], disable: [] }).at(-1), 'AlwaysDeny', 'AlwaysDeny runs last');
  t.notOk(selectedPlugins({ enable: [], disable: ['ServiceAccount'] }).includes('ServiceAccount'));

  const { code, stderr: captured } = await runExpectingStartFailure(['--secure-port=0', '--enable-admission-plugins=AlwaysPullImages', '--disable-admission-plugins=AlwaysPullImages']);
  t.equal(code, 1, 'a plugin both enabled and disabled stops the start');
  t.match(captured, /^apiserver: --disable-admission-plugins: AlwaysPullImages also named in --enable-admission-plugins/);
  t.equal(captured.trim().split('\n').length, 1, 'one line');
  t.throws(() => parseApiserverArgs(['--enable-admission-plugins=NoSuchPlugin']), /NoSuchPlugin/, 'an unknown name is refused by the parser');
});

t.test('ServiceAccount: default account, existence, the token volume, pull secrets', async (t) => {
  const { c } = await server(t, ['--enable-admission-plugins=NamespaceLifecycle']);
  await namespace(c, 'sa', [
    { metadata: { name: 'default' } },
    { metadata: { name: 'quiet' }, automountServiceAccountToken: false },
    { metadata: { name: 'puller' }, imagePullSecrets: [{ name: 'regcred' }] },
  ]);

  const r = await c.request('POST', '/api/v1/namespaces/sa/pods', { body: pod('p1', {
    initContainers: [{ name: 'init', image: 'busybox' }],
    containers: [{ name: 'a', image: 'busybox' }, { name: 'b', image: 'busybox', volumeMounts: [{ name: 'own', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount' }] }],
    volumes: [{ name: 'own', emptyDir: {} }],
  }) });
  t.equal(r.status, 201, JSON.stringify(r.json?.message));
  const s: Any = r.json.spec;
  t.equal(s.serviceAccountName, 'default');
  t.equal(s.serviceAccount, 'default', 'the deprecated field follows');
  const vol = s.volumes.find((v: Any) => v.name.startsWith('kube-api-access-'));
  t.match(vol.name, /^kube-api-access-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
  t.same(vol.projected, {
    defaultMode: 420,
    sources: [
      { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
      { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
      { downwardAPI: { items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }] } },
    ],
  });
  const mount = { name: vol.name, readOnly: true, mountPath: '/var/run/secrets/kubernetes.io/serviceaccount' };
  t.same(s.initContainers[0].volumeMounts, [mount], 'init containers mount it');
  t.same(s.containers[0].volumeMounts, [mount]);
  t.same(s.containers[1].volumeMounts, [{ name: 'own', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount' }], 'a container with its own mount there keeps it');
  t.equal(s.volumes.length, 2);

  const off = await c.request('POST', '/api/v1/namespaces/sa/pods', { body: pod('p-off', { automountServiceAccountToken: false }) });
  t.equal(off.status, 201);
  t.equal(off.json.spec.volumes, undefined, 'pod opts out');
  t.equal(off.json.spec.containers[0].volumeMounts, undefined);
  const quiet = await c.request('POST', '/api/v1/namespaces/sa/pods', { body: pod('p-quiet', { serviceAccountName: 'quiet' }) });
  t.equal(quiet.json.spec.volumes, undefined, 'account opts out');
  const loud = await c.request('POST', '/api/v1/namespaces/sa/pods', { body: pod('p-loud', { serviceAccountName: 'quiet', automountServiceAccountToken: true }) });
  t.equal(loud.json.spec.volumes.length, 1, "the pod's choice wins over the account's");

  const pulls = await c.request('POST', '/api/v1/namespaces/sa/pods', { body: pod('p-pull', { serviceAccountName: 'puller' }) });
  t.same(pulls.json.spec.imagePullSecrets, [{ name: 'regcred' }], "the account's pull secrets");
  const ownPull = await c.request('POST', '/api/v1/namespaces/sa/pods', { body: pod('p-ownpull', { serviceAccountName: 'puller', imagePullSecrets: [{ name: 'mine' }] }) });
  t.same(ownPull.json.spec.imagePullSecrets, [{ name: 'mine' }], 'a pod with its own keeps them');

  const missing = await c.request('POST', '/api/v1/namespaces/sa/pods', { body: pod('p-missing', { serviceAccountName: 'ghost' }) });
  t.equal(missing.status, 403);
  t.equal(missing.json.reason, 'Forbidden');
  t.equal(missing.json.message, 'pods "p-missing" is forbidden: error looking up service account sa/ghost: serviceaccount "ghost" not found');
  t.equal((await c.request('GET', '/api/v1/namespaces/sa/pods/p-missing')).status, 404, 'nothing written');

  const dry = await c.request('POST', '/api/v1/namespaces/sa/pods?dryRun=All', { body: pod('p-dry') });
  t.equal(dry.status, 201);
  t.ok(dry.json.spec.volumes?.[0]?.name.startsWith('kube-api-access-'), 'a dry run shows the mutation');

  // A template is not a pod: no account and no volume in it.
  const d = await c.request('POST', '/apis/apps/v1/namespaces/sa/deployments', { body: {
    apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd' },
    spec: { selector: { matchLabels: { a: 'b' } }, template: { metadata: { labels: { a: 'b' } }, spec: { containers: [{ name: 'c', image: 'x' }] } } },
  } });
  t.equal(d.json.spec.template.spec.serviceAccountName, undefined);
  t.equal(d.json.spec.template.spec.volumes, undefined);
});

t.test('ServiceAccount: the default account is waited for briefly, then the pod is refused', async (t) => {
  const { c } = await server(t, ['--enable-admission-plugins=NamespaceLifecycle']);
  await namespace(c, 'late');
  const started = Date.now();
  const creating = c.request('POST', '/api/v1/namespaces/late/pods', { body: pod('p') });
  await new Promise((r) => setTimeout(r, 250));
  await c.request('POST', '/api/v1/namespaces/late/serviceaccounts', { body: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default' } } });
  const r = await creating;
  t.equal(r.status, 201, 'an account made a moment later is found');
  t.ok(Date.now() - started >= 250);

  await namespace(c, 'never');
  const refused = await c.request('POST', '/api/v1/namespaces/never/pods', { body: pod('p') });
  t.equal(refused.status, 403);
  t.match(refused.json.message, /error looking up service account never\/default: serviceaccount "default" not found/);
});

t.test('ServiceAccount: mountable secrets and mirror pods', async (t) => {
  const { c } = await server(t, ['--enable-admission-plugins=NamespaceLifecycle']);
  await namespace(c, 'ms', [
    { metadata: { name: 'default' } },
    { metadata: { name: 'strict', annotations: { 'kubernetes.io/enforce-mountable-secrets': 'true' } }, secrets: [{ name: 'ok' }], imagePullSecrets: [{ name: 'pull-ok' }] },
  ]);
  const volume = (secretName: string): Obj => ({ serviceAccountName: 'strict', volumes: [{ name: 's', secret: { secretName } }] });
  t.equal((await c.request('POST', '/api/v1/namespaces/ms/pods', { body: pod('allowed', volume('ok')) })).status, 201);
  const vol = await c.request('POST', '/api/v1/namespaces/ms/pods', { body: pod('vol', volume('other')) });
  t.equal(vol.status, 403);
  t.match(vol.json.message, /volume with secret.secretName="other" is not allowed because service account strict does not reference that secret/);
  const env = await c.request('POST', '/api/v1/namespaces/ms/pods', { body: pod('env', {
    serviceAccountName: 'strict', containers: [{ name: 'c', image: 'x', env: [{ name: 'E', valueFrom: { secretKeyRef: { name: 'other', key: 'k' } } }] }],
  }) });
  t.equal(env.status, 403);
  t.match(env.json.message, /container c with envVar E referencing secret.secretName="other"/);
  const pull = await c.request('POST', '/api/v1/namespaces/ms/pods', { body: pod('pull', { serviceAccountName: 'strict', imagePullSecrets: [{ name: 'nope' }] }) });
  t.equal(pull.status, 403);
  t.match(pull.json.message, /imagePullSecrets\[0\].name="nope" is not allowed/);

  const mirrorMeta = { annotations: { 'kubernetes.io/config.mirror': 'abc' } };
  const mirror = await c.request('POST', '/api/v1/namespaces/ms/pods', { body: pod('mirror', {}, mirrorMeta) });
  t.equal(mirror.status, 201);
  t.equal(mirror.json.spec.serviceAccountName, undefined, 'a mirror pod is left without an account');
  t.equal(mirror.json.spec.volumes, undefined);
  const mirrorSa = await c.request('POST', '/api/v1/namespaces/ms/pods', { body: pod('mirror-sa', { serviceAccountName: 'default' }, mirrorMeta) });
  t.equal(mirrorSa.status, 403);
  t.match(mirrorSa.json.message, /a mirror pod may not reference service accounts/);
  const mirrorSecret = await c.request('POST', '/api/v1/namespaces/ms/pods', { body: pod('mirror-secret', { volumes: [{ name: 's', secret: { secretName: 'ok' } }] }, mirrorMeta) });
  t.equal(mirrorSecret.status, 403);
  t.match(mirrorSecret.json.message, /a mirror pod may not reference secrets/);
});

t.test('Priority and DefaultTolerationSeconds', async (t) => {
  const { c } = await server(t, []);
  const critical = await c.request('POST', '/api/v1/namespaces/default/pods', { body: pod('crit', { priorityClassName: 'system-node-critical' }) });
  t.equal(critical.status, 201);
  t.equal(critical.json.spec.priority, 2000001000);
  t.equal(critical.json.spec.preemptionPolicy, 'PreemptLowerPriority');
  t.equal((await c.request('POST', '/api/v1/namespaces/default/pods', { body: pod('cluster', { priorityClassName: 'system-cluster-critical' }) })).json.spec.priority, 2000000000);
  const unknown = await c.request('POST', '/api/v1/namespaces/default/pods', { body: pod('unknown', { priorityClassName: 'gold' }) });
  t.equal(unknown.status, 403);
  t.equal(unknown.json.message, 'pods "unknown" is forbidden: no PriorityClass with name gold was found');
  const forged = await c.request('POST', '/api/v1/namespaces/default/pods', { body: pod('forged', { priority: 7 }) });
  t.equal(forged.status, 403);
  t.match(forged.json.message, /the integer value of priority \(7\) must not be provided in pod spec; priority admission controller computed 0/);
  const same = await c.request('POST', '/api/v1/namespaces/default/pods', { body: pod('same', { priority: 0 }) });
  t.equal(same.status, 201, 'the value the class gives is accepted');

  const p = await c.request('POST', '/api/v1/namespaces/default/pods', { body: pod('tol', { tolerations: [{ key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 10 }] }) });
  t.same(p.json.spec.tolerations, [
    { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 10 },
    { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
  ], 'only the missing toleration is added');

  const { c: bare } = await server(t, ['--disable-admission-plugins=ServiceAccount,Priority,DefaultTolerationSeconds']);
  const plain = await bare.request('POST', '/api/v1/namespaces/default/pods', { body: pod('plain') });
  t.equal(plain.status, 201);
  t.equal(plain.json.spec.tolerations, undefined, 'no default tolerations without the plugin');
  t.equal(plain.json.spec.priority, undefined, 'no priority without the plugin');
  t.equal((await bare.request('POST', '/api/v1/namespaces/default/pods', { body: pod('gold', { priorityClassName: 'gold' }) })).status, 201);
});

t.test('AlwaysPullImages and AlwaysDeny', async (t) => {
  const { c } = await server(t, ['--enable-admission-plugins=AlwaysPullImages', '--disable-admission-plugins=ServiceAccount']);
  const r = await c.request('POST', '/api/v1/namespaces/default/pods', { body: pod('pull', {
    initContainers: [{ name: 'i', image: 'busybox:1.36', imagePullPolicy: 'IfNotPresent' }],
    containers: [{ name: 'c', image: 'busybox:1.36', imagePullPolicy: 'Never' }],
  }) });
  t.equal(r.status, 201);
  t.equal(r.json.spec.initContainers[0].imagePullPolicy, 'Always');
  t.equal(r.json.spec.containers[0].imagePullPolicy, 'Always');
  const patched = await c.request('PATCH', '/api/v1/namespaces/default/pods/pull', { raw: '{"spec":{"containers":[{"name":"c","image":"busybox:1.37"}]}}', contentType: 'application/strategic-merge-patch+json' });
  t.equal(patched.status, 200);
  t.equal(patched.json.spec.containers[0].imagePullPolicy, 'Always', 'updates keep Always');

  const { c: deny } = await server(t, ['--enable-admission-plugins=AlwaysDeny']);
  const cm = await deny.request('POST', '/api/v1/namespaces/default/configmaps', { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } } });
  t.equal(cm.status, 403);
  t.equal(cm.json.message, 'configmaps "x" is forbidden: admission control is denying all modifications');
  t.equal((await deny.request('GET', '/api/v1/namespaces/default/configmaps/x')).status, 404, 'nothing written');
  const del = await deny.request('DELETE', '/api/v1/namespaces/default/services/kubernetes');
  t.equal(del.status, 403, 'deletes are refused too');
  const upd = await deny.request('PATCH', '/api/v1/namespaces/default', { raw: '{"metadata":{"labels":{"a":"b"}}}', contentType: 'application/merge-patch+json' });
  t.equal(upd.status, 403, 'and updates');
  t.equal((await deny.request('GET', '/api/v1/namespaces/default')).status, 200, 'reads are not admission');
});

t.test('NamespaceLifecycle, NamespaceExists, NamespaceAutoProvision', async (t) => {
  const cm = (name: string): Obj => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name } });
  const { c } = await server(t, []);
  const r = await c.request('POST', '/api/v1/namespaces/nowhere/configmaps', { body: cm('a') });
  t.equal(r.status, 404, 'NamespaceLifecycle (default): a missing namespace');
  t.equal(r.json.message, 'namespaces "nowhere" not found');
  t.equal((await c.request('DELETE', '/api/v1/namespaces/kube-system')).status, 403, 'system namespaces stay');

  const { c: open } = await server(t, ['--disable-admission-plugins=NamespaceLifecycle,ServiceAccount']);
  t.equal((await open.request('POST', '/api/v1/namespaces/nowhere/configmaps', { body: cm('a') })).status, 201, 'without it, as in Kubernetes, the object is stored');
  t.equal((await open.request('DELETE', '/api/v1/namespaces/kube-public')).status, 200, 'and system namespaces can be deleted');

  const { c: exists } = await server(t, ['--enable-admission-plugins=NamespaceExists', '--disable-admission-plugins=NamespaceLifecycle,ServiceAccount']);
  t.equal((await exists.request('POST', '/api/v1/namespaces/nowhere/configmaps', { body: cm('a') })).status, 404, 'NamespaceExists');

  const { c: auto } = await server(t, ['--enable-admission-plugins=NamespaceAutoProvision', '--disable-admission-plugins=ServiceAccount']);
  const dry = await auto.request('POST', '/api/v1/namespaces/dry/configmaps?dryRun=All', { body: cm('a') });
  t.equal(dry.status, 404, 'a dry run provisions nothing (and NamespaceLifecycle then finds no namespace)');
  t.equal((await auto.request('GET', '/api/v1/namespaces/dry')).status, 404);
  t.equal((await auto.request('POST', '/api/v1/namespaces/fresh/configmaps', { body: cm('a') })).status, 201);
  const ns = await auto.request('GET', '/api/v1/namespaces/fresh');
  t.equal(ns.status, 200, 'the namespace was made');
  t.equal(ns.json.status.phase, 'Active');
  t.equal((await auto.request('POST', '/api/v1/namespaces/fresh/configmaps', { body: cm('b') })).status, 201, 'and is reused');
});

t.test('LimitRanger: defaults, the annotation, bounds on containers, pods and claims', async (t) => {
  const { c } = await server(t, []);
  await namespace(c, 'lr');
  const lr = await c.request('POST', '/api/v1/namespaces/lr/limitranges', { body: { apiVersion: 'v1', kind: 'LimitRange', metadata: { name: 'l' }, spec: { limits: [
    { type: 'Container', max: { cpu: '1', memory: '1Gi' }, min: { cpu: '50m' }, defaultRequest: { cpu: '100m' }, maxLimitRequestRatio: { cpu: '10' } },
    { type: 'Pod', max: { cpu: '1500m' } },
    { type: 'PersistentVolumeClaim', min: { storage: '1Gi' }, max: { storage: '10Gi' } },
  ] } } });
  t.equal(lr.status, 201);
  t.same(lr.json.spec.limits[0].default, { cpu: '1', memory: '1Gi' }, 'the default limit falls back to max');
  t.same(lr.json.spec.limits[0].defaultRequest, { cpu: '100m', memory: '1Gi' }, 'the default request to the default limit');

  const p = await c.request('POST', '/api/v1/namespaces/lr/pods', { body: pod('p', {
    initContainers: [{ name: 'i', image: 'x', resources: { requests: { cpu: '300m' } } }],
    containers: [{ name: 'a', image: 'x' }],
  }) });
  t.equal(p.status, 201, JSON.stringify(p.json?.message));
  t.same(p.json.spec.containers[0].resources, { requests: { cpu: '100m', memory: '1Gi' }, limits: { cpu: '1', memory: '1Gi' } });
  t.same(p.json.spec.initContainers[0].resources, { requests: { cpu: '300m', memory: '1Gi' }, limits: { cpu: '1', memory: '1Gi' } });
  t.equal(p.json.metadata.annotations['kubernetes.io/limit-ranger'],
    'LimitRanger plugin set: cpu, memory request for container a; cpu, memory limit for container a; memory request for init container i; cpu, memory limit for init container i');
  t.equal(p.json.status.qosClass, 'Burstable');

  const big = await c.request('POST', '/api/v1/namespaces/lr/pods', { body: pod('big', { containers: [{ name: 'a', image: 'x', resources: { limits: { cpu: '2' }, requests: { cpu: '20m' } } }] }) });
  t.equal(big.status, 403);
  t.equal(big.json.message, 'pods "big" is forbidden: [minimum cpu usage per Container is 50m, but request is 20m, maximum cpu usage per Container is 1, but limit is 2, cpu max limit to request ratio per Container is 10, but provided ratio is 100.000000, maximum cpu usage per Pod is 1500m, but limit is 2]');
  t.equal((await c.request('GET', '/api/v1/namespaces/lr/pods/big')).status, 404, 'nothing written');

  const sum = await c.request('POST', '/api/v1/namespaces/lr/pods', { body: pod('sum', { containers: [
    { name: 'a', image: 'x', resources: { requests: { cpu: '800m' }, limits: { cpu: '800m' } } },
    { name: 'b', image: 'x', resources: { requests: { cpu: '800m' }, limits: { cpu: '800m' } } },
  ] }) });
  t.equal(sum.status, 403);
  t.equal(sum.json.message, 'pods "sum" is forbidden: maximum cpu usage per Pod is 1500m, but limit is 1600m');

  const claim = (name: string, storage: string): Obj => ({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage } } } });
  t.equal((await c.request('POST', '/api/v1/namespaces/lr/persistentvolumeclaims', { body: claim('ok', '5Gi') })).status, 201);
  const small = await c.request('POST', '/api/v1/namespaces/lr/persistentvolumeclaims', { body: claim('small', '500Mi') });
  t.equal(small.status, 403);
  t.equal(small.json.message, 'persistentvolumeclaims "small" is forbidden: minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 500Mi');

  const tmpl = await c.request('POST', '/apis/apps/v1/namespaces/lr/deployments', { body: {
    apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd' },
    spec: { selector: { matchLabels: { a: 'b' } }, template: { metadata: { labels: { a: 'b' } }, spec: { containers: [{ name: 'c', image: 'x', resources: { limits: { cpu: '5' } } }] } } },
  } });
  t.equal(tmpl.status, 201, 'templates are not checked');
  t.same(tmpl.json.spec.template.spec.containers[0].resources, { limits: { cpu: '5' } }, 'nor get requests from limits (pods only)');
});

t.test('a pod that limits without requesting requests its limits', async (t) => {
  const { c } = await server(t, []);
  const r = await c.request('POST', '/api/v1/namespaces/default/pods', { body: pod('g', { containers: [{ name: 'a', image: 'x', resources: { limits: { cpu: '200m', memory: '512Mi' }, requests: { cpu: '100m' } } }] }) });
  t.same(r.json.spec.containers[0].resources, { limits: { cpu: '200m', memory: '512Mi' }, requests: { cpu: '100m', memory: '512Mi' } });
});

t.test('DefaultStorageClass and PersistentVolumeClaimResize', async (t) => {
  const { c } = await server(t, []);
  const claim = (name: string, extra: Obj = {}, storage = '1Gi'): Obj => ({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage } }, ...extra } });
  const pvcs = '/api/v1/namespaces/default/persistentvolumeclaims';
  t.equal((await c.request('POST', pvcs, { body: claim('none') })).json.spec.storageClassName, undefined, 'no default class: no class');
  const sc = (name: string, extra: Obj = {}, isDefault = true): Obj => ({ apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', provisioner: 'example.com/p',
    metadata: { name, ...(isDefault ? { annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' } } : {}) }, ...extra });
  t.equal((await c.request('POST', '/apis/storage.k8s.io/v1/storageclasses', { body: sc('old') })).status, 201);
  await new Promise((r) => setTimeout(r, 1100)); // creationTimestamp has one-second resolution
  t.equal((await c.request('POST', '/apis/storage.k8s.io/v1/storageclasses', { body: sc('new', { allowVolumeExpansion: true }) })).status, 201);
  t.equal((await c.request('POST', '/apis/storage.k8s.io/v1/storageclasses', { body: sc('plain', {}, false) })).status, 201);
  t.equal((await c.request('POST', pvcs, { body: claim('auto') })).json.spec.storageClassName, 'new', 'the newest default class');
  t.equal((await c.request('POST', pvcs, { body: claim('empty', { storageClassName: '' }) })).json.spec.storageClassName, '', '"" stays classless');
  t.equal((await c.request('POST', pvcs, { body: claim('named', { storageClassName: 'plain' }) })).json.spec.storageClassName, 'plain');

  const grow = (name: string): Promise<Any> => c.request('PATCH', `${pvcs}/${name}`, { raw: '{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}', contentType: 'application/merge-patch+json' });
  const unbound = await grow('auto');
  t.equal(unbound.status, 403);
  t.equal(unbound.json.message, 'persistentvolumeclaims "auto" is forbidden: only bound persistent volume claims can be expanded');
  for (const name of ['auto', 'named']) {
    const b = await c.request('PATCH', `${pvcs}/${name}/status`, { raw: '{"status":{"phase":"Bound"}}', contentType: 'application/merge-patch+json' });
    t.equal(b.status, 200);
  }
  const grown = await grow('auto');
  t.equal(grown.status, 200, 'bound, and its class allows expansion');
  t.equal(grown.json.spec.resources.requests.storage, '2Gi');
  const fixed = await grow('named');
  t.equal(fixed.status, 403);
  t.match(fixed.json.message, /the storageclass that provisions the pvc must support resize/);
  const label = await c.request('PATCH', `${pvcs}/named`, { raw: '{"metadata":{"labels":{"a":"b"}}}', contentType: 'application/merge-patch+json' });
  t.equal(label.status, 200, 'other updates are not its business');
});

t.test('ResourceQuota: refuses beyond hard, charges used, needs a status, asks pods to specify', async (t) => {
  const { c } = await server(t, []);
  await namespace(c, 'rq');
  const quota = async (name: string, hard: Obj, extra: Obj = {}, withStatus = true): Promise<void> => {
    const r = await c.request('POST', '/api/v1/namespaces/rq/resourcequotas', { body: { apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name }, spec: { hard, ...extra } } });
    t.equal(r.status, 201);
    if (!withStatus) return;
    // What the resourcequota controller would write (none runs here).
    const used = Object.fromEntries(Object.keys(hard).map((k) => [k, '0']));
    const s = await c.request('PUT', `/api/v1/namespaces/rq/resourcequotas/${name}/status`, { body: { ...r.json, status: { hard, used } } });
    t.equal(s.status, 200);
  };
  const used = async (name: string): Promise<Any> => (await c.request('GET', `/api/v1/namespaces/rq/resourcequotas/${name}`)).json.status.used;
  const cm = (name: string): Obj => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name } });

  await quota('objects', { configmaps: '5', 'count/secrets': '1' });
  const results = await Promise.all(Array.from({ length: 10 }, (_, i) => c.request('POST', '/api/v1/namespaces/rq/configmaps', { body: cm(`cm-${i}`) })));
  t.equal(results.filter((r) => r.status === 201).length, 5, 'ten at once against five: exactly five are stored');
  const refused = results.find((r) => r.status === 403);
  t.equal(refused?.json.message.replace(/"cm-\d"/, '"cm-N"'), 'configmaps "cm-N" is forbidden: exceeded quota: objects, requested: configmaps=1, used: configmaps=5, limited: configmaps=5');
  t.same(await used('objects'), { configmaps: '5', 'count/secrets': '0' });
  t.equal((await c.request('POST', '/api/v1/namespaces/rq/secrets?dryRun=All', { body: { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's0' } } })).status, 201);
  t.same(await used('objects'), { configmaps: '5', 'count/secrets': '0' }, 'a dry run charges nothing');
  t.equal((await c.request('POST', '/api/v1/namespaces/rq/secrets', { body: { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's1' } } })).status, 201);
  t.equal((await c.request('POST', '/api/v1/namespaces/rq/secrets', { body: { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's2' } } })).status, 403, 'count/secrets');

  await quota('compute', { pods: '2', 'requests.cpu': '1', 'limits.memory': '1Gi' });
  const loose = await c.request('POST', '/api/v1/namespaces/rq/pods', { body: pod('loose') });
  t.equal(loose.status, 403);
  t.equal(loose.json.message, 'pods "loose" is forbidden: failed quota: compute: must specify limits.memory for: c; requests.cpu for: c');
  const sized = (name: string, cpu: string): Obj => pod(name, { containers: [{ name: 'c', image: 'x', resources: { requests: { cpu }, limits: { memory: '256Mi' } } }] });
  t.equal((await c.request('POST', '/api/v1/namespaces/rq/pods', { body: sized('a', '600m') })).status, 201);
  t.same(await used('compute'), { pods: '1', 'requests.cpu': '600m', 'limits.memory': '256Mi' });
  const cpu = await c.request('POST', '/api/v1/namespaces/rq/pods', { body: sized('b', '500m') });
  t.equal(cpu.status, 403);
  t.equal(cpu.json.message, 'pods "b" is forbidden: exceeded quota: compute, requested: requests.cpu=500m, used: requests.cpu=600m, limited: requests.cpu=1');
  t.equal((await c.request('POST', '/api/v1/namespaces/rq/pods', { body: sized('b', '400m') })).status, 201);
  const third = await c.request('POST', '/api/v1/namespaces/rq/pods', { body: sized('c', '0') });
  t.equal(third.status, 403);
  t.match(third.json.message, /exceeded quota: compute, requested: pods=1, used: pods=2, limited: pods=2/);

  await quota('fresh', { services: '1' }, {}, false);
  const unknown = await c.request('POST', '/api/v1/namespaces/rq/services', { body: { apiVersion: 'v1', kind: 'Service', metadata: { name: 's' }, spec: { ports: [{ port: 80 }] } } });
  t.equal(unknown.status, 403);
  t.equal(unknown.json.message, 'services "s" is forbidden: status unknown for quota: fresh, resources: services');
});

t.test('ResourceQuota: scopes, and growth on update', async (t) => {
  const { c } = await server(t, []);
  await namespace(c, 'rs');
  const quota = async (name: string, hard: Obj, extra: Obj = {}): Promise<void> => {
    const r = await c.request('POST', '/api/v1/namespaces/rs/resourcequotas', { body: { apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name }, spec: { hard, ...extra } } });
    await c.request('PUT', `/api/v1/namespaces/rs/resourcequotas/${name}/status`, { body: { ...r.json, status: { hard, used: Object.fromEntries(Object.keys(hard).map((k) => [k, '0'])) } } });
  };
  await quota('besteffort', { pods: '1' }, { scopes: ['BestEffort'] });
  t.equal((await c.request('POST', '/api/v1/namespaces/rs/pods', { body: pod('be1') })).status, 201);
  t.equal((await c.request('POST', '/api/v1/namespaces/rs/pods', { body: pod('be2') })).status, 403, 'a second BestEffort pod');
  const burstable = pod('bu', { containers: [{ name: 'c', image: 'x', resources: { requests: { cpu: '10m' } } }] });
  t.equal((await c.request('POST', '/api/v1/namespaces/rs/pods', { body: burstable })).status, 201, 'a pod out of scope is not counted');
  t.equal((await c.request('POST', '/api/v1/namespaces/rs/configmaps', { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } } })).status, 201);

  await quota('ports', { 'services.nodeports': '1' });
  const svc = await c.request('POST', '/api/v1/namespaces/rs/services', { body: { apiVersion: 'v1', kind: 'Service', metadata: { name: 's' }, spec: { ports: [{ port: 80, name: 'a' }, { port: 81, name: 'b' }] } } });
  t.equal(svc.status, 201, 'a ClusterIP service uses no node port');
  const np = await c.request('PATCH', '/api/v1/namespaces/rs/services/s', { raw: '{"spec":{"type":"NodePort"}}', contentType: 'application/merge-patch+json' });
  t.equal(np.status, 403, 'turning it into a NodePort service with two ports exceeds one');
  t.match(np.json.message, /exceeded quota: ports, requested: services.nodeports=2, used: services.nodeports=0, limited: services.nodeports=1/);
});

t.test('StorageObjectInUseProtection: claims and volumes get their protection finalizers', async (t) => {
  const { c } = await server(t, ['--disable-admission-plugins=ServiceAccount']);
  const pvc = await c.request('POST', '/api/v1/namespaces/default/persistentvolumeclaims', { body: {
    apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'c', finalizers: ['example.com/keep'] }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
  } });
  t.equal(pvc.status, 201);
  t.same(pvc.json.metadata.finalizers, ['example.com/keep', 'kubernetes.io/pvc-protection']);
  const pv = await c.request('POST', '/api/v1/persistentvolumes', { body: {
    apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name: 'v' }, spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], hostPath: { path: '/tmp/v' } },
  } });
  t.equal(pv.status, 201);
  t.same(pv.json.metadata.finalizers, ['kubernetes.io/pv-protection']);
  t.equal((await c.request('DELETE', '/api/v1/persistentvolumes/v')).status, 200);
  const marked = await c.request('GET', '/api/v1/persistentvolumes/v');
  t.equal(marked.status, 200, 'a delete only marks it until the pv-protection controller lets it go');
  t.ok(marked.json.metadata.deletionTimestamp);
});

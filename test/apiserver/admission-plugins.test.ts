/**
 * The admission plugins of issue 30 through a real API server, each allowed and refused with
 * Kubernetes' messages: SecurityContextDeny, LimitPodHardAntiAffinityTopology,
 * ExtendedResourceToleration, PodNodeSelector, PodTolerationRestriction, EventRateLimit,
 * DenyEscalatingExec / DenyExecOnPrivileged (CONNECT on pods/exec and pods/attach) and
 * ImagePolicyWebhook (against a local webhook that can fail); --admission-control-config-file
 * (inline and `path:` configurations) and its errors; the names Kubernetes removed.
 */
import { createServer, type IncomingMessage } from 'node:http';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import t, { type Test } from 'tap';
import { runExpectingStartFailure, startApiserver, type StartedApiserver } from '../helpers/apiserver.js';
import { connectClient, type RestClient } from '../helpers/rest-client.js';

type Obj = Record<string, unknown>;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;

const dir = await mkdtemp(join(tmpdir(), 'admission-plugins-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));

// A local ImagePolicyWebhook backend: denies images containing "evil", fails with 500 while `failing`.
const reviews: Any[] = [];
let failing = false;
const webhook = createServer((req: IncomingMessage, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (d: Buffer) => chunks.push(d));
  req.on('end', () => {
    if (failing) { res.writeHead(500); res.end('backend down'); return; }
    const review = JSON.parse(Buffer.concat(chunks).toString());
    reviews.push(review);
    const bad = review.spec.containers.filter((c: Any) => c.image.includes('evil')).map((c: Any) => c.image);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ apiVersion: 'imagepolicy.k8s.io/v1alpha1', kind: 'ImageReview', status: bad.length ? { allowed: false, reason: `${bad.join(', ')} not trusted` } : { allowed: true } }));
  });
});
await new Promise<void>((r) => webhook.listen(0, '127.0.0.1', r));
t.teardown(() => { webhook.close(); webhook.closeAllConnections(); });
const webhookKubeconfig = join(dir, 'imagepolicy.kubeconfig');
await writeFile(webhookKubeconfig, [
  'apiVersion: v1', 'kind: Config', 'current-context: c',
  'clusters:', '- name: w', '  cluster:', `    server: http://127.0.0.1:${(webhook.address() as { port: number }).port}/review`,
  'users:', '- name: u', '  user: {}',
  'contexts:', '- name: c', '  context: {cluster: w, user: u}',
].join('\n'));

/** Writes an AdmissionConfiguration (YAML) with these plugin entries; returns its path. */
async function admissionConfig(name: string, plugins: Obj[], apiVersion = 'apiserver.config.k8s.io/v1'): Promise<string> {
  const file = join(dir, name);
  await writeFile(file, JSON.stringify({ apiVersion, kind: 'AdmissionConfiguration', plugins }));
  return file;
}

const pod = (name: string, spec: Obj = {}, meta: Obj = {}): Obj => ({
  apiVersion: 'v1', kind: 'Pod', metadata: { name, ...meta }, spec: { containers: [{ name: 'c', image: 'busybox' }], ...spec },
});

async function namespace(c: RestClient, name: string, annotations: Record<string, string> = {}): Promise<void> {
  const r = await c.request('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name, annotations } } });
  if (r.status !== 201) throw new Error(`namespace ${name}: ${r.status} ${r.body}`);
}

async function server(t: Test, plugins: string, configFile: string): Promise<{ a: StartedApiserver; c: RestClient }> {
  const a = await startApiserver({ args: [`--enable-admission-plugins=${plugins}`, '--disable-admission-plugins=ServiceAccount', `--admission-control-config-file=${configFile}`, '--allow-privileged=true'] });
  const c = await connectClient(a);
  t.teardown(async () => { c.close(); await a.stop(); });
  return { a, c };
}

// The AdmissionConfiguration of the main server: inline and `path:` plugin configurations.
await writeFile(join(dir, 'eventratelimit.yaml'), [
  'apiVersion: eventratelimit.admission.k8s.io/v1alpha1', 'kind: Configuration', 'limits:',
  '- type: Namespace', '  qps: 1', '  burst: 3', '  cacheSize: 100',
].join('\n'));
const mainConfig = await admissionConfig('admission.yaml', [
  { name: 'EventRateLimit', path: 'eventratelimit.yaml' },
  { name: 'PodNodeSelector', configuration: { podNodeSelectorPluginConfig: { clusterDefaultNodeSelector: 'tier=general', 'pns-white': 'zone=a' } } },
  { name: 'PodTolerationRestriction', configuration: {
    apiVersion: 'podtolerationrestriction.admission.k8s.io/v1alpha1', kind: 'Configuration',
    default: [{ key: 'cluster-default', operator: 'Exists', effect: 'NoSchedule' }],
  } },
  { name: 'ImagePolicyWebhook', configuration: { imagePolicy: { kubeConfigFile: webhookKubeconfig, allowTTL: 1, denyTTL: 1, retryBackoff: 1, defaultAllow: true } } },
]);

t.test('the plugins of one server', async (t) => {
  const { a, c } = await server(t, 'SecurityContextDeny,LimitPodHardAntiAffinityTopology,ExtendedResourceToleration,PodNodeSelector,PodTolerationRestriction,EventRateLimit,DenyEscalatingExec,ImagePolicyWebhook', mainConfig);

  t.test('SecurityContextDeny: each refused field, and a pod without them', async (t) => {
    await namespace(c, 'scd');
    const cases: Array<[Obj, string]> = [
      [{ securityContext: { supplementalGroups: [5] } }, 'pod.Spec.SecurityContext.SupplementalGroups is forbidden'],
      [{ securityContext: { seLinuxOptions: { level: 's0' } } }, 'pod.Spec.SecurityContext.SELinuxOptions is forbidden'],
      [{ securityContext: { runAsUser: 1000 } }, 'pod.Spec.SecurityContext.RunAsUser is forbidden'],
      [{ securityContext: { fsGroup: 2000 } }, 'pod.Spec.SecurityContext.FSGroup is forbidden'],
      [{ containers: [{ name: 'c', image: 'busybox', securityContext: { runAsUser: 1 } }] }, 'SecurityContext.RunAsUser is forbidden'],
      [{ initContainers: [{ name: 'i', image: 'busybox', securityContext: { seLinuxOptions: { level: 's0' } } }] }, 'SecurityContext.SELinuxOptions is forbidden'],
    ];
    for (const [spec, why] of cases) {
      const r = await c.request('POST', '/api/v1/namespaces/scd/pods', { body: pod('p', spec) });
      t.equal(r.status, 403, why);
      t.equal(r.json?.message, `pods "p" is forbidden: ${why}`);
      t.equal(r.json?.reason, 'Forbidden');
    }
    const ok = await c.request('POST', '/api/v1/namespaces/scd/pods', { body: pod('p', { securityContext: { runAsNonRoot: true } }) });
    t.equal(ok.status, 201, 'fields outside the list are allowed');
  });

  t.test('LimitPodHardAntiAffinityTopology: only the hostname key for required anti-affinity', async (t) => {
    await namespace(c, 'aff');
    const term = (topologyKey: string): Obj => ({ affinity: { podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [{ labelSelector: { matchLabels: { app: 'x' } }, topologyKey }] } } });
    const bad = await c.request('POST', '/api/v1/namespaces/aff/pods', { body: pod('zone', term('topology.kubernetes.io/zone')) });
    t.equal(bad.status, 403);
    t.equal(bad.json?.message, 'pods "zone" is forbidden: affinity.PodAntiAffinity.RequiredDuringScheduling has TopologyKey topology.kubernetes.io/zone but only key kubernetes.io/hostname is allowed');
    const good = await c.request('POST', '/api/v1/namespaces/aff/pods', { body: pod('host', term('kubernetes.io/hostname')) });
    t.equal(good.status, 201);
  });

  t.test('ExtendedResourceToleration: extended resources get their NoSchedule toleration', async (t) => {
    await namespace(c, 'ext');
    const r = await c.request('POST', '/api/v1/namespaces/ext/pods', { body: pod('gpu', {
      containers: [{ name: 'c', image: 'busybox', resources: { requests: { 'example.com/gpu': '1', cpu: '1' }, limits: { 'example.com/gpu': '1', 'example.com/fpga': '1' } } }],
      initContainers: [{ name: 'i', image: 'busybox', resources: { requests: { 'acme.io/dongle': '1' } } }],
    }) });
    t.equal(r.status, 201, r.json?.message);
    // Others (DefaultTolerationSeconds, PodTolerationRestriction on this server) add their own too.
    const tol = (r.json.spec.tolerations as Any[]).filter((x) => /^(example\.com|acme\.io)\//.test(x.key));
    t.same(tol, [
      { key: 'acme.io/dongle', operator: 'Exists', effect: 'NoSchedule' },
      { key: 'example.com/fpga', operator: 'Exists', effect: 'NoSchedule' },
      { key: 'example.com/gpu', operator: 'Exists', effect: 'NoSchedule' },
    ], 'one per extended resource requested, sorted; native resources get none');
    const plain = await c.request('POST', '/api/v1/namespaces/ext/pods', { body: pod('plain') });
    t.notOk((plain.json.spec.tolerations ?? []).some((x: Any) => x.key?.startsWith('example.com')), 'a pod without them gets none');
  });

  t.test('PodNodeSelector: namespace annotation, cluster default, conflicts, whitelist', async (t) => {
    await namespace(c, 'pns', { 'scheduler.alpha.kubernetes.io/node-selector': 'env=prod,disk=ssd' });
    await namespace(c, 'pns-default');
    await namespace(c, 'pns-white', { 'scheduler.alpha.kubernetes.io/node-selector': '' });
    const merged = await c.request('POST', '/api/v1/namespaces/pns/pods', { body: pod('m', { nodeSelector: { gpu: 'yes' } }) });
    t.equal(merged.status, 201, merged.json?.message);
    t.same(merged.json.spec.nodeSelector, { env: 'prod', disk: 'ssd', gpu: 'yes' }, 'the namespace selector is merged in');
    const dflt = await c.request('POST', '/api/v1/namespaces/pns-default/pods', { body: pod('d') });
    t.same(dflt.json.spec.nodeSelector, { tier: 'general' }, 'clusterDefaultNodeSelector without an annotation');
    const conflict = await c.request('POST', '/api/v1/namespaces/pns/pods', { body: pod('x', { nodeSelector: { env: 'dev' } }) });
    t.equal(conflict.status, 403);
    t.equal(conflict.json?.message, 'pods "x" is forbidden: pod node label selector conflicts with its namespace node label selector');
    const outside = await c.request('POST', '/api/v1/namespaces/pns-white/pods', { body: pod('w', { nodeSelector: { zone: 'b' } }) });
    t.equal(outside.status, 403);
    t.equal(outside.json?.message, 'pods "w" is forbidden: pod node label selector labels conflict with its namespace whitelist');
    const inside = await c.request('POST', '/api/v1/namespaces/pns-white/pods', { body: pod('w', { nodeSelector: { zone: 'a' } }) });
    t.equal(inside.status, 201, 'a selector within the whitelist');
  });

  t.test('PodTolerationRestriction: defaults merged, conflicts and whitelist refused', async (t) => {
    const tol = (key: string, value?: string): Obj => ({ key, operator: value === undefined ? 'Exists' : 'Equal', ...(value !== undefined ? { value } : {}), effect: 'NoSchedule' });
    await namespace(c, 'ptr', {
      'scheduler.alpha.kubernetes.io/defaultTolerations': JSON.stringify([tol('team', 'a')]),
      // DefaultTolerationSeconds' NoExecute tolerations must be whitelisted too, as in Kubernetes.
      'scheduler.alpha.kubernetes.io/tolerationsWhitelist': JSON.stringify([tol('team'), tol('dedicated'), { operator: 'Exists', effect: 'NoExecute' }]),
    });
    await namespace(c, 'ptr-cluster');
    const ok = await c.request('POST', '/api/v1/namespaces/ptr/pods', { body: pod('ok', { tolerations: [tol('dedicated', 'x')] }) });
    t.equal(ok.status, 201, ok.json?.message);
    t.same(ok.json.spec.tolerations.filter((x: Any) => x.effect === 'NoSchedule'), [tol('team', 'a'), tol('dedicated', 'x')], 'namespace defaults first, then the pod\'s own (BestEffort: no memory-pressure one)');
    const clusterDefault = await c.request('POST', '/api/v1/namespaces/ptr-cluster/pods', { body: pod('cd', { containers: [{ name: 'c', image: 'busybox', resources: { requests: { cpu: '10m' } } }] }) });
    t.same(clusterDefault.json.spec.tolerations.filter((x: Any) => x.effect === 'NoSchedule').map((x: Any) => x.key), ['cluster-default', 'node.kubernetes.io/memory-pressure'],
      'the configured default without annotation; a Burstable pod also tolerates memory pressure');
    const conflict = await c.request('POST', '/api/v1/namespaces/ptr/pods', { body: pod('c', { tolerations: [tol('team', 'b')] }) });
    t.equal(conflict.status, 500);
    t.equal(conflict.json?.message, 'namespace tolerations and pod tolerations conflict');
    const outside = await c.request('POST', '/api/v1/namespaces/ptr/pods', { body: pod('o', { tolerations: [tol('gpu')] }) });
    t.equal(outside.status, 500);
    t.equal(outside.json?.message, 'pod tolerations (possibly merged with namespace default tolerations) conflict with its namespace whitelist');
  });

  t.test('EventRateLimit: a namespace over its burst gets 429, another namespace does not', async (t) => {
    await namespace(c, 'erl');
    await namespace(c, 'erl-other');
    const event = (ns: string, i: number): Obj => ({ apiVersion: 'v1', kind: 'Event', metadata: { name: `e${i}` }, involvedObject: { kind: 'Pod', name: 'p', namespace: ns }, reason: 'R', message: 'm' });
    const replies = await Promise.all(Array.from({ length: 12 }, (_, i) => c.request('POST', '/api/v1/namespaces/erl/events', { body: event('erl', i) })));
    const refused = replies.filter((r) => r.status === 429);
    t.ok(refused.length >= 1, `some events refused (${replies.map((r) => r.status).join(' ')})`);
    t.ok(replies.filter((r) => r.status === 201).length >= 3, 'the burst passes');
    t.equal(refused[0]?.json?.message, 'Too many requests: limit reached on type Namespace for key erl');
    t.equal(refused[0]?.json?.reason, 'TooManyRequests');
    const other = await c.request('POST', '/api/v1/namespaces/erl-other/events', { body: event('erl-other', 0) });
    t.equal(other.status, 201, 'the limit is per namespace');
  });

  t.test('DenyEscalatingExec: exec and attach into privileged, hostPID and hostIPC pods refused', async (t) => {
    await namespace(c, 'dee');
    const mk = async (name: string, spec: Obj): Promise<void> => {
      const r = await c.request('POST', '/api/v1/namespaces/dee/pods', { body: pod(name, spec) });
      if (r.status !== 201) throw new Error(`${name}: ${r.status} ${r.body}`);
    };
    await mk('priv', { containers: [{ name: 'c', image: 'busybox', securityContext: { privileged: true } }] });
    await mk('initpriv', { initContainers: [{ name: 'i', image: 'busybox', securityContext: { privileged: true } }] });
    await mk('pid', { hostPID: true });
    await mk('ipc', { hostIPC: true });
    await mk('plain', {});
    const cases: Array<[string, string, string]> = [
      ['priv', 'exec', 'cannot exec into or attach to a privileged container'],
      ['priv', 'attach', 'cannot exec into or attach to a privileged container'],
      ['initpriv', 'exec', 'cannot exec into or attach to a privileged container'],
      ['pid', 'exec', 'cannot exec into or attach to a container using host pid'],
      ['ipc', 'attach', 'cannot exec into or attach to a container using host IPC'],
    ];
    for (const [name, kind, why] of cases) {
      const r = await upgrade(a, `/api/v1/namespaces/dee/pods/${name}/${kind}?command=sh&stdin=true&stdout=true`);
      t.match(r, /^HTTP\/1\.1 403/, `${kind} into ${name} refused`);
      t.ok(r.includes(JSON.stringify(`pods "${name}" is forbidden: ${why}`).slice(1, -1)), why);
    }
    const plain = await upgrade(a, '/api/v1/namespaces/dee/pods/plain/exec?command=sh&stdout=true');
    t.match(plain, /^HTTP\/1\.1 400/, 'a plain pod passes admission (and then has no node to reach)');
    t.match(plain, /pod plain does not have a host assigned/);
  });

  t.test('ImagePolicyWebhook: reviews, denial, cache, failing open with the annotation', async (t) => {
    await namespace(c, 'ipw');
    reviews.length = 0;
    const ok = await c.request('POST', '/api/v1/namespaces/ipw/pods', { body: pod('ok', {
      initContainers: [{ name: 'i', image: 'init:1' }], containers: [{ name: 'c', image: 'app:1' }],
    }, { annotations: { 'mycluster.image-policy.k8s.io/ticket': '1234', 'other.io/x': 'y' } }) });
    t.equal(ok.status, 201, ok.json?.message);
    t.same(reviews[0], {
      apiVersion: 'imagepolicy.k8s.io/v1alpha1', kind: 'ImageReview',
      spec: { containers: [{ image: 'init:1' }, { image: 'app:1' }], annotations: { 'mycluster.image-policy.k8s.io/ticket': '1234' }, namespace: 'ipw' },
    }, 'the ImageReview the webhook gets');
    const denied = await c.request('POST', '/api/v1/namespaces/ipw/pods', { body: pod('bad', { containers: [{ name: 'c', image: 'evil:1' }] }) });
    t.equal(denied.status, 403);
    t.equal(denied.json?.message, 'pods "bad" is forbidden: image policy webhook backend denied one or more images: evil:1 not trusted');
    const before = reviews.length;
    await c.request('POST', '/api/v1/namespaces/ipw/pods', { body: pod('bad2', { containers: [{ name: 'c', image: 'evil:1' }] }) });
    t.equal(reviews.length, before, 'a denial is cached for denyTTL');
    failing = true;
    try {
      const open = await c.request('POST', '/api/v1/namespaces/ipw/pods', { body: pod('open', { containers: [{ name: 'c', image: 'new:1' }] }) });
      t.equal(open.status, 201, 'defaultAllow admits when the backend fails');
      t.equal(open.json.metadata.annotations['alpha.image-policy.k8s.io/failed-open'], 'true');
    } finally { failing = false; }
  });
});

t.test('DenyExecOnPrivileged and ImagePolicyWebhook failing closed', async (t) => {
  const config = await admissionConfig('closed.yaml', [
    { name: 'ImagePolicyWebhook', configuration: { imagePolicy: { kubeConfigFile: webhookKubeconfig, retryBackoff: 1, defaultAllow: false } } },
  ], 'apiserver.k8s.io/v1alpha1');
  const { a, c } = await server(t, 'DenyExecOnPrivileged,ImagePolicyWebhook', config);
  await namespace(c, 'deop');
  for (const [name, spec] of [['priv', { containers: [{ name: 'c', image: 'busybox', securityContext: { privileged: true } }] }], ['pid', { hostPID: true }]] as const) {
    const r = await c.request('POST', '/api/v1/namespaces/deop/pods', { body: pod(name, spec) });
    t.equal(r.status, 201);
  }
  const priv = await upgrade(a, '/api/v1/namespaces/deop/pods/priv/exec?command=sh&stdout=true');
  t.match(priv, /^HTTP\/1\.1 403/);
  t.ok(priv.includes('pods \\"priv\\" is forbidden: cannot exec into or attach to a privileged container'));
  const pid = await upgrade(a, '/api/v1/namespaces/deop/pods/pid/exec?command=sh&stdout=true');
  t.match(pid, /^HTTP\/1\.1 400/, 'host namespaces are DenyEscalatingExec\'s business only');

  failing = true;
  try {
    const r = await c.request('POST', '/api/v1/namespaces/deop/pods', { body: pod('closed', { containers: [{ name: 'c', image: 'other:2' }] }) });
    t.equal(r.status, 403, 'without defaultAllow a failing backend refuses');
    t.match(r.json?.message, /^pods "closed" is forbidden: the server responded with status 500/);
  } finally { failing = false; }
});

t.test('the legacy file form: one document configuring ImagePolicyWebhook and PodNodeSelector', async (t) => {
  const legacy = join(dir, 'legacy.yaml');
  await writeFile(legacy, [
    'imagePolicy:', `  kubeConfigFile: ${webhookKubeconfig}`, '  defaultAllow: false',
    'podNodeSelectorPluginConfig:', '  clusterDefaultNodeSelector: legacy=yes',
  ].join('\n'));
  const { c } = await server(t, 'ImagePolicyWebhook,PodNodeSelector', legacy);
  await namespace(c, 'legacy');
  const r = await c.request('POST', '/api/v1/namespaces/legacy/pods', { body: pod('p') });
  t.equal(r.status, 201, r.json?.message);
  t.same(r.json.spec.nodeSelector, { legacy: 'yes' });
  const denied = await c.request('POST', '/api/v1/namespaces/legacy/pods', { body: pod('q', { containers: [{ name: 'c', image: 'evil:2' }] }) });
  t.equal(denied.json?.message, 'pods "q" is forbidden: image policy webhook backend denied one or more images: evil:2 not trusted');
});

t.test('--admission-control-config-file errors stop the start with one line naming it', async (t) => {
  const start = async (args: string[]): Promise<string> => {
    const { code, stderr } = await runExpectingStartFailure(['--secure-port=0', '--disable-admission-plugins=ServiceAccount', ...args]);
    t.equal(code, 1);
    t.equal(stderr.trim().split('\n').length, 1, 'one line');
    return stderr.trim();
  };
  t.match(await start([`--admission-control-config-file=${join(dir, 'missing.yaml')}`]),
    /^apiserver: --admission-control-config-file: cannot read admission configuration .*missing\.yaml: ENOENT/);
  const wrongKind = join(dir, 'wrong-kind.yaml');
  await writeFile(wrongKind, 'apiVersion: v1\nkind: ConfigMap\n');
  t.match(await start([`--admission-control-config-file=${wrongKind}`]), /^apiserver: --admission-control-config-file: .*expected kind AdmissionConfiguration/);
  const notYaml = join(dir, 'not-yaml.yaml');
  await writeFile(notYaml, 'plugins: [unclosed\n');
  t.match(await start([`--admission-control-config-file=${notYaml}`]), /^apiserver: --admission-control-config-file: .*not valid YAML or JSON/);
  const missingPath = await admissionConfig('missing-path.yaml', [{ name: 'EventRateLimit', path: 'nowhere.yaml' }]);
  t.match(await start([`--admission-control-config-file=${missingPath}`, '--enable-admission-plugins=EventRateLimit']),
    /^apiserver: --admission-control-config-file: cannot read configuration of EventRateLimit .*nowhere\.yaml: ENOENT/);
  const badLimit = await admissionConfig('bad-limit.yaml', [{ name: 'EventRateLimit', configuration: {
    apiVersion: 'eventratelimit.admission.k8s.io/v1alpha1', kind: 'Configuration', limits: [{ type: 'Everyone', qps: 1, burst: 1 }],
  } }]);
  t.match(await start([`--admission-control-config-file=${badLimit}`, '--enable-admission-plugins=EventRateLimit']),
    /^apiserver: --admission-control-config-file: EventRateLimit \(.*bad-limit\.yaml\): limits\[0\]\.type: Unsupported value: "Everyone"/);
  t.match(await start(['--enable-admission-plugins=EventRateLimit']),
    /^apiserver: --admission-control-config-file: EventRateLimit: a configuration \(eventratelimit\.admission\.k8s\.io\/v1alpha1 Configuration\) is required/);
  const badPsa = await admissionConfig('bad-psa.yaml', [{ name: 'PodSecurity', configuration: {
    apiVersion: 'pod-security.admission.config.k8s.io/v1', kind: 'PodSecurityConfiguration', defaults: { enforce: 'strict' },
  } }]);
  t.match(await start([`--admission-control-config-file=${badPsa}`]),
    /^apiserver: --admission-control-config-file: PodSecurity \(.*\): defaults\.enforce: Invalid value: "strict": must be one of privileged, baseline, restricted/);
  const badKubeconfig = await admissionConfig('bad-ipw.yaml', [{ name: 'ImagePolicyWebhook', configuration: { imagePolicy: { kubeConfigFile: join(dir, 'no-such.kubeconfig') } } }]);
  t.match(await start([`--admission-control-config-file=${badKubeconfig}`, '--enable-admission-plugins=ImagePolicyWebhook']),
    /^apiserver: --admission-control-config-file: ImagePolicyWebhook \(.*\): coreconfig .*no-such\.kubeconfig: cannot read: ENOENT/);
  t.ok((await readFile(badKubeconfig)).length > 0);
});

t.test('names Kubernetes removed are refused at start; PodSecurityPolicy names its successor', async (t) => {
  for (const name of ['Initializers', 'InitialResources', 'PodPreset', 'PersistentVolumeLabel']) {
    const { code, stderr } = await runExpectingStartFailure(['--secure-port=0', `--enable-admission-plugins=${name}`]);
    t.equal(code, 1, name);
    t.match(stderr, new RegExp(`^apiserver: --enable-admission-plugins: ${name}[ ,].*was removed from Kubernetes.*no successor`), name);
    t.equal(stderr.trim().split('\n').length, 1);
  }
  const lines: string[] = [];
  const { pino } = await import('pino');
  const log = pino({ level: 'info' }, { write: (s: string) => { lines.push(s); } });
  const a = await startApiserver({ args: ['--enable-admission-plugins=PodSecurityPolicy', '--disable-admission-plugins=ServiceAccount'], log });
  t.teardown(() => a.stop());
  t.ok(lines.some((l) => /PodSecurityPolicy was removed from Kubernetes \(1\.25\); Pod Security admission \(PodSecurity, on by default\) is its successor/.test(l)),
    'the start says PodSecurityPolicy was removed and what replaces it');
});

/** An exec/attach upgrade request over HTTP/1.1; the raw response text. */
async function upgrade(a: StartedApiserver, path: string): Promise<string> {
  const tls = { ca: await readFile(a.caFile), cert: await readFile(a.clientCertFile), key: await readFile(a.clientKeyFile) };
  return new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port: a.port, ...tls, ALPNProtocols: ['http/1.1'], servername: 'localhost' });
    let buf = '';
    s.on('secureConnect', () => s.write([`GET ${path} HTTP/1.1`, 'Host: localhost', 'Connection: Upgrade', 'Upgrade: websocket', 'Sec-WebSocket-Version: 13',
      'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==', 'Sec-WebSocket-Protocol: v5.channel.k8s.io', '', ''].join('\r\n')));
    s.on('data', (d: Buffer) => { buf += d.toString(); });
    s.on('error', () => undefined);
    s.on('close', () => resolve(buf));
    setTimeout(() => s.destroy(), 10_000);
  });
}

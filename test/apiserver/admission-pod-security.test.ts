/**
 * Pod Security admission (PodSecurity, on by default) through a real API server: namespace
 * labels per mode and version, enforce refusals with Kubernetes' exact messages, `Warning`
 * headers for warn (pods and workload templates), label validation, warnings about existing
 * pods when enforce is raised, and the defaults and exemptions of a PodSecurityConfiguration
 * given in --admission-control-config-file.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { startApiserver } from '../helpers/apiserver.js';
import { connectClient, type Reply } from '../helpers/rest-client.js';
import { kubectl } from '../helpers/kubectl.js';
import { kubectlRunner } from '../helpers/kubectl-run.js';

type Obj = Record<string, unknown>;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;

const dir = await mkdtemp(join(tmpdir(), 'pod-security-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));
const configFile = join(dir, 'admission.yaml');
await writeFile(configFile, [
  'apiVersion: apiserver.config.k8s.io/v1',
  'kind: AdmissionConfiguration',
  'plugins:',
  '- name: PodSecurity',
  '  configuration:',
  '    apiVersion: pod-security.admission.config.k8s.io/v1',
  '    kind: PodSecurityConfiguration',
  '    defaults:',
  '      enforce: baseline',
  '      enforce-version: latest',
  '    exemptions:',
  '      namespaces: [exempt]',
  '      runtimeClasses: [trusted]',
].join('\n'));

// Only the defaults plus this configuration: PodSecurity is not named, it is on by default.
const a = await startApiserver({ args: ['--allow-privileged=true', `--admission-control-config-file=${configFile}`] });
const c = await connectClient(a);
t.teardown(async () => { c.close(); await a.stop(); });

const pod = (name: string, spec: Obj = {}): Obj => ({
  apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { containers: [{ name: 'c', image: 'busybox' }], ...spec },
});
/** A pod the restricted level accepts. */
const restrictedPod = (name: string, extra: Obj = {}): Obj => pod(name, {
  securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
  containers: [{ name: 'c', image: 'busybox', securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } } }],
  ...extra,
});
const RESTRICTED_PLAIN = 'allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), '
  + 'unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), '
  + 'runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), '
  + 'seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")';

async function namespace(name: string, labels: Record<string, string>): Promise<Reply> {
  return c.request('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } } });
}

/** The texts of the response's `Warning: 299 - "..."` headers. */
function warnings(r: Reply): string[] {
  const raw = r.headers['warning'];
  const list = raw === undefined ? [] : Array.isArray(raw) ? raw : String(raw).split(/,(?=\s*299 )/);
  return list.map((w) => {
    const m = /^\s*299 - "(.*)"\s*$/.exec(w);
    return m ? m[1]!.replace(/\\(.)/g, '$1') : w;
  });
}

t.test('enforce restricted: refused with Kubernetes\' message, a compliant pod passes', async (t) => {
  t.equal((await namespace('ps-r', { 'pod-security.kubernetes.io/enforce': 'restricted' })).status, 201);
  const bad = await c.request('POST', '/api/v1/namespaces/ps-r/pods', { body: pod('x') });
  t.equal(bad.status, 403);
  t.equal(bad.json?.reason, 'Forbidden');
  t.equal(bad.json?.message, `pods "x" is forbidden: violates PodSecurity "restricted:latest": ${RESTRICTED_PLAIN}`);
  const many = await c.request('POST', '/api/v1/namespaces/ps-r/pods', { body: pod('y', {
    hostNetwork: true, hostPID: true,
    volumes: [{ name: 'h', hostPath: { path: '/etc' } }, { name: 'n', nfs: { server: 's', path: '/' } }, { name: 'ok', emptyDir: {} }],
    securityContext: { runAsNonRoot: true, runAsUser: 0, seccompProfile: { type: 'Unconfined' }, sysctls: [{ name: 'kernel.msgmax', value: '1' }] },
    initContainers: [{ name: 'i', image: 'busybox', securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'], add: ['NET_BIND_SERVICE'] } } }],
    containers: [
      { name: 'a', image: 'busybox', ports: [{ containerPort: 80, hostPort: 80 }], securityContext: { privileged: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'], add: ['SYS_ADMIN', 'NET_RAW'] } } },
      { name: 'b', image: 'busybox', ports: [{ containerPort: 81, hostPort: 8081 }], livenessProbe: { httpGet: { host: '10.0.0.1', port: 81 } }, securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] }, procMount: 'Unmasked', seLinuxOptions: { type: 'spc_t', user: 'root' } } },
    ],
  }) });
  t.equal(many.status, 403);
  t.equal(many.json?.message, 'pods "y" is forbidden: violates PodSecurity "restricted:latest": '
    + 'host namespaces (hostNetwork=true, hostPID=true), '
    + 'hostPort (containers "a", "b" use hostPorts 80, 8081), '
    + 'probe or lifecycle host (container "b" uses probe or lifecycle host "10.0.0.1"), '
    + 'privileged (container "a" must not set securityContext.privileged=true), '
    + 'procMount (container "b" must not set securityContext.procMount to "Unmasked"), '
    + 'seLinuxOptions (container "b" set forbidden securityContext.seLinuxOptions: type "spc_t"; user may not be set), '
    + 'forbidden sysctls (kernel.msgmax), '
    + 'unrestricted capabilities (container "a" must not include "NET_RAW", "SYS_ADMIN" in securityContext.capabilities.add), '
    + 'restricted volume types (volumes "h", "n" use restricted volume types "hostPath", "nfs"), '
    + 'runAsUser=0 (pod must not set runAsUser=0), '
    + 'seccompProfile (pod must not set securityContext.seccompProfile.type to "Unconfined")',
    'every violated check, baseline ones first, in Kubernetes\' order and words');
  const good = await c.request('POST', '/api/v1/namespaces/ps-r/pods', { body: restrictedPod('good') });
  t.equal(good.status, 201, good.json?.message);
  t.same(warnings(good), []);
  const status = await c.request('PUT', '/api/v1/namespaces/ps-r/pods/good/status', { body: { ...good.json, status: { phase: 'Running' } } });
  t.equal(status.status, 200, 'status updates are not evaluated');
  const exemptClass = await c.request('POST', '/api/v1/namespaces/ps-r/pods', { body: pod('rc', { runtimeClassName: 'trusted' }) });
  t.not(exemptClass.status, 403, 'an exempt runtimeClass is not evaluated');
});

t.test('enforce baseline with warn restricted: refusal, then warnings on pods and workload templates', async (t) => {
  await namespace('ps-b', { 'pod-security.kubernetes.io/enforce': 'baseline', 'pod-security.kubernetes.io/warn': 'restricted' });
  const host = await c.request('POST', '/api/v1/namespaces/ps-b/pods', { body: pod('h', { hostNetwork: true }) });
  t.equal(host.status, 403);
  t.equal(host.json?.message, 'pods "h" is forbidden: violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true)');
  const plain = await c.request('POST', '/api/v1/namespaces/ps-b/pods', { body: pod('p') });
  t.equal(plain.status, 201);
  t.same(warnings(plain), [`would violate PodSecurity "restricted:latest": ${RESTRICTED_PLAIN}`], 'the warn level\'s violations as a Warning header');
  const deploy = await c.request('POST', '/apis/apps/v1/namespaces/ps-b/deployments', { body: {
    apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd' },
    spec: { selector: { matchLabels: { app: 'd' } }, template: { metadata: { labels: { app: 'd' } }, spec: { hostPID: true, containers: [{ name: 'c', image: 'busybox' }] } } },
  } });
  t.equal(deploy.status, 201, 'workloads are never refused, only warned about');
  t.same(warnings(deploy), [`would violate PodSecurity "restricted:latest": host namespaces (hostPID=true), ${RESTRICTED_PLAIN}`]);
  const cron = await c.request('POST', '/apis/batch/v1/namespaces/ps-b/cronjobs', { body: {
    apiVersion: 'batch/v1', kind: 'CronJob', metadata: { name: 'cj' },
    spec: { schedule: '* * * * *', jobTemplate: { spec: { template: { spec: { restartPolicy: 'Never', ...(restrictedPod('x').spec as Obj) } } } } },
  } });
  t.equal(cron.status, 201, cron.json?.message);
  t.same(warnings(cron), [], 'a compliant CronJob template: no warning');
});

t.test('enforce only: workloads are not evaluated; versions pick the checks of that release', async (t) => {
  await namespace('ps-v', { 'pod-security.kubernetes.io/enforce': 'restricted', 'pod-security.kubernetes.io/enforce-version': 'v1.22' });
  const root = restrictedPod('root', { securityContext: { runAsNonRoot: true, runAsUser: 0, seccompProfile: { type: 'RuntimeDefault' } } });
  const old = await c.request('POST', '/api/v1/namespaces/ps-v/pods', { body: root });
  t.equal(old.status, 201, 'runAsUser=0 is checked from v1.23 on');
  await namespace('ps-latest', { 'pod-security.kubernetes.io/enforce': 'restricted' });
  const latest = await c.request('POST', '/api/v1/namespaces/ps-latest/pods', { body: root });
  t.equal(latest.json?.message, 'pods "root" is forbidden: violates PodSecurity "restricted:latest": runAsUser=0 (pod must not set runAsUser=0)');
  const rs = await c.request('POST', '/apis/apps/v1/namespaces/ps-latest/replicasets', { body: {
    apiVersion: 'apps/v1', kind: 'ReplicaSet', metadata: { name: 'rs' },
    spec: { selector: { matchLabels: { app: 'r' } }, template: { metadata: { labels: { app: 'r' } }, spec: { containers: [{ name: 'c', image: 'busybox' }] } } },
  } });
  t.equal(rs.status, 201);
  t.same(warnings(rs), [], 'enforce alone does not warn about templates (Kubernetes evaluates them for warn and audit only)');
});

t.test('namespace labels are validated; raising enforce warns about existing pods', async (t) => {
  const bad = await namespace('ps-bad', { 'pod-security.kubernetes.io/enforce': 'strict', 'pod-security.kubernetes.io/warn-version': '1.25' });
  t.equal(bad.status, 422);
  t.equal(bad.json?.message, 'Namespace "ps-bad" is invalid: [metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": must be one of privileged, baseline, restricted, '
    + 'metadata.labels[pod-security.kubernetes.io/warn-version]: Invalid value: "1.25": must be "latest" or "v1.x"]');

  t.equal((await namespace('ps-up', { 'pod-security.kubernetes.io/enforce': 'privileged' })).status, 201);
  for (const name of ['p2', 'p1', 'p3']) t.equal((await c.request('POST', '/api/v1/namespaces/ps-up/pods', { body: pod(name) })).status, 201);
  t.equal((await c.request('POST', '/api/v1/namespaces/ps-up/pods', { body: pod('h', { hostIPC: true }) })).status, 201);
  const up = await c.request('PATCH', '/api/v1/namespaces/ps-up', {
    body: { metadata: { labels: { 'pod-security.kubernetes.io/enforce': 'baseline' } } }, contentType: 'application/merge-patch+json',
  });
  t.equal(up.status, 200);
  t.same(warnings(up), [
    'existing pods in namespace "ps-up" violate the new PodSecurity enforce level "baseline:latest"',
    'h: host namespaces (hostIPC=true)',
  ]);
  const up2 = await c.request('PATCH', '/api/v1/namespaces/ps-up', {
    body: { metadata: { labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } } }, contentType: 'application/merge-patch+json',
  });
  t.same(warnings(up2), [
    'existing pods in namespace "ps-up" violate the new PodSecurity enforce level "restricted:latest"',
    'h: host namespaces (hostIPC=true), ' + RESTRICTED_PLAIN,
    `p1 (and 2 other pods): ${RESTRICTED_PLAIN}`,
  ], 'grouped by violation, the first pod by name');
  const down = await c.request('PATCH', '/api/v1/namespaces/ps-up', {
    body: { metadata: { labels: { 'pod-security.kubernetes.io/enforce': 'baseline' } } }, contentType: 'application/merge-patch+json',
  });
  t.same(warnings(down), [], 'relaxing says nothing');
  const badUpdate = await c.request('PATCH', '/api/v1/namespaces/ps-up', {
    body: { metadata: { labels: { 'pod-security.kubernetes.io/audit': 'loud' } } }, contentType: 'application/merge-patch+json',
  });
  t.equal(badUpdate.status, 422);
});

t.test('configuration: defaults apply to unlabelled namespaces, exempt namespaces are skipped', async (t) => {
  await namespace('ps-none', {});
  const r = await c.request('POST', '/api/v1/namespaces/ps-none/pods', { body: pod('h', { hostNetwork: true }) });
  t.equal(r.status, 403);
  t.equal(r.json?.message, 'pods "h" is forbidden: violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true)', 'defaults.enforce=baseline');
  await namespace('exempt', { 'pod-security.kubernetes.io/enforce': 'restricted' });
  const e = await c.request('POST', '/api/v1/namespaces/exempt/pods', { body: pod('h', { hostNetwork: true, containers: [{ name: 'c', image: 'busybox', securityContext: { privileged: true } }] }) });
  t.equal(e.status, 201, 'exempt namespace');
  const priv = await c.request('POST', '/api/v1/namespaces/ps-none/pods', { body: pod('ok') });
  t.equal(priv.status, 201, 'a baseline pod passes the default');
});

t.test('kubectl 1.33 prints the warning and the refusal', { skip: kubectl(33) ? false : 'kubectl 1.33 not installed' }, async (t) => {
  const k = kubectlRunner(kubectl(33)!, a.coreconfigPath, join(dir, 'kcache'));
  await namespace('ps-k', { 'pod-security.kubernetes.io/enforce': 'baseline', 'pod-security.kubernetes.io/warn': 'restricted' });
  const warned = await k.run(['-n', 'ps-k', 'run', 'w', '--image=busybox', '--restart=Never']);
  t.equal(warned.code, 0, warned.stderr);
  t.match(warned.stderr, 'Warning: would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "w" must set securityContext.allowPrivilegeEscalation=false)');
  const refused = await k.run(['-n', 'ps-k', 'apply', '-f', '-'], JSON.stringify(pod('hn', { hostNetwork: true })));
  t.not(refused.code, 0);
  t.match(refused.stderr, 'pods "hn" is forbidden: violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true)');
});

/**
 * Pod features on the fake runtime against a real API server: init containers, env from
 * config maps, secrets and the downward API with $(VAR) expansion, config-map volumes,
 * readiness and liveness probes, events; and the secure port's authentication with the
 * read-only port's limits.
 */
import { request, Agent } from 'node:https';
import { request as httpRequest } from 'node:http';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { KubeObject } from '../../src/api/resources/types.js';
import { loadCoreconfig } from '../../src/client/coreconfig.js';
import { RestClient } from '../../src/client/rest-client.js';
import { parseNodeagentArgs } from '../../src/flags/nodeagent.js';
import { startNodeAgent } from '../../src/daemons/nodeagent/main.js';
import type { Pod } from '../../src/daemons/nodeagent/pod-types.js';
import { containerConfig } from '../../src/daemons/nodeagent/runtime-config.js';
import { startApiserver } from '../helpers/apiserver.js';
import { waitFor } from '../helpers/wait-for.js';


const api = await startApiserver();
const dir = await mkdtemp(join(tmpdir(), 'corectl-agent-pods-'));
const client = new RestClient({ connection: await loadCoreconfig({ path: api.coreconfigPath }), contentType: 'application/json' });
const { config } = parseNodeagentArgs([
  '--container-runtime=fake', `--coreconfig=${api.coreconfigPath}`, '--hostname-override=node-p', `--root-dir=${join(dir, 'root')}`,
  `--cert-dir=${join(dir, 'pki')}`, '--port=0', '--read-only-port=0', '--healthz-port=0', '--fail-swap-on=false', '--address=127.0.0.1',
  '--resolv-conf=', '--event-qps=0', '--core-api-qps=50', '--core-api-burst=100', '--anonymous-auth=false', `--client-ca-file=${api.caFile}`,
]);
const agent = await startNodeAgent(config, { podLogDir: join(dir, 'logs'), relistPeriodMs: 100, skipProcessTweaks: true, backoff: { initialMs: 1000, maxMs: 2000, resetMs: 600_000 } });
t.teardown(async () => {
  await agent.stop({ stopPods: true });
  client.close();
  await api.stop();
  await rm(dir, { recursive: true, force: true });
});
const PODS = { group: '', version: 'v1', resource: 'pods', namespace: 'default' };
const getPod = (name: string): Promise<Pod> => client.get<Pod>(PODS, name);

t.test('init containers run first; env and volumes come from config maps, secrets and the pod', async (t) => {
  await client.create({ group: '', version: 'v1', resource: 'configmaps', namespace: 'default' }, { metadata: { name: 'cfg' }, data: { color: 'blue', 'app.conf': 'x=1' } });
  await client.create({ group: '', version: 'v1', resource: 'secrets', namespace: 'default' }, { metadata: { name: 'sec' }, data: { password: Buffer.from('s3cret').toString('base64') } });
  await client.create(PODS, {
    metadata: { name: 'full', labels: { app: 'full' } },
    spec: {
      nodeName: 'node-p',
      initContainers: [{ name: 'setup', image: 'fake/exit:0', imagePullPolicy: 'IfNotPresent' }],
      containers: [{
        name: 'main', image: 'localhost/busybox:latest', imagePullPolicy: 'IfNotPresent',
        envFrom: [{ prefix: 'CFG_', configMapRef: { name: 'cfg' } }],
        env: [
          { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
          { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
          { name: 'PASS', valueFrom: { secretKeyRef: { name: 'sec', key: 'password' } } },
          { name: 'GREETING', value: 'hi $(POD_NAME) in $(CFG_color) $$(KEEP)' },
        ],
        volumeMounts: [{ name: 'conf', mountPath: '/etc/app' }, { name: 'scratch', mountPath: '/scratch' }],
      }],
      volumes: [{ name: 'conf', configMap: { name: 'cfg' } }, { name: 'scratch', emptyDir: {} }],
    },
  });
  const p = await waitFor('full running', async () => { const x = await getPod('full'); return x.status?.phase === 'Running' ? x : undefined; });
  t.equal(p.status?.initContainerStatuses?.[0]?.state.terminated?.exitCode, 0);
  t.equal(p.status?.conditions?.find((c) => c.type === 'Initialized')?.status, 'True');
  const id = (p.status?.containerStatuses?.[0]?.containerID ?? '').replace('fake://', '');
  const env = (await agent.runtime.execSync(id, ['env'], 5)).stdout.toString();
  t.match(env, /POD_NAME=full\n/);
  t.match(env, new RegExp(`POD_IP=${p.status?.podIP?.replace(/\./g, '\\.')}\n`));
  t.match(env, /PASS=s3cret\n/);
  t.match(env, /CFG_color=blue\n/);
  t.match(env, /GREETING=hi full in blue \$\(KEEP\)\n/);
  const st = await agent.runtime.containerStatus(id);
  const conf = st.mounts.find((m) => m.containerPath === '/etc/app');
  t.ok(conf);
  t.equal(await readFile(join(conf?.hostPath ?? '', 'app.conf'), 'utf8'), 'x=1');
  t.ok(st.mounts.some((m) => m.containerPath === '/scratch'));
  const events = await waitFor('events', async () => {
    const l = await client.list({ group: '', version: 'v1', resource: 'events', namespace: 'default' });
    const reasons = new Set(l.items.filter((e) => (e as KubeObject & { involvedObject?: { name?: string } }).involvedObject?.name === 'full').map((e) => (e as KubeObject & { reason?: string }).reason));
    return reasons.has('Started') && reasons.has('Created') && reasons.has('Pulled') ? reasons : undefined;
  });
  t.ok(events.has('Started'));
  await client.delete(PODS, 'full');
});

t.test('a missing config map holds the container in CreateContainerConfigError', async (t) => {
  await client.create(PODS, { metadata: { name: 'nocfg' }, spec: { nodeName: 'node-p', containers: [{ name: 'main', image: 'localhost/busybox:latest', imagePullPolicy: 'IfNotPresent', env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'absent', key: 'k' } } }] }] } });
  const p = await waitFor('config error', async () => { const x = await getPod('nocfg'); return x.status?.containerStatuses?.[0]?.state.waiting?.reason === 'CreateContainerConfigError' ? x : undefined; });
  t.equal(p.status?.phase, 'Pending');
  await client.delete(PODS, 'nocfg');
});

t.test('readiness and liveness probes', async (t) => {
  await client.create(PODS, {
    metadata: { name: 'unready', annotations: { 'fake.corectl.io/exec-exit-code': '1' } },
    spec: { nodeName: 'node-p', containers: [{ name: 'main', image: 'localhost/busybox:latest', imagePullPolicy: 'IfNotPresent', readinessProbe: { exec: { command: ['true'] }, periodSeconds: 1 } }] },
  });
  await client.create(PODS, {
    metadata: { name: 'ready' },
    spec: { nodeName: 'node-p', containers: [{ name: 'main', image: 'localhost/busybox:latest', imagePullPolicy: 'IfNotPresent', readinessProbe: { exec: { command: ['true'] }, periodSeconds: 1 } }] },
  });
  await client.create(PODS, {
    metadata: { name: 'dying', annotations: { 'fake.corectl.io/exec-exit-code': '1' } },
    spec: { nodeName: 'node-p', terminationGracePeriodSeconds: 1, containers: [{ name: 'main', image: 'localhost/busybox:latest', imagePullPolicy: 'IfNotPresent', livenessProbe: { exec: { command: ['true'] }, periodSeconds: 1, failureThreshold: 1 } }] },
  });
  const ready = await waitFor('ready', async () => { const x = await getPod('ready'); return x.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True' ? x : undefined; });
  t.ok(ready.status?.containerStatuses?.[0]?.ready);
  const unready = await getPod('unready');
  t.equal(unready.status?.phase, 'Running');
  t.equal(unready.status?.containerStatuses?.[0]?.ready, false);
  t.equal(unready.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'False');
  const dying = await waitFor('liveness restart', async () => { const x = await getPod('dying'); return (x.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 1 ? x : undefined; });
  t.ok(dying);
  for (const n of ['ready', 'unready', 'dying']) await client.delete(PODS, n);
});

function httpsGet(path: string, cert?: { certPem: string; keyPem: string }): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(`https://127.0.0.1:${agent.listeners?.securePort}${path}`, {
      agent: new Agent({ rejectUnauthorized: false, ...(cert ? { cert: cert.certPem, key: cert.keyPem } : {}) }),
    }, (res) => { res.resume(); resolve(res.statusCode ?? 0); });
    req.on('error', reject);
    req.end();
  });
}

t.test('secure port: anonymous refused, client certificates accepted', async (t) => {
  t.equal(await httpsGet('/pods'), 401);
  t.equal(await httpsGet('/healthz'), 200, 'health needs no credentials');
  const admin = await api.issueClient('someone', ['ops']);
  t.equal(await httpsGet('/pods', admin), 200);
});

t.test('read-only port serves only read-only endpoints', async (t) => {
  const { config: ro } = parseNodeagentArgs([
    '--container-runtime=fake', `--coreconfig=${join(dir, 'none')}`, '--hostname-override=node-ro', `--root-dir=${join(dir, 'ro')}`,
    `--cert-dir=${join(dir, 'ro-pki')}`, '--port=0', '--read-only-port=0', '--healthz-port=0', '--fail-swap-on=false', '--address=127.0.0.1', '--resolv-conf=',
  ]);
  // Port 0 disables the read-only listener, so pick a free one.
  const { freePort } = await import('../helpers/apiserver.js');
  const port = await freePort();
  const a2 = await startNodeAgent({ ...ro, readOnlyPort: port }, { skipProcessTweaks: true, podLogDir: join(dir, 'ro-logs') });
  t.teardown(() => a2.stop());
  const get = (path: string): Promise<number> => new Promise((resolve, reject) => {
    const req = httpRequest(`http://127.0.0.1:${port}${path}`, (res) => { res.resume(); resolve(res.statusCode ?? 0); });
    req.on('error', reject);
    req.end();
  });
  t.equal(await get('/pods'), 200);
  t.equal(await get('/healthz'), 200);
  t.equal(await get('/metrics'), 200);
  t.equal(await get('/manifests'), 404);
  t.equal(await get('/containerLogs/default/x/y'), 404);
});

t.test('activeDeadlineSeconds fails the pod; httpGet and tcpSocket probes', async (t) => {
  const { createServer } = await import('node:http');
  const srv = createServer((req, res) => { res.statusCode = req.url === '/ok' ? 200 : 500; res.end(); });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => srv.close(() => r())));
  const port = (srv.address() as { port: number }).port;
  const { freePort } = await import('../helpers/apiserver.js');
  const closed = await freePort();
  await client.create(PODS, { metadata: { name: 'deadline' }, spec: { nodeName: 'node-p', activeDeadlineSeconds: 1, terminationGracePeriodSeconds: 1, containers: [{ name: 'main', image: 'localhost/busybox:latest', imagePullPolicy: 'IfNotPresent' }] } });
  await client.create(PODS, {
    metadata: { name: 'probes' },
    spec: {
      nodeName: 'node-p', terminationGracePeriodSeconds: 1,
      containers: [
        { name: 'web', image: 'localhost/busybox:latest', imagePullPolicy: 'IfNotPresent', readinessProbe: { httpGet: { host: '127.0.0.1', port, path: '/ok' }, periodSeconds: 1 } },
        { name: 'bad', image: 'localhost/busybox:latest', imagePullPolicy: 'IfNotPresent', readinessProbe: { httpGet: { host: '127.0.0.1', port, path: '/fail' }, periodSeconds: 1 } },
        { name: 'tcp', image: 'localhost/busybox:latest', imagePullPolicy: 'IfNotPresent', livenessProbe: { tcpSocket: { host: '127.0.0.1', port: closed }, periodSeconds: 1, failureThreshold: 1 } },
      ],
    },
  });
  const d = await waitFor('deadline', async () => { const x = await getPod('deadline'); return x.status?.phase === 'Failed' ? x : undefined; });
  t.equal(d.status?.reason, 'DeadlineExceeded');
  const p = await waitFor('probes', async () => {
    const x = await getPod('probes');
    const by = Object.fromEntries((x.status?.containerStatuses ?? []).map((c) => [c.name, c]));
    return by.web?.ready && (by.tcp?.restartCount ?? 0) >= 1 ? by : undefined;
  });
  t.equal(p.bad?.ready, false);
  for (const n of ['deadline', 'probes']) await client.delete(PODS, n);
});

t.test('a failing postStart hook kills the container, which is restarted', async (t) => {
  await client.create(PODS, {
    metadata: { name: 'hooked', annotations: { 'fake.corectl.io/exec-exit-code': '1' } },
    spec: { nodeName: 'node-p', terminationGracePeriodSeconds: 1, containers: [{ name: 'main', image: 'localhost/busybox:latest', imagePullPolicy: 'IfNotPresent', lifecycle: { postStart: { exec: { command: ['true'] } } } }] },
  });
  await waitFor('restart after hook failure', async () => ((await getPod('hooked')).status?.containerStatuses?.[0]?.restartCount ?? 0) >= 1);
  const reasons = await waitFor('hook event', async () => {
    const l = await client.list({ group: '', version: 'v1', resource: 'events', namespace: 'default' });
    const r = new Set(l.items.filter((e) => (e as KubeObject & { involvedObject?: { name?: string } }).involvedObject?.name === 'hooked').map((e) => (e as KubeObject & { reason?: string }).reason));
    return r.has('FailedPostStartHook') ? r : undefined;
  });
  t.ok(reasons.has('FailedPostStartHook'));
  await client.delete(PODS, 'hooked');
});

t.test('ephemeral containers run once beside the pod and are reported apart', async (t) => {
  await client.create(PODS, {
    metadata: { name: 'debugged' },
    spec: { nodeName: 'node-p', terminationGracePeriodSeconds: 1, containers: [{ name: 'app', image: 'localhost/busybox:latest', imagePullPolicy: 'IfNotPresent' }] },
  });
  const running = await waitFor('debugged running', async () => { const x = await getPod('debugged'); return x.status?.phase === 'Running' ? x : undefined; });
  const appId = (running.status?.containerStatuses?.[0]?.containerID ?? '').replace('fake://', '');
  // As kubectl debug adds them: one that fails at once, one that prints and ends, one that
  // stays, joined to the app container's process namespace.
  await client.patch(PODS, 'debugged', 'strategic', { spec: { ephemeralContainers: [
    { name: 'fails', image: 'fake/exit:3', imagePullPolicy: 'IfNotPresent' },
    { name: 'prints', image: 'localhost/busybox:latest', imagePullPolicy: 'IfNotPresent', command: ['echo', 'hello', 'debugger'] },
    { name: 'stays', image: 'localhost/busybox:latest', imagePullPolicy: 'IfNotPresent', targetContainerName: 'app', stdin: true, tty: true },
  ] } }, { subresource: 'ephemeralcontainers' });
  const p = await waitFor('ephemeral statuses', async () => {
    const x = await getPod('debugged');
    const by = Object.fromEntries((x.status?.ephemeralContainerStatuses ?? []).map((c) => [c.name, c]));
    return by.fails?.state.terminated && by.prints?.state.terminated && by.stays?.state.running ? { pod: x, by } : undefined;
  });
  t.equal(p.by.fails?.state.terminated?.exitCode, 3);
  t.equal(p.by.prints?.state.terminated?.exitCode, 0);
  t.equal(p.by.stays?.ready, false, 'an ephemeral container is never ready');
  t.equal(p.pod.status?.phase, 'Running', 'the phase does not depend on them');
  t.equal(p.pod.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'True', 'nor does readiness');
  t.same(p.pod.status?.containerStatuses?.map((c) => c.name), ['app'], 'the containers are reported as before');
  // Never restarted: a few syncs later the failed one is still the same exited container.
  await new Promise((r) => setTimeout(r, 600));
  const later = (await getPod('debugged')).status?.ephemeralContainerStatuses?.find((c) => c.name === 'fails');
  t.equal(later?.restartCount, 0);
  t.equal(later?.containerID, p.by.fails?.containerID, 'not started again');
  const st = await agent.runtime.containerStatus((p.by.stays?.containerID ?? '').replace('fake://', ''));
  t.equal(st.state, 'running');
  t.equal(appId.length > 0, true);
  await client.delete(PODS, 'debugged');
  await waitFor('debugged gone', async () => { try { await getPod('debugged'); return false; } catch { return true; } });
  t.equal((await agent.runtime.containerStatus((p.by.stays?.containerID ?? '').replace('fake://', '')).catch(() => undefined))?.state ?? 'gone', 'gone', 'stopped and removed with the pod');
});

t.test('an ephemeral container with a target joins its process namespace', async (t) => {
  const pod: Pod = { metadata: { name: 'p', namespace: 'default', uid: 'u' }, spec: { containers: [{ name: 'app' }] } };
  const base = { pod, container: { name: 'dbg' }, restartCount: 0, image: 'busybox', env: new Map<string, string>(), command: [], args: [], volumePaths: new Map<string, string>(), cfsQuota: false };
  t.match(containerConfig({ ...base, targetId: 'abc' }).linux?.securityContext?.namespaceOptions, { pid: 'target', targetId: 'abc' });
  t.equal(containerConfig(base).linux?.securityContext?.namespaceOptions?.pid, 'container', 'no target: its own');
  t.equal(containerConfig({ ...base, pod: { ...pod, spec: { ...pod.spec, shareProcessNamespace: true } }, targetId: 'abc' }).linux?.securityContext?.namespaceOptions?.pid, 'pod', 'a pod that shares one keeps it');
});

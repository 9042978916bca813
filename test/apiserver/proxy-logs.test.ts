/**
 * pods/log and nodes/proxy through a real in-process API server to a real node agent on the
 * fake runtime, over HTTPS with client-certificate authentication both ways: log lines,
 * tailLines, timestamps, limitBytes, follow (a later line arrives; the upstream request ends
 * when the client goes away), the container-choice and unbound-pod errors, and node proxying.
 */
import { appendFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Socket } from 'node:net';
import t from 'tap';
import type { KubeObject } from '../../src/api/resources/types.js';
import { loadCoreconfig } from '../../src/client/coreconfig.js';
import { RestClient } from '../../src/client/rest-client.js';
import { parseNodeagentArgs } from '../../src/flags/nodeagent.js';
import { startNodeAgent, type NodeAgent } from '../../src/daemons/nodeagent/main.js';
import type { Pod } from '../../src/daemons/nodeagent/pod-types.js';
import { formatCriLogRecord } from '../../src/daemons/nodeagent/runtime/logs/cri-log-reader.js';
import { createCA, issueCert, writePemFile } from '../../src/util/pki.js';
import { startApiserver } from '../helpers/apiserver.js';
import { connectClient, eventually } from '../helpers/rest-client.js';

const dir = await mkdtemp(join(tmpdir(), 'corectl-proxy-'));
// The node CA: signs the agent's serving certificate and the API server's client certificate.
const nodeCa = await createCA({ commonName: 'node-ca' });
const apiClient = await issueCert({ ca: nodeCa, commonName: 'kube-apiserver-kubelet-client', organizations: ['system:masters'], usages: 'client' });
const agentServing = await issueCert({ ca: nodeCa, commonName: 'node-a', dnsNames: ['node-a', 'localhost'], ips: ['127.0.0.1'], usages: 'server' });
const f = {
  ca: join(dir, 'node-ca.crt'), clientCert: join(dir, 'apiserver-client.crt'), clientKey: join(dir, 'apiserver-client.key'),
  servingCert: join(dir, 'agent.crt'), servingKey: join(dir, 'agent.key'),
};
await Promise.all([
  writePemFile(f.ca, nodeCa.certPem), writePemFile(f.clientCert, apiClient.certPem), writePemFile(f.clientKey, apiClient.keyPem),
  writePemFile(f.servingCert, agentServing.certPem), writePemFile(f.servingKey, agentServing.keyPem),
]);

const api = await startApiserver({
  args: [
    `--nodeagent-client-certificate=${f.clientCert}`, `--nodeagent-client-key=${f.clientKey}`,
    `--nodeagent-certificate-authority=${f.ca}`, '--nodeagent-preferred-address-types=InternalIP',
    // The node agent here listens on loopback only.
    '--nodeagent-allow-loopback=true',
  ],
});
const client = new RestClient({ connection: await loadCoreconfig({ path: api.coreconfigPath }), contentType: 'application/json' });
const raw = await connectClient(api);
let agent: NodeAgent | undefined;
t.teardown(async () => {
  await agent?.stop({ stopPods: true }).catch(() => undefined);
  raw.close();
  client.close();
  await api.stop();
  await rm(dir, { recursive: true, force: true });
});

const root = join(dir, 'node-a');
const { config } = parseNodeagentArgs([
  '--container-runtime=fake', `--coreconfig=${api.coreconfigPath}`, '--hostname-override=node-a', `--root-dir=${root}`,
  `--cert-dir=${join(root, 'pki')}`, '--port=0', '--read-only-port=0', '--healthz-port=0', '--fail-swap-on=false',
  '--address=127.0.0.1', '--node-ip=127.0.0.1', '--node-status-update-frequency=1s', '--resolv-conf=', '--event-qps=0',
  '--core-api-qps=50', '--core-api-burst=100', `--client-ca-file=${f.ca}`, `--tls-cert-file=${f.servingCert}`,
  `--tls-private-key-file=${f.servingKey}`, '--anonymous-auth=false', '--enable-manifest-api=true',
]);
agent = await startNodeAgent(config, { podLogDir: join(root, 'logs'), relistPeriodMs: 100, leaseRenewIntervalMs: 300, skipProcessTweaks: true });
const agentPort = agent.listeners?.securePort ?? 0;

const PODS = { group: '', version: 'v1', resource: 'pods', namespace: 'default' };
const logPath = (pod: string, q = ''): string => `/api/v1/namespaces/default/pods/${pod}/log${q ? '?' + q : ''}`;

function pod(name: string, containers: Array<{ name: string; stdout?: string }>, nodeName = 'node-a'): KubeObject {
  return {
    apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'default' },
    spec: {
      ...(nodeName ? { nodeName } : {}), terminationGracePeriodSeconds: 1,
      containers: containers.map((c) => ({
        name: c.name, image: 'localhost/busybox:latest', imagePullPolicy: 'IfNotPresent',
        ...(c.stdout ? { env: [{ name: 'FAKE_STDOUT', value: c.stdout }] } : {}),
      })),
    },
  };
}

async function running(name: string): Promise<Pod> {
  return eventually(async () => {
    const p = await client.get<Pod>(PODS, name);
    return p.status?.phase === 'Running' && p.status.containerStatuses?.every((c) => c.ready) ? p : undefined;
  }, 20_000);
}

await client.create(PODS, pod('p', [{ name: 'main', stdout: 'one\ntwo\nthree\n' }]));
const p = await running('p');
// The fake runtime writes FAKE_STDOUT asynchronously: wait until all of it is readable.
await eventually(async () => (await raw.request('GET', logPath('p'))).body.toString() === 'one\ntwo\nthree\n');

t.test('GET pods/log returns the container log as text/plain', async (t) => {
  const r = await raw.request('GET', logPath('p'), { accept: '*/*' });
  t.equal(r.status, 200);
  t.match(String(r.headers['content-type']), /^text\/plain/);
  t.equal(r.body.toString(), 'one\ntwo\nthree\n');
  const named = await raw.request('GET', logPath('p', 'container=main'));
  t.equal(named.body.toString(), 'one\ntwo\nthree\n');
});

t.test('tailLines, timestamps and limitBytes are honoured', async (t) => {
  t.equal((await raw.request('GET', logPath('p', 'tailLines=1'))).body.toString(), 'three\n');
  const ts = (await raw.request('GET', logPath('p', 'timestamps=true&tailLines=2'))).body.toString().split('\n').filter(Boolean);
  t.equal(ts.length, 2);
  t.match(ts[0], /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z two$/);
  t.equal((await raw.request('GET', logPath('p', 'limitBytes=5'))).body.toString(), 'one\nt');
  const bad = await raw.request('GET', logPath('p', 'tailLines=-1'));
  t.equal(bad.status, 422);
  t.equal(bad.json.reason, 'Invalid');
});

function followSockets(): Socket[] {
  const handles = (process as unknown as { _getActiveHandles(): unknown[] })._getActiveHandles();
  return handles.filter((h): h is Socket => {
    const s = h as Socket & { _httpMessage?: { path?: string } };
    return s.remotePort === agentPort && !s.destroyed && String(s._httpMessage?.path ?? '').includes('follow=true');
  });
}

t.test('follow=true delivers later lines and ends upstream when the client goes away', async (t) => {
  const stream = raw.stream(logPath('p', 'follow=true'), '*/*');
  t.equal(await stream.status(), 200);
  t.equal(await stream.next(), 'one');
  t.equal(await stream.next(), 'two');
  t.equal(await stream.next(), 'three');
  const id = (p.status?.containerStatuses?.[0]?.containerID ?? '').replace(/^fake:\/\//, '');
  const file = (await agent!.runtime.containerStatus(id)).logPath;
  await appendFile(file, formatCriLogRecord(new Date(), 'stdout', false, 'written later'));
  t.equal(await stream.next(), 'written later');
  t.equal(followSockets().length, 1, 'one open request to the node agent');
  stream.close();
  await eventually(async () => followSockets().length === 0);
  t.pass('the request to the node agent ended');
});

t.test('several containers: a container must be named; unknown names are refused', async (t) => {
  await client.create(PODS, pod('two', [{ name: 'a', stdout: 'from a\n' }, { name: 'b', stdout: 'from b\n' }]));
  const r = await raw.request('GET', logPath('two'));
  t.equal(r.status, 400);
  t.equal(r.json.reason, 'BadRequest');
  t.equal(r.json.message, 'a container name must be specified for pod two, choose one of: [a b]');
  const bad = await raw.request('GET', logPath('two', 'container=zz'));
  t.equal(bad.status, 400);
  t.equal(bad.json.message, 'container zz is not valid for pod two');
  await running('two');
  const b = await eventually(async () => { const x = await raw.request('GET', logPath('two', 'container=b')); return x.body.toString() === 'from b\n' ? x : undefined; });
  t.equal(b.status, 200);
});

t.test('an unbound pod is a 400; a missing pod a 404', async (t) => {
  await client.create(PODS, pod('pending', [{ name: 'main' }], ''));
  const r = await raw.request('GET', logPath('pending'));
  t.equal(r.status, 400);
  t.equal(r.json.message, 'pod pending does not have a host assigned');
  const missing = await raw.request('GET', logPath('nope'));
  t.equal(missing.status, 404);
  t.equal(missing.json.message, 'pods "nope" not found');
});

t.test('nodes/NAME/proxy reaches the node agent', async (t) => {
  const hz = await raw.request('GET', '/api/v1/nodes/node-a/proxy/healthz', { accept: '*/*' });
  t.equal(hz.status, 200);
  t.equal(hz.body.toString(), 'ok');
  const pods = await raw.request('GET', '/api/v1/nodes/node-a/proxy/pods');
  t.equal(pods.status, 200);
  t.equal(pods.json.kind, 'PodList');
  t.ok(pods.json.items.some((x: KubeObject) => x.metadata?.name === 'p'));
  const stats = await raw.request('GET', '/api/v1/nodes/node-a/proxy/stats/summary');
  t.equal(stats.status, 200);
  t.equal(stats.json.node.nodeName, 'node-a');
  const put = await raw.request('PUT', '/api/v1/nodes/node-a/proxy/manifests', { body: {} });
  t.equal(put.status, 405, 'the agent\'s own answer to a method its path does not take');
  t.match(put.json?.message, /PUT is not allowed here/);
  // Other methods and their bodies go through: the agent's manifest API, by POST and DELETE.
  const manifest = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'via-proxy', namespace: 'default' }, spec: { containers: [{ name: 'c', image: 'localhost/busybox:latest' }] } };
  const created = await raw.request('POST', '/api/v1/nodes/node-a/proxy/manifests', { body: manifest });
  t.equal(created.status, 201, JSON.stringify(created.json));
  t.equal(created.json.metadata.name, 'via-proxy-node-a', 'the body reached the agent');
  const listed = await raw.request('GET', '/api/v1/nodes/node-a/proxy/manifests');
  t.ok(listed.json.items.some((x: KubeObject) => x.metadata?.name === 'via-proxy-node-a'));
  const removed = await raw.request('DELETE', '/api/v1/nodes/node-a/proxy/manifests/default/via-proxy');
  t.equal(removed.status, 200);
  t.equal((await raw.request('OPTIONS', '/api/v1/nodes/node-a/proxy/healthz')).status, 405, 'OPTIONS is not passed on');
  const none = await raw.request('GET', '/api/v1/nodes/ghost/proxy/healthz');
  t.equal(none.status, 404);
});

// The metrics server end to end without containerd: an API server with the front proxy and
// aggregator routing, the metrics server in-process (registering its Service, Endpoints and
// APIService), a fake node agent serving kubelet's /metrics/resource with counters that grow
// at a known rate, and kubectl 1.33 top node / top pod --containers reading through the
// aggregation layer; a user without access is refused by the API server.
import * as https from 'node:https';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import t from 'tap';
import { loadCoreconfig } from '../../src/client/coreconfig.js';
import { RestClient } from '../../src/client/rest-client.js';
import { startMetricsServer } from '../../src/daemons/metrics-server/server.js';
import { createCA, createSelfSignedServing, issueCert, writePemFile } from '../../src/util/pki.js';
import { startApiserver } from '../helpers/apiserver.js';
import { kubectl } from '../helpers/kubectl.js';
import { kubectlRunner } from '../helpers/kubectl-run.js';
import { waitFor } from '../helpers/wait-for.js';

const bin = kubectl(33);
const hostIp = Object.values(networkInterfaces()).flat().find((a) => a && a.family === 'IPv4' && !a.internal)?.address;

/** A node agent's /metrics/resource: node 0.5 cores, container app 0.25 cores, sidecar 0.05 cores. */
async function fakeAgent(): Promise<{ port: number; close(): Promise<void> }> {
  const pair = await createSelfSignedServing({ host: 'agent', dnsNames: ['localhost'], ips: ['127.0.0.1'] });
  const t0 = Date.now();
  const server = https.createServer({ cert: pair.certPem, key: pair.keyPem }, (req, res) => {
    if (req.url !== '/metrics/resource') { res.writeHead(404).end(); return; }
    const now = Date.now();
    const s = (now - t0) / 1000;
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
    res.end([
      `node_cpu_usage_seconds_total ${1000 + 0.5 * s} ${now}`,
      `node_memory_working_set_bytes ${512 * 1024 * 1024} ${now}`,
      `container_cpu_usage_seconds_total{container="app",namespace="shop",pod="web"} ${10 + 0.25 * s} ${now}`,
      `container_memory_working_set_bytes{container="app",namespace="shop",pod="web"} ${64 * 1024 * 1024} ${now}`,
      `container_cpu_usage_seconds_total{container="sidecar",namespace="shop",pod="web"} ${1 + 0.05 * s} ${now}`,
      `container_memory_working_set_bytes{container="sidecar",namespace="shop",pod="web"} ${8 * 1024 * 1024} ${now}`,
      '',
    ].join('\n'));
  });
  await new Promise<void>((r) => server.listen(0, '0.0.0.0', r));
  return { port: (server.address() as AddressInfo).port, async close() { server.closeAllConnections(); await new Promise((r) => server.close(r)); } };
}

const near = (text: string, re: RegExp): number => Number(re.exec(text)?.[1] ?? NaN);

t.test('kubectl top node and top pod --containers through the metrics server', { skip: !bin ? 'kubectl.1.33 not installed' : !hostIp ? 'no non-loopback IPv4 address' : false }, async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'metrics-server-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const frontCa = await createCA({ commonName: 'front-proxy-ca' });
  const proxyClient = await issueCert({ ca: frontCa, commonName: 'front-proxy-client', usages: 'client' });
  const files = { ca: join(dir, 'front-ca.crt'), cert: join(dir, 'front-client.crt'), key: join(dir, 'front-client.key') };
  await Promise.all([writePemFile(files.ca, frontCa.certPem), writePemFile(files.cert, proxyClient.certPem), writePemFile(files.key, proxyClient.keyPem)]);
  const a = await startApiserver({ args: [
    '--authorization-mode=RBAC', '--enable-aggregator-routing=true', `--requestheader-client-ca-file=${files.ca}`,
    '--requestheader-allowed-names=front-proxy-client', '--requestheader-username-headers=X-Remote-User',
    '--requestheader-group-headers=X-Remote-Group', '--requestheader-extra-headers-prefix=X-Remote-Extra-',
    `--proxy-client-cert-file=${files.cert}`, `--proxy-client-key-file=${files.key}`,
  ] });
  t.teardown(() => a.stop());
  const k = kubectlRunner(bin!, a.coreconfigPath, join(a.dir, 'kcache'));
  const agent = await fakeAgent();
  t.teardown(() => agent.close());

  await k.ok(t, ['create', 'namespace', 'shop']);
  await k.ok(t, ['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [
    { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1', labels: { tier: 'gold' } } },
    { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web', namespace: 'shop', labels: { app: 'web' } },
      spec: { nodeName: 'n1', containers: [{ name: 'app', image: 'busybox' }, { name: 'sidecar', image: 'busybox' }] } },
  ] }));
  await k.ok(t, ['patch', 'node', 'n1', '--subresource=status', '--type=merge', '-p', JSON.stringify({ status: {
    addresses: [{ type: 'InternalIP', address: hostIp }], daemonEndpoints: { kubeletEndpoint: { Port: agent.port } },
    capacity: { cpu: '2', memory: '2Gi', pods: '10' }, allocatable: { cpu: '2', memory: '2Gi', pods: '10' },
  } })]);

  const client = new RestClient({ connection: await loadCoreconfig({ path: a.coreconfigPath }), contentType: 'application/json', userAgent: 'metrics-test' });
  t.teardown(() => client.close());
  const ms = await startMetricsServer({
    client, log: pino({ level: 'silent' }), agentTls: { insecure: true }, addressTypes: ['InternalIP'], resolutionMs: 1000,
    bindAddress: '0.0.0.0', port: 0, register: true, advertiseAddress: hostIp!,
  });
  t.teardown(() => ms.stop());

  await waitFor('v1beta1.metrics.k8s.io available', async () => /metrics-server\s+True/.test((await k.run(['get', 'apiservice', 'v1beta1.metrics.k8s.io'])).stdout));
  const nodes = await waitFor('kubectl top node', async () => {
    const r = await k.run(['top', 'node']);
    if (r.code !== 0) throw new Error(r.stderr);
    return r.stdout;
  }, 30_000);
  t.match(nodes, /^NAME\s+CPU\(cores\)\s+CPU(%|\(%\))\s+MEMORY\(bytes\)\s+MEMORY(%|\(%\))/m, 'kubectl\'s columns');
  const nodeCpu = near(nodes, /^n1\s+(\d+)m/m);
  t.ok(nodeCpu >= 400 && nodeCpu <= 600, `node CPU near 500m (got ${nodeCpu}m)`);
  t.match(nodes, /^n1\s+\d+m\s+2\d%\s+512Mi\s+25%/m, 'percent of allocatable, memory 512Mi');
  t.match(await k.ok(t, ['top', 'node', '-l', 'tier=gold']), /^n1\s/m, 'label selector on nodes');

  const pods = await waitFor('kubectl top pod --containers', async () => {
    const r = await k.run(['top', 'pod', '-n', 'shop', '--containers']);
    if (r.code !== 0) throw new Error(r.stderr);
    return r.stdout;
  }, 30_000);
  t.match(pods, /^POD\s+NAME\s+CPU\(cores\)\s+MEMORY\(bytes\)/m);
  const app = near(pods, /^web\s+app\s+(\d+)m/m);
  t.ok(app >= 200 && app <= 300, `container app near 250m (got ${app}m)`);
  t.match(pods, /^web\s+app\s+\d+m\s+64Mi/m);
  t.match(pods, /^web\s+sidecar\s+\d+m\s+8Mi/m);
  const total = await k.ok(t, ['top', 'pod', '-n', 'shop', '-l', 'app=web']);
  t.match(total, /^web\s+\d+m\s+72Mi/m, 'a pod\'s total is the sum of its containers');

  // Straight to the metrics server, identity headers count for nothing without the front proxy's certificate.
  const forged = { 'x-remote-user': 'admin', 'x-remote-group': 'system:masters' };
  const direct = (cert?: { certPem: string; keyPem: string }): Promise<number> => new Promise((resolve, reject) => {
    https.get(`https://127.0.0.1:${ms.port}/apis/metrics.k8s.io/v1beta1/nodes`, { rejectUnauthorized: false, headers: forged, ...(cert ? { cert: cert.certPem, key: cert.keyPem } : {}) }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    }).on('error', reject);
  });
  t.equal(await direct(), 401, 'no client certificate: 401');
  t.equal(await direct(await a.issueClient('front-proxy-client')), 401, 'a certificate of the cluster CA (not the front-proxy CA), even named front-proxy-client: 401');
  t.equal(await direct(await issueCert({ ca: frontCa, commonName: 'someone-else', usages: 'client' })), 401, 'the front-proxy CA but a name not in requestheader-allowed-names: 401');
  t.equal(await direct(proxyClient), 200, 'the front proxy\'s own certificate: served');

  // Nobody's metrics without permission: refused at the API server.
  const bob = await a.issueClient('bob');
  const b64 = (s: string): string => Buffer.from(s).toString('base64');
  const bobConfig = join(dir, 'bob.conf');
  await writeFile(bobConfig, ['apiVersion: v1', 'kind: Config', 'current-context: c', 'clusters:', '- name: c', '  cluster:', `    server: ${a.url}`,
    `    certificate-authority-data: ${b64(a.ca.certPem)}`, 'users:', '- name: u', '  user:', `    client-certificate-data: ${b64(bob.certPem)}`,
    `    client-key-data: ${b64(bob.keyPem)}`, 'contexts:', '- name: c', '  context:', '    cluster: c', '    user: u', ''].join('\n'));
  const refused = await kubectlRunner(bin!, bobConfig, join(dir, 'kcache-bob')).run(['top', 'pod', '-n', 'shop']);
  t.not(refused.code, 0);
  t.match(refused.stderr, /forbidden/i, 'bob may not read pod metrics');
});

// `corectl server` runs a metrics server in-process: the front-proxy PKI is made, the API server
// gets the aggregation options, and the metrics server registers v1beta1.metrics.k8s.io, which
// becomes Available and answers through the API server (kubectl 1.33). With the fake runtime
// the node agent has no CPU figures, so only the API's presence is checked here (kubectl top
// with real figures is test/e2e/metrics-hpa.test.ts).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { kubectl as kubectlBinary } from '../helpers/kubectl.js';
import { freePort, startServer } from '../helpers/corectl-server.js';
import { waitFor } from '../helpers/wait-for.js';

const kubectl = kubectlBinary(33);
const hostIp = Object.values(networkInterfaces()).flat().find((a) => a && a.family === 'IPv4' && !a.internal)?.address;

t.test('the in-process metrics server is registered and served through the aggregation layer', { skip: !kubectl ? 'kubectl.1.33 not installed' : !hostIp ? 'no non-loopback IPv4 address' : false }, async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-server-metrics-'));
  const dataDir = join(dir, 'data');
  const s = startServer([
    `--data-dir=${dataDir}`, '--bind-address=0.0.0.0', `--advertise-address=${hostIp}`, `--secure-port=${await freePort()}`, '--node-name=metrics-test',
    '--container-runtime=fake', `--nodeagent-arg=--port=${await freePort()}`, '--nodeagent-arg=--healthz-port=0', '--disable-cluster-dns',
  ]);
  t.teardown(async () => { await s.stop(); await rm(dir, { recursive: true, force: true }); });
  await s.waitFor(/corectl: metrics-server started on port \d+/, 60_000);
  t.ok(existsSync(join(dataDir, 'pki', 'front-proxy-ca.crt')) && existsSync(join(dataDir, 'pki', 'front-proxy-client.key')), 'front-proxy PKI written');
  const admin = join(dataDir, 'admin.coreconfig');
  const kc = (args: string[]): { code: number | null; out: string; err: string } => {
    const r = spawnSync(kubectl!, ['--kubeconfig', admin, ...args], { encoding: 'utf8', timeout: 30_000 });
    return { code: r.status, out: r.stdout, err: r.stderr };
  };
  const line = await waitFor('v1beta1.metrics.k8s.io Available', () => {
    const r = kc(['get', 'apiservice', 'v1beta1.metrics.k8s.io', '--no-headers']);
    return /kube-system\/metrics-server\s+True/.test(r.out) ? r.out : undefined;
  }, 30_000);
  t.match(line, /^v1beta1\.metrics\.k8s\.io\s+kube-system\/metrics-server\s+True/);
  const nodes = kc(['get', '--raw', '/apis/metrics.k8s.io/v1beta1/nodes']);
  t.equal(nodes.code, 0, nodes.err);
  t.equal(JSON.parse(nodes.out).kind, 'NodeMetricsList', 'the metrics API answers through the API server');
  t.match(kc(['api-resources', '--api-group=metrics.k8s.io']).out, /pods\s+metrics\.k8s\.io\/v1beta1\s+true\s+PodMetrics/, 'discovery lists it');
});

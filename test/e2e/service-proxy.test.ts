// The service proxy end to end: `corectl server` (a real process) on the private containerd of
// `make up`, kubectl 1.33. A busybox httpd Deployment behind a NodePort Service answers
// `wget http://<clusterIP>` from another pod and the NodePort from the host (the test process,
// in the host's network namespace); ClientIP affinity keeps the client on one of three pods;
// scaled to 0 the connection is refused at once (reject, not a hang); scaled back it answers
// again. The server's proxy programs the host's nftables here (a table of its own, a name of
// this test's, a service range no other test uses): the test checks that the table is gone
// once the server stopped, and deletes it if not.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { kubectl } from '../helpers/kubectl.js';
import { freePort, startServer } from '../helpers/corectl-server.js';
import { containerdSkipReason } from '../helpers/containerd.js';
import { netnsSkipReason } from '../helpers/netns.js';
import { waitFor } from '../helpers/wait-for.js';

const bin = kubectl(33);
const skip = !bin ? 'kubectl.1.33 not installed' : (containerdSkipReason() || netnsSkipReason());
const hostIp = Object.values(networkInterfaces()).flat().find((a) => a && a.family === 'IPv4' && !a.internal)?.address;

t.test('a ClusterIP and a NodePort route to a busybox httpd Deployment', { skip: skip || (hostIp ? false : 'no non-loopback IPv4 address for the NodePort'), timeout: 300_000 }, async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-svcproxy-'));
  const table = `corectl-proxy-e2e-${randomBytes(3).toString('hex')}`;
  const cd = spawnSync(process.execPath, ['scripts/containerd-setup.mjs', 'up', join(dir, 'containerd')], { encoding: 'utf8', timeout: 120_000, env: { ...process.env, NODE_OPTIONS: '' } });
  if (cd.status !== 0) throw new Error(`containerd-setup up failed: ${cd.stderr}`);
  const server = startServer([
    `--data-dir=${join(dir, 'data')}`, '--bind-address=127.0.0.1', `--secure-port=${await freePort()}`, '--node-name=proxy-node',
    `--container-runtime-endpoint=${cd.stdout.trim()}`, '--nodeagent-arg=--pod-infra-container-image=localhost/pause:busybox',
    `--nodeagent-arg=--port=${await freePort()}`, '--nodeagent-arg=--healthz-port=0',
    '--apiserver-arg=--service-cluster-ip-range=10.96.77.0/24', `--proxy-arg=--nft-table=${table}`, '--proxy-arg=--min-sync-period=0s',
  ]);
  const tableExists = (): boolean => spawnSync('nft', ['list', 'table', 'ip', table], { stdio: 'ignore' }).status === 0;
  t.teardown(async () => {
    await server.stop();
    if (tableExists()) spawnSync('nft', ['delete', 'table', 'ip', table]);
    spawnSync(process.execPath, ['scripts/containerd-setup.mjs', 'down', join(dir, 'containerd')], { timeout: 120_000, env: { ...process.env, NODE_OPTIONS: '' } });
    await rm(dir, { recursive: true, force: true });
  });
  await server.waitFor(/proxy started/, 60_000);
  await server.waitFor(/node proxy-node Ready/, 90_000);
  const env = { ...process.env, KUBECONFIG: join(dir, 'data', 'admin.coreconfig') };
  const k = (...args: string[]): string => {
    const r = spawnSync(bin!, args, { env, encoding: 'utf8', timeout: 90_000 });
    if (r.status !== 0) throw new Error(`kubectl ${args.join(' ')} failed (${r.status}): ${r.stderr}`);
    return r.stdout;
  };
  await waitFor('the default service account', () => { try { return k('get', 'serviceaccount', 'default', '-o', 'name'); } catch { return false; } }, 60_000);
  const image = 'localhost/busybox:static';
  k('create', 'deployment', 'web', `--image=${image}`, '--port=8080', '--', 'sh', '-c', 'mkdir -p /www && echo "hello from $(hostname)" > /www/index.html && exec httpd -f -p 8080 -h /www');
  k('expose', 'deployment', 'web', '--port=80', '--target-port=8080', '--type=NodePort');
  k('run', 'client', `--image=${image}`, '--restart=Never', '--', 'sleep', '3600');
  k('wait', '--for=condition=Available', 'deployment/web', '--timeout=120s');
  k('wait', '--for=condition=Ready', 'pod/client', '--timeout=120s');
  const svc = JSON.parse(k('get', 'service', 'web', '-o', 'json')) as { spec: { clusterIP: string; ports: Array<{ nodePort: number }> } };
  const clusterIp = svc.spec.clusterIP;
  const nodePort = svc.spec.ports[0]?.nodePort;
  t.match(clusterIp, /^10\.96\.77\./);
  const wget = (): { code: number | null; out: string; err: string } => {
    // busybox's timeout, not wget -T (the static busybox 1.35 wget crashes on -T).
    const r = spawnSync(bin!, ['exec', 'client', '--', 'timeout', '20', 'wget', '-qO-', `http://${clusterIp}`], { env, encoding: 'utf8', timeout: 60_000 });
    return { code: r.status, out: r.stdout, err: r.stderr };
  };

  const page = await waitFor('the ClusterIP to answer from the client pod', () => { const r = wget(); return r.code === 0 && r.out; }, 60_000);
  t.match(page, /^hello from web-/, 'the client pod gets the page through the ClusterIP');
  const viaNodePort = await waitFor('the NodePort to answer from the host', async () => {
    const res = await fetch(`http://${hostIp}:${nodePort}/`, { signal: AbortSignal.timeout(10_000) });
    return res.ok && (await res.text());
  }, 60_000);
  t.match(viaNodePort, /^hello from web-/, 'the host gets the page through the NodePort');

  k('scale', 'deployment', 'web', '--replicas=3');
  k('wait', '--for=condition=Available', 'deployment/web', '--timeout=120s');
  await waitFor('three endpoints', () => (JSON.parse(k('get', 'endpointslices', '-l', 'kubernetes.io/service-name=web', '-o', 'json')) as { items: Array<{ endpoints?: Array<{ conditions?: { ready?: boolean } }> }> })
    .items.flatMap((i) => i.endpoints ?? []).filter((e) => e.conditions?.ready).length === 3, 60_000);
  k('patch', 'service', 'web', '-p', '{"spec":{"sessionAffinity":"ClientIP"}}');
  await waitFor('the affinity sets', () => (spawnSync('nft', ['list', 'table', 'ip', table], { encoding: 'utf8' }).stdout.match(/set aff_default_web_/g) ?? []).length === 3, 30_000);
  const hosts = new Set<string>();
  for (let i = 0; i < 8; i++) {
    const r = wget();
    if (r.code !== 0) throw new Error(`wget through the ClusterIP failed: ${r.err}`);
    hosts.add(r.out.trim());
  }
  t.equal(hosts.size, 1, `ClientIP affinity keeps the client on one of 3 endpoints (${[...hosts].join(', ')})`);

  // The pod serves while it terminates (httpd as PID 1 ignores SIGTERM): kube-proxy keeps
  // using a serving, terminating endpoint when no other is ready, so refusal comes once it is gone.
  k('scale', 'deployment', 'web', '--replicas=0');
  const refused = await waitFor('the connection to be refused', () => { const r = wget(); return r.code !== 0 && /refused/i.test(r.err) && r.err; }, 90_000);
  t.match(refused, /Connection refused/, 'no endpoints: refused at once (reject), not a timeout');
  await t.rejects(fetch(`http://${hostIp}:${nodePort}/`, { signal: AbortSignal.timeout(15_000) }), { cause: { code: 'ECONNREFUSED' } }, 'the NodePort is refused too');

  k('scale', 'deployment', 'web', '--replicas=1');
  const back = await waitFor('the ClusterIP to answer again', () => { const r = wget(); return r.code === 0 && r.out; }, 120_000);
  t.match(back, /^hello from web-/, 'scaled back: answers again');

  t.ok(tableExists(), 'the proxy table exists while the server runs');
  await server.stop();
  t.notOk(tableExists(), 'the server removed its proxy table when it stopped');
});

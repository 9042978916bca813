/**
 * `corectl server` on containerd (skipped unless root with containerd and kubectl 1.33), bound
 * to the host's own address: a busybox pod started with kubectl gets the cluster DNS in its
 * resolv.conf (the kube-dns Service's 10.0.0.10 when the service proxy runs, so the query goes
 * through it; the node's address when it does not), resolves the API server's service through
 * the search path, and finds it in its environment (KUBERNETES_SERVICE_HOST).
 */
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { kubectl } from '../helpers/kubectl.js';
import { freePort, startServer } from '../helpers/corectl-server.js';
import { containerdSkipReason } from '../helpers/containerd.js';
import { waitFor } from '../helpers/wait-for.js';

const bin = kubectl(33);
const noContainerd = containerdSkipReason();
const hostIp = Object.values(networkInterfaces()).flatMap((l) => l ?? []).find((a) => a.family === 'IPv4' && !a.internal)?.address;
const skip = !bin ? 'kubectl.1.33 not installed' : noContainerd ? `containerd: ${noContainerd}` : !hostIp ? 'no non-loopback IPv4 address' : false;

t.test('a pod resolves cluster names through corectl server\'s DNS', { skip, timeout: 300_000 }, async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-dns-e2e-'));
  const dataDir = join(dir, 'data');
  const cdDir = join(dir, 'containerd');
  const env = { ...process.env, NODE_OPTIONS: '' };
  const up = spawnSync(process.execPath, ['scripts/containerd-setup.mjs', 'up', cdDir], { encoding: 'utf8', timeout: 120_000, env });
  if (up.status !== 0) throw new Error(`containerd-setup up failed: ${up.stderr}`);
  const table = `corectl-proxy-dns-${process.pid}`;
  const server = startServer([
    `--proxy-arg=--nft-table=${table}`, `--data-dir=${dataDir}`, `--bind-address=${hostIp}`, `--secure-port=${await freePort()}`, '--node-name=dns-e2e',
    `--container-runtime-endpoint=${up.stdout.trim()}`, '--nodeagent-arg=--pod-infra-container-image=localhost/pause:busybox',
    `--nodeagent-arg=--port=${await freePort()}`, '--nodeagent-arg=--healthz-port=0',
  ]);
  t.teardown(async () => {
    await server.stop();
    spawnSync(process.execPath, ['scripts/containerd-setup.mjs', 'down', cdDir], { timeout: 120_000, env });
    await rm(dir, { recursive: true, force: true });
  });
  const kc = (...args: string[]): { code: number | null; out: string } => {
    const r = spawnSync(bin ?? 'kubectl', ['--kubeconfig', join(dataDir, 'admin.coreconfig'), ...args], { encoding: 'utf8', timeout: 60_000 });
    return { code: r.status, out: r.stdout + r.stderr };
  };
  const line = await server.waitFor(/corectl: cluster DNS/, 90_000);
  // With the service proxy (root, nft) pods ask the kube-dns Service, else the node itself.
  const proxied = !server.lines.some((l) => /proxy off/.test(l));
  const nameserver = proxied ? '10.0.0.10' : hostIp!;
  t.match(line, new RegExp(`cluster DNS on ${hostIp?.replace(/\./g, '\\.')}:53 .*pods' resolv\\.conf names ${nameserver.replace(/\./g, '\\.')}`), line);
  await server.waitFor(/corectl: node dns-e2e Ready/, 90_000);
  await waitFor('the default service account', () => kc('get', 'serviceaccount', 'default').code === 0, 60_000);
  // Pods ask 10.0.0.10 only once the proxy has programmed the kube-dns Service (a pod started
  // before would find no DNS, as on Kubernetes before kube-proxy's first sync).
  if (proxied) await waitFor('the proxy\'s rules for kube-dns', () => /10\.0\.0\.10/.test(spawnSync('nft', ['list', 'table', 'ip', table], { encoding: 'utf8' }).stdout ?? ''), 60_000);
  const script = 'cat /etc/resolv.conf; echo ======; nslookup kubernetes; echo ======; ping -c 1 -W 1 kubernetes.default; echo ======; env | grep ^KUBERNETES_SERVICE_HOST=';
  const run = kc('run', 'dnsclient', '--image=localhost/busybox:latest', '--image-pull-policy=IfNotPresent', '--restart=Never', '--command', '--', 'sh', '-c', script);
  t.equal(run.code, 0, run.out);
  await waitFor('the pod finished', () => /Succeeded|Failed/.test(kc('get', 'pod', 'dnsclient', '-o', 'jsonpath={.status.phase}').out), 90_000);
  const logs = kc('logs', 'dnsclient').out;
  const [conf = '', short = '', ping = '', envOut = ''] = logs.split('======\n');
  t.match(conf, new RegExp(`nameserver ${nameserver.replace(/\./g, '\\.')}\\n`), `resolv.conf names ${proxied ? 'the kube-dns Service' : 'the node\'s address'}`);
  t.match(conf, /search default\.svc\.cluster\.local svc\.cluster\.local cluster\.local/);
  t.match(conf, /options ndots:5/);
  t.match(short, /Name:\s+kubernetes\.default\.svc\.cluster\.local\s+Address:\s+10\.0\.0\.1/, `nslookup kubernetes (${short})`);
  t.match(ping, /PING kubernetes\.default \(10\.0\.0\.1\)/, `kubernetes.default through the search path (${ping})`);
  t.match(envOut, /^KUBERNETES_SERVICE_HOST=10\.0\.0\.1$/m, 'the API server\'s service in the environment');
  const svc = kc('get', 'service', 'kube-dns', '-n', 'kube-system', '-o', 'jsonpath={.spec.clusterIP}');
  t.equal(svc.out, '10.0.0.10', 'the kube-dns Service');
  const slice = kc('get', 'endpointslices', '-n', 'kube-system', '-l', 'kubernetes.io/service-name=kube-dns', '-o', 'jsonpath={.items[0].endpoints[0].addresses[0]}:{.items[0].ports[0].port}');
  t.equal(slice.out, `${hostIp}:53`, 'its EndpointSlice points at the node\'s DNS');
});

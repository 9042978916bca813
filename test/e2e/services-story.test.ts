/**
 * Issue 34's Done-when as one story, on `corectl server` (a real process) with a private
 * containerd of the test helpers (a pod subnet claimed under a lock, so that test files running
 * at once never share one) and kubectl 1.33, bound to the host's own address (so that the
 * kubernetes Service's endpoint is reachable from pods):
 *  - a `backend` Deployment (busybox httpd) behind a ClusterIP Service answers a client pod's
 *    `wget http://backend`, `http://backend.default.svc.cluster.local` and the ClusterIP, and a
 *    NodePort Service of the same pods answers the host;
 *  - an in-cluster client reaches the API server through the injected
 *    KUBERNETES_SERVICE_HOST/PORT with its service account token;
 *  - `nslookup kubernetes.default` works in a pod (a dnsutils image, see dnsutils-image.ts), and
 *    a headless StatefulSet's pods resolve by their stable names from inside a pod;
 *  - ClientIP affinity keeps the client on one of three backends;
 *  - scaled to 0, the connection is refused at once (reject, not a hang); scaled back, it answers.
 * The proxy programs the host's nftables in a table named by this test, for a service range no
 * other test uses; the table is removed when the server stops.
 */
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { kubectl } from '../helpers/kubectl.js';
import { freePort, startServer } from '../helpers/corectl-server.js';
import { containerdSkipReason, startContainerd } from '../helpers/containerd.js';
import { netnsSkipReason } from '../helpers/netns.js';
import { waitFor } from '../helpers/wait-for.js';
import { DNSUTILS_IMAGE, dnsutilsSkipReason, writeDnsutilsImageTar } from './dnsutils-image.js';

const bin = kubectl(33);
const hostIp = Object.values(networkInterfaces()).flatMap((l) => l ?? []).find((a) => a.family === 'IPv4' && !a.internal)?.address;
const skip = !bin ? 'kubectl.1.33 not installed'
  : containerdSkipReason() || netnsSkipReason() || dnsutilsSkipReason() || (hostIp ? false : 'no non-loopback IPv4 address');

const IMAGE = 'localhost/busybox:static';
const RANGE_PREFIX = '10.96.79.';

const manifests = `
apiVersion: apps/v1
kind: Deployment
metadata: { name: backend }
spec:
  replicas: 3
  selector: { matchLabels: { app: backend } }
  template:
    metadata: { labels: { app: backend } }
    spec:
      containers:
      - name: httpd
        image: ${IMAGE}
        command: [sh, -c, 'mkdir -p /www && echo "hello from $(hostname)" > /www/index.html && exec httpd -f -p 8080 -h /www']
        ports: [{ containerPort: 8080 }]
---
apiVersion: v1
kind: Service
metadata: { name: backend }
spec:
  selector: { app: backend }
  ports: [{ port: 80, targetPort: 8080 }]
---
apiVersion: v1
kind: Service
metadata: { name: backend-public }
spec:
  type: NodePort
  selector: { app: backend }
  ports: [{ port: 80, targetPort: 8080 }]
---
apiVersion: v1
kind: Service
metadata: { name: web }
spec:
  clusterIP: None
  selector: { app: web }
  ports: [{ name: http, port: 80 }]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: { name: web }
spec:
  serviceName: web
  replicas: 2
  selector: { matchLabels: { app: web } }
  template:
    metadata: { labels: { app: web } }
    spec:
      containers:
      - { name: web, image: ${IMAGE}, command: [sleep, '3600'] }
---
apiVersion: v1
kind: Pod
metadata: { name: client }
spec:
  containers:
  - { name: client, image: ${IMAGE}, command: [sleep, '3600'] }
---
apiVersion: v1
kind: Pod
metadata: { name: dnsutils }
spec:
  containers:
  - { name: dnsutils, image: ${DNSUTILS_IMAGE}, command: [sleep, '3600'] }
`;

t.test('services route: names, ClusterIPs, NodePorts, the API server, affinity, reject, stable names', { skip, timeout: 480_000 }, async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-story-'));
  const table = `corectl-proxy-story-${randomBytes(3).toString('hex')}`;
  const tableExists = (): boolean => spawnSync('nft', ['list', 'table', 'ip', table], { stdio: 'ignore' }).status === 0;
  let server: ReturnType<typeof startServer> | undefined;
  let cd: Awaited<ReturnType<typeof startContainerd>> | undefined;
  t.teardown(async () => {
    await server?.stop();
    if (tableExists()) spawnSync('nft', ['delete', 'table', 'ip', table]);
    await cd?.stop();
    await rm(dir, { recursive: true, force: true });
  });
  cd = await startContainerd();
  const ctr = (...args: string[]): void => {
    const r = spawnSync('ctr', ['-a', cd!.socketPath, '-n', 'k8s.io', ...args], { encoding: 'utf8', timeout: 120_000 });
    if (r.status !== 0) throw new Error(`ctr ${args.join(' ')}: ${r.stderr}`);
  };
  // As make up: busybox under a tag other than latest (no pull), and the dnsutils image.
  ctr('images', 'tag', '--force', 'localhost/busybox:latest', IMAGE);
  const tar = join(dir, 'dnsutils.oci.tar');
  await writeDnsutilsImageTar(tar);
  ctr('images', 'import', tar);

  server = startServer([
    `--data-dir=${join(dir, 'data')}`, `--bind-address=${hostIp}`, `--secure-port=${await freePort()}`, '--node-name=story-node',
    `--container-runtime-endpoint=${cd.endpoint}`, '--nodeagent-arg=--pod-infra-container-image=localhost/pause:busybox',
    `--nodeagent-arg=--port=${await freePort()}`, '--nodeagent-arg=--healthz-port=0', `--cluster-dns-port=${await freePort()}`,
    `--apiserver-arg=--service-cluster-ip-range=${RANGE_PREFIX}0/24`, `--proxy-arg=--nft-table=${table}`, '--proxy-arg=--min-sync-period=0s',
  ]);
  await server.waitFor(/proxy started/, 90_000);
  await server.waitFor(/node story-node Ready/, 120_000);
  const env = { ...process.env, KUBECONFIG: join(dir, 'data', 'admin.coreconfig') };
  const run = (args: string[], input?: string): { code: number | null; out: string; err: string } => {
    const r = spawnSync(bin!, args, { env, encoding: 'utf8', timeout: 90_000, ...(input ? { input } : {}) });
    return { code: r.status, out: r.stdout ?? '', err: r.stderr ?? '' };
  };
  const k = (...args: string[]): string => {
    const r = run(args);
    if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} failed (${r.code}): ${r.err}`);
    return r.out;
  };
  const nft = (): string => spawnSync('nft', ['list', 'table', 'ip', table], { encoding: 'utf8' }).stdout ?? '';
  await waitFor('the default service account', () => run(['get', 'serviceaccount', 'default', '-o', 'name']).code === 0, 60_000);
  // Pods ask the kube-dns Service; it routes once the proxy has programmed it.
  await waitFor('the proxy\'s rules for kube-dns', () => nft().includes(`${RANGE_PREFIX}10 . udp . 53`), 60_000);

  const applied = run(['apply', '-f', '-'], manifests);
  t.equal(applied.code, 0, applied.err);
  k('wait', '--for=condition=Available', 'deployment/backend', '--timeout=180s');
  k('wait', '--for=condition=Ready', 'pod/client', 'pod/dnsutils', '--timeout=180s');
  await waitFor('the web StatefulSet\'s two pods', () => run(['get', 'statefulset', 'web', '-o', 'jsonpath={.status.readyReplicas}']).out === '2', 180_000);

  const exec = (pod: string, ...cmd: string[]): { code: number | null; out: string; err: string } => run(['exec', pod, '--', ...cmd]);
  // busybox's timeout, not wget -T (the static busybox 1.35 wget crashes on -T).
  const wget = (url: string): { code: number | null; out: string; err: string } => exec('client', 'timeout', '20', 'wget', '-qO-', url);
  const clusterIp = k('get', 'service', 'backend', '-o', 'jsonpath={.spec.clusterIP}');
  t.match(clusterIp, new RegExp(`^${RANGE_PREFIX.replace(/\./g, '\\.')}\\d+$`), 'backend has a ClusterIP of the range');

  for (const url of ['http://backend', 'http://backend.default.svc.cluster.local', `http://${clusterIp}`]) {
    const page = await waitFor(`${url} from the client pod`, () => { const r = wget(url); return r.code === 0 && r.out; }, 60_000);
    t.match(page, /^hello from backend-/, `the client pod gets the backend's page from ${url}`);
  }
  const nodePort = Number(k('get', 'service', 'backend-public', '-o', 'jsonpath={.spec.ports[0].nodePort}'));
  const viaNodePort = await waitFor('the NodePort from the host', async () => {
    const res = await fetch(`http://${hostIp}:${nodePort}/`, { signal: AbortSignal.timeout(10_000) }).catch(() => undefined);
    return res?.ok === true && (await res.text());
  }, 60_000);
  t.match(viaNodePort, /^hello from backend-/, `the host gets the page through the NodePort ${hostIp}:${nodePort}`);

  // An in-cluster client: the address from its environment, its service account's token (in
  // the dnsutils pod, whose openssl lets busybox's wget speak TLS to the API server).
  const envHost = exec('dnsutils', 'sh', '-c', 'echo "$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT"');
  t.equal(envHost.out.trim(), `${RANGE_PREFIX}1:443`, 'KUBERNETES_SERVICE_HOST/PORT name the kubernetes Service');
  const api = exec('dnsutils', 'sh', '-c',
    'timeout 20 wget --no-check-certificate --header "Authorization: Bearer $(cat /var/run/secrets/kubernetes.io/serviceaccount/token)" -qO- "https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT/api"');
  t.equal(api.code, 0, `wget to the API server through the kubernetes Service: ${api.err}`);
  t.match(api.out, /"kind":\s*"APIVersions"/, 'the API server answered the pod (APIVersions)');

  const ns = exec('dnsutils', 'nslookup', 'kubernetes.default');
  t.equal(ns.code, 0, ns.out + ns.err);
  t.match(ns.out, new RegExp(`Name:\\s+kubernetes\\.default\\.svc\\.cluster\\.local\\s+Address:\\s+${RANGE_PREFIX.replace(/\./g, '\\.')}1\\b`), 'nslookup kubernetes.default in a pod');
  const podIps = JSON.parse(k('get', 'pods', '-l', 'app=web', '-o', 'json')) as { items: Array<{ metadata: { name: string }; status: { podIP: string } }> };
  for (const p of podIps.items) {
    const fqdn = `${p.metadata.name}.web.default.svc.cluster.local`;
    const r = exec('client', 'nslookup', fqdn);
    t.match(r.out, new RegExp(`Name:\\s+${fqdn.replace(/\./g, '\\.')}\\s+Address:\\s+${p.status.podIP.replace(/\./g, '\\.')}\\b`), `${fqdn} resolves to its pod from inside a pod`);
    const short = exec('dnsutils', 'nslookup', `${p.metadata.name}.web`);
    t.match(short.out, new RegExp(`Address:\\s+${p.status.podIP.replace(/\./g, '\\.')}\\b`), `${p.metadata.name}.web through the search path`);
  }

  await waitFor('three backend endpoints', () => (JSON.parse(k('get', 'endpointslices', '-l', 'kubernetes.io/service-name=backend', '-o', 'json')) as { items: Array<{ endpoints?: Array<{ conditions?: { ready?: boolean } }> }> })
    .items.flatMap((i) => i.endpoints ?? []).filter((e) => e.conditions?.ready).length === 3, 60_000);
  k('patch', 'service', 'backend', '-p', '{"spec":{"sessionAffinity":"ClientIP"}}');
  await waitFor('the affinity sets', () => (nft().match(/set aff_default_backend_/g) ?? []).length === 3, 30_000);
  const hosts = new Set<string>();
  for (let i = 0; i < 8; i++) {
    const r = wget('http://backend');
    if (r.code !== 0) throw new Error(`wget http://backend failed: ${r.err}`);
    hosts.add(r.out.trim());
  }
  t.equal(hosts.size, 1, `ClientIP affinity keeps the client on one of 3 backends (${[...hosts].join(', ')})`);

  k('scale', 'deployment', 'backend', '--replicas=0');
  const refused = await waitFor('the connection to be refused', () => { const r = wget('http://backend'); return r.code !== 0 && /refused/i.test(r.err) && r.err; }, 120_000);
  t.match(refused, /Connection refused/, 'no endpoints: refused at once (reject), not a timeout');
  // backend-public has EndpointSlices of its own, updated on their own time: its last
  // (terminating) endpoint may still be listed for a moment after backend's went.
  const nodePortError = async (): Promise<string> => {
    try {
      await fetch(`http://${hostIp}:${nodePort}/`, { signal: AbortSignal.timeout(15_000) });
      return 'answered';
    } catch (e) {
      return String(((e as Error).cause as { code?: string } | undefined)?.code ?? (e as Error).message);
    }
  };
  let last = '';
  await waitFor('the NodePort to be refused', async () => (last = await nodePortError()) === 'ECONNREFUSED', 60_000).catch(() => undefined);
  t.equal(last, 'ECONNREFUSED', 'the NodePort is refused too');
  k('scale', 'deployment', 'backend', '--replicas=1');
  const back = await waitFor('backend to answer again', () => { const r = wget('http://backend'); return r.code === 0 && r.out; }, 120_000);
  t.match(back, /^hello from backend-/, 'scaled back: answers again');

  t.ok(tableExists(), 'the proxy table exists while the server runs');
  await server.stop();
  t.notOk(tableExists(), 'the server removed its proxy table when it stopped');
});

// The README's kubectl tour, step by step, against `corectl server` (a real process: API server,
// controller manager, scheduler and node agent in one). With containerd installed (as root) the
// node runs real containers through the private containerd `make up` prepares
// (scripts/containerd-setup.mjs), and the exec, port-forward, service proxy and debug steps run
// too; otherwise the node simulates containers and those steps are skipped. Each step checks
// the resulting objects, not just exit codes.
import t from 'tap';
import { spawn, spawnSync } from 'node:child_process';
import { get } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { kubectl } from '../helpers/kubectl.js';
import { freePort, startServer } from '../helpers/corectl-server.js';
import { containerdSkipReason } from '../helpers/containerd.js';

const bin = kubectl(33);
const noContainerd = containerdSkipReason();

/** Starts make up's private containerd under `dir`; returns the server options for it. */
function containerdArgs(dir: string): string[] {
  const r = spawnSync(process.execPath, ['scripts/containerd-setup.mjs', 'up', dir], { encoding: 'utf8', timeout: 120_000, env: { ...process.env, NODE_OPTIONS: '' } });
  if (r.status !== 0) throw new Error(`containerd-setup up failed: ${r.stderr}`);
  return [`--container-runtime-endpoint=${r.stdout.trim()}`, '--nodeagent-arg=--pod-infra-container-image=localhost/pause:busybox'];
}

function fetchText(port: number, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    get({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('end', () => resolve(Buffer.concat(chunks).toString()));
    }).on('error', reject);
  });
}

t.test('README tour', { skip: bin ? false : 'kubectl.1.33 not installed', timeout: 240_000 }, async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-tour-'));
  const dataDir = join(dir, 'data');
  const cdDir = join(dir, 'containerd');
  const runtimeArgs = noContainerd ? ['--container-runtime=fake'] : containerdArgs(cdDir);
  t.comment(noContainerd ? `simulated containers (${noContainerd})` : 'real containers through containerd');
  const server = startServer([
    `--data-dir=${dataDir}`, '--bind-address=127.0.0.1', `--secure-port=${await freePort()}`, '--node-name=tour-node',
    ...runtimeArgs, `--nodeagent-arg=--port=${await freePort()}`, '--nodeagent-arg=--healthz-port=0',
  ]);
  t.teardown(async () => {
    await server.stop();
    if (!noContainerd) spawnSync(process.execPath, ['scripts/containerd-setup.mjs', 'down', cdDir], { timeout: 120_000, env: { ...process.env, NODE_OPTIONS: '' } });
    await rm(dir, { recursive: true, force: true });
  });
  await server.waitFor(/node tour-node Ready/, 60_000);
  const cache = join(dir, 'kube-cache');
  const k = (...args: string[]): string => {
    const r = spawnSync(bin!, ['--kubeconfig', join(dataDir, 'admin.coreconfig'), '--cache-dir', cache, ...args], { encoding: 'utf8', timeout: 90_000 });
    if (r.status !== 0) throw new Error(`kubectl ${args.join(' ')} failed (${r.status}): ${r.stderr}`);
    return r.stdout;
  };
  const json = (...args: string[]): any => JSON.parse(k(...args, '-o', 'json')); // eslint-disable-line @typescript-eslint/no-explicit-any
  const podsOf = (): any[] => json('get', 'pods', '-l', 'app=web').items.filter((p: any) => !p.metadata.deletionTimestamp); // eslint-disable-line @typescript-eslint/no-explicit-any

  // kubectl get nodes -o wide: one Ready node.
  const nodes = json('get', 'nodes').items;
  t.equal(nodes.length, 1);
  t.equal(nodes[0].status.conditions.find((c: { type: string }) => c.type === 'Ready')?.status, 'True', 'node Ready');
  t.match(k('get', 'nodes', '-o', 'wide'), /tour-node\s+Ready/);

  // kubectl create deployment web ... ; rollout status; pods have IPs.
  k('create', 'deployment', 'web', '--image=localhost/busybox:static', '--', 'httpd', '-f', '-p', '80');
  t.match(k('rollout', 'status', 'deployment/web', '--timeout=90s'), /successfully rolled out/);
  let pods = podsOf();
  t.equal(pods.length, 1, 'one pod');
  t.equal(pods[0].status.phase, 'Running');
  t.match(pods[0].status.podIP, /^\d+\.\d+\.\d+\.\d+$/, 'pod has an IP');
  t.equal(pods[0].spec.nodeName, 'tour-node', 'scheduled to the node');
  t.match(k('get', 'pods', '-o', 'wide'), /web-[a-z0-9]+-[a-z0-9]+\s+1\/1\s+Running/);

  // kubectl scale --replicas=3
  k('scale', 'deployment/web', '--replicas=3');
  k('rollout', 'status', 'deployment/web', '--timeout=90s');
  t.equal(json('get', 'deployment', 'web').status.readyReplicas, 3, 'three ready replicas');

  // kubectl set env → a new revision, rolled out.
  const firstRs = json('get', 'rs', '-l', 'app=web').items.map((r: { metadata: { name: string } }) => r.metadata.name);
  k('set', 'env', 'deployment/web', 'GREETING=hello');
  k('rollout', 'status', 'deployment/web', '--timeout=90s');
  const dep2 = json('get', 'deployment', 'web');
  t.equal(dep2.spec.template.spec.containers[0].env?.[0]?.value, 'hello');
  t.equal(dep2.metadata.annotations['deployment.kubernetes.io/revision'], '2');
  pods = podsOf();
  t.equal(pods.length, 3);
  t.ok(pods.every((p) => p.spec.containers[0].env?.[0]?.name === 'GREETING'), 'every pod runs the new template');

  // kubectl rollout undo → the first replica set is back, with revision 3.
  k('rollout', 'undo', 'deployment/web');
  k('rollout', 'status', 'deployment/web', '--timeout=90s');
  const dep3 = json('get', 'deployment', 'web');
  t.notOk(dep3.spec.template.spec.containers[0].env, 'template back to the first revision');
  t.equal(dep3.metadata.annotations['deployment.kubernetes.io/revision'], '3');
  const active = json('get', 'rs', '-l', 'app=web').items.filter((r: { spec: { replicas: number } }) => r.spec.replicas > 0);
  t.same(active.map((r: { metadata: { name: string } }) => r.metadata.name), firstRs, 'the first replica set scaled back up');
  t.match(k('rollout', 'history', 'deployment/web'), /2\s.*\n3\s/s, 'history lists revisions 2 and 3');

  // kubectl expose → a ClusterIP service; endpoints follow the ready pods.
  k('expose', 'deployment', 'web', '--port=80');
  const svc = json('get', 'service', 'web');
  t.match(svc.spec.clusterIP, /^\d+\.\d+\.\d+\.\d+$/, 'cluster IP allocated');
  let ready = 0;
  for (let i = 0; i < 60 && ready !== 3; i++) {
    const ep = json('get', 'endpoints', 'web');
    ready = (ep.subsets ?? []).reduce((n: number, s: { addresses?: unknown[] }) => n + (s.addresses?.length ?? 0), 0);
    if (ready !== 3) await new Promise((r) => setTimeout(r, 500));
  }
  t.equal(ready, 3, 'endpoints list the three pods');

  // kubectl exec and port-forward (real containers only: simulated ones have no processes).
  await t.test('kubectl exec and port-forward', { skip: noContainerd ? `no containerd: ${noContainerd}` : false }, async (t) => {
    const name = k('exec', 'deploy/web', '--', 'cat', '/etc/hostname').trim();
    t.ok(podsOf().some((p) => p.metadata.name === name), `exec ran in one of the pods (${name})`);
    const pf = spawn(bin!, ['--kubeconfig', join(dataDir, 'admin.coreconfig'), '--cache-dir', cache, 'port-forward', 'deploy/web', ':80', '--address=127.0.0.1'], { stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      const port = await new Promise<number>((resolve, reject) => {
        let out = '';
        const timer = setTimeout(() => reject(new Error(`port-forward did not start: ${out}`)), 30_000);
        pf.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          const m = /Forwarding from 127\.0\.0\.1:(\d+) -> 80/.exec(out);
          if (m) { clearTimeout(timer); resolve(Number(m[1])); }
        });
        pf.stderr.on('data', (d: Buffer) => { out += d.toString(); });
      });
      const page = (await fetchText(port, '/etc/hostname')).trim();
      t.ok(podsOf().some((p) => p.metadata.name === page), `httpd answered through port-forward (${page})`);
    } finally {
      pf.kill('SIGTERM');
    }
    // kubectl get --raw .../services/web:80/proxy/...: the API server's service proxy to a pod.
    const viaProxy = k('get', '--raw', '/api/v1/namespaces/default/services/web:80/proxy/etc/hostname').trim();
    t.ok(podsOf().some((p) => p.metadata.name === viaProxy), `httpd answered through services/proxy (${viaProxy})`);
    // kubectl debug --target: an ephemeral container that sees the pod's httpd.
    const target = podsOf()[0]!.metadata.name;
    k('debug', target, '-c', 'dbg', '--image=localhost/busybox:static', '--target=busybox', '--', 'ps');
    let ps = '';
    for (let i = 0; i < 60 && !ps.includes('httpd'); i++) {
      ps = spawnSync(bin!, ['--kubeconfig', join(dataDir, 'admin.coreconfig'), '--cache-dir', cache, 'logs', target, '-c', 'dbg'], { encoding: 'utf8', timeout: 30_000 }).stdout ?? '';
      if (!ps.includes('httpd')) await new Promise((r) => setTimeout(r, 500));
    }
    t.match(ps, /httpd -f -p 80/, 'the debugging container saw the target container\'s httpd');
  });

  // kubectl run ... -- echo; kubectl logs (through the API server's pods/log proxy to the node).
  k('run', 'hello', '--image=localhost/busybox:static', '--restart=Never', '--', 'echo', 'hello', 'from', 'corectl');
  let logs = '';
  for (let i = 0; i < 60 && !logs.includes('hello from corectl'); i++) {
    const r = spawnSync(bin!, ['--kubeconfig', join(dataDir, 'admin.coreconfig'), '--cache-dir', cache, 'logs', 'hello'], { encoding: 'utf8', timeout: 30_000 });
    logs = r.stdout ?? '';
    if (!logs.includes('hello from corectl')) await new Promise((r) => setTimeout(r, 500));
  }
  t.match(logs, /hello from corectl/, 'kubectl logs shows the container output');

  // kubectl delete deployment web → its replica sets and pods go too.
  k('delete', 'deployment', 'web');
  let left = -1;
  for (let i = 0; i < 60 && left !== 0; i++) {
    left = json('get', 'rs', '-l', 'app=web').items.length + json('get', 'pods', '-l', 'app=web').items.length;
    if (left !== 0) await new Promise((r) => setTimeout(r, 500));
  }
  t.equal(left, 0, 'replica sets and pods garbage-collected');
});

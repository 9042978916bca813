// kubectl top and the HPA end to end: `corectl server` (a real process) on the private
// containerd of `make up`, kubectl 1.33. The in-process metrics server scrapes the node agent's
// /metrics/resource; `kubectl top node` and `kubectl top pod --containers` show real containerd
// figures; a Deployment of a CPU-burning busybox with an HPA at 50 % CPU scales out within the
// sync period plus one step, and back in once the load stops and the downscale stabilization
// (shortened here) has passed; `kubectl get hpa` shows current/target.
// Needs a node agent serving kubelet's /metrics/resource (else skipped, saying so).
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
const hostIp = Object.values(networkInterfaces()).flat().find((a) => a && a.family === 'IPv4' && !a.internal)?.address;
const skip = !bin ? 'kubectl.1.33 not installed' : containerdSkipReason() || (hostIp ? false : 'no non-loopback IPv4 address for the metrics server');

t.test('kubectl top and an HPA on a CPU-burning Deployment', { skip, timeout: 600_000 }, async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-metrics-hpa-'));
  const cd = spawnSync(process.execPath, ['scripts/containerd-setup.mjs', 'up', join(dir, 'containerd')], { encoding: 'utf8', timeout: 120_000, env: { ...process.env, NODE_OPTIONS: '' } });
  if (cd.status !== 0) throw new Error(`containerd-setup up failed: ${cd.stderr}`);
  const server = startServer([
    `--data-dir=${join(dir, 'data')}`, '--bind-address=0.0.0.0', `--advertise-address=${hostIp}`, `--secure-port=${await freePort()}`, '--node-name=metrics-node',
    `--container-runtime-endpoint=${cd.stdout.trim()}`, '--nodeagent-arg=--pod-infra-container-image=localhost/pause:busybox',
    `--nodeagent-arg=--port=${await freePort()}`, '--nodeagent-arg=--healthz-port=0', '--disable-proxy', '--disable-cluster-dns',
    '--controller-manager-arg=--horizontal-pod-autoscaler-sync-period=5s', '--controller-manager-arg=--horizontal-pod-autoscaler-downscale-delay=30s',
  ]);
  t.teardown(async () => {
    await server.stop();
    spawnSync(process.execPath, ['scripts/containerd-setup.mjs', 'down', join(dir, 'containerd')], { timeout: 120_000, env: { ...process.env, NODE_OPTIONS: '' } });
    await rm(dir, { recursive: true, force: true });
  });
  await server.waitFor(/metrics-server started/, 90_000);
  await server.waitFor(/node metrics-node Ready/, 90_000);
  const env = { ...process.env, KUBECONFIG: join(dir, 'data', 'admin.coreconfig') };
  const run = (...args: string[]): { code: number | null; out: string; err: string } => {
    const r = spawnSync(bin!, args, { env, encoding: 'utf8', timeout: 90_000 });
    return { code: r.status, out: r.stdout, err: r.stderr };
  };
  const k = (...args: string[]): string => {
    const r = run(...args);
    if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} failed (${r.code}): ${r.err}`);
    return r.out;
  };
  if (run('get', '--raw', '/api/v1/nodes/metrics-node/proxy/metrics/resource').code !== 0) {
    t.comment('SKIPPED: this node agent serves no /metrics/resource (kubelet resource metrics): kubectl top and the HPA have no figures');
    return;
  }
  await waitFor('the default service account', () => run('get', 'serviceaccount', 'default').code === 0, 60_000);
  const image = 'localhost/busybox:static';
  // Burns one CPU until /tmp/stop exists, then idles.
  const manifest = JSON.stringify({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'burn' }, spec: {
    replicas: 1, selector: { matchLabels: { app: 'burn' } },
    template: { metadata: { labels: { app: 'burn' } }, spec: { containers: [{
      name: 'burn', image, command: ['sh', '-c', 'while [ ! -f /tmp/stop ]; do :; done; exec sleep 3600'],
      resources: { requests: { cpu: '100m' } },
    }] } },
  } });
  const applied = spawnSync(bin!, ['apply', '-f', '-'], { env, input: manifest, encoding: 'utf8', timeout: 60_000 });
  t.equal(applied.status, 0, applied.stderr);
  k('wait', '--for=condition=Available', 'deployment/burn', '--timeout=120s');

  const top = await waitFor('kubectl top node', () => { const r = run('top', 'node'); return r.code === 0 && r.out; }, 90_000);
  t.match(top, /^metrics-node\s+\d+m\s+\d+%\s+\d+Mi\s+\d+%/m, 'kubectl top node shows the node\'s CPU and memory');
  const pods = await waitFor('kubectl top pod --containers', () => { const r = run('top', 'pod', '--containers'); return r.code === 0 && /burn-/.test(r.out) && r.out; }, 90_000);
  const burning = Number(/^burn-\S+\s+burn\s+(\d+)m/m.exec(pods)?.[1] ?? 0);
  // A busy loop gets what the (shared) machine leaves it; well above the 50 m the HPA aims at.
  t.ok(burning >= 100, `the burning container uses CPU (${burning}m)`);
  t.comment(`kubectl top node:\n${top}kubectl top pod --containers:\n${pods}`);

  k('autoscale', 'deployment', 'burn', '--cpu-percent=50', '--min=1', '--max=3');
  await waitFor('the scale-out to 3', () => k('get', 'deployment', 'burn', '-o', 'jsonpath={.spec.replicas}') === '3', 120_000);
  t.pass('scaled out to maxReplicas');
  const hpa = await waitFor('kubectl get hpa with a figure', () => { const o = k('get', 'hpa', 'burn'); return /cpu: \d+%\/50%/.test(o) && o; }, 60_000);
  t.match(hpa, /^burn\s+Deployment\/burn\s+cpu: \d+%\/50%\s+1\s+3\s+\d/m, 'kubectl get hpa shows current/target');
  t.comment(`kubectl get hpa:\n${hpa}`);
  t.match(k('get', 'events', '--field-selector=reason=SuccessfulRescale', '-o', 'jsonpath={.items[*].message}'), /New size: \d; reason: cpu resource utilization \(percentage of request\) above target/);

  // The load stops in every pod.
  k('wait', '--for=condition=Available', 'deployment/burn', '--timeout=120s');
  for (const name of k('get', 'pods', '-l', 'app=burn', '-o', 'jsonpath={.items[*].metadata.name}').split(' ').filter(Boolean)) k('exec', name, '--', 'touch', '/tmp/stop');
  await waitFor('the scale-in to 1', () => k('get', 'deployment', 'burn', '-o', 'jsonpath={.spec.replicas}') === '1', 180_000);
  t.pass('scaled back in after the downscale stabilization');
});

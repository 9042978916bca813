// scripts/up.sh and scripts/down.sh (make up / make down) on a temp data dir: the fake runtime
// always; a private containerd too when this machine can run one (root, binaries installed),
// where a pod keeps running across make down / make up (same container and pod IP, adopted)
// and REMOVE_PODS=1 make down removes it.
import t from 'tap';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { containerdSkipReason, shimPids } from '../helpers/containerd.js';
import { kubectl } from '../helpers/kubectl.js';
import { freePort } from '../../src/util/free-port.js';
import { loadCoreconfig } from '../../src/client/coreconfig.js';
import { RestClient } from '../../src/client/rest-client.js';
import type { Pod } from '../../src/daemons/nodeagent/pod-types.js';
import { CriRuntime } from '../../src/daemons/nodeagent/runtime/cri/cri-runtime.js';

const root = process.cwd();
// This file is <dist>/test/server/scripts.test.js: the scripts run that same build.
const dist = fileURLToPath(new URL('../..', import.meta.url));


interface Up { child: ChildProcess; out: () => string; exited: Promise<number | null> }

function up(env: Record<string, string>): Up {
  const child = spawn('bash', [join(root, 'scripts', 'up.sh')], {
    cwd: root, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NODE_OPTIONS: '', CORECTL_DIST: dist, ...env },
  });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => { out += d.toString(); });
  child.stderr?.on('data', (d: Buffer) => { out += d.toString(); });
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  return { child, out: () => out, exited };
}

async function waitFor(u: Up, re: RegExp, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!re.test(u.out())) {
    if (u.child.exitCode !== null) throw new Error(`up.sh exited (${u.child.exitCode}) before ${re}:\n${u.out()}`);
    if (Date.now() > end) throw new Error(`no ${re} within ${ms} ms:\n${u.out()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function down(env: Record<string, string>): { code: number | null; out: string } {
  const r = spawnSync('bash', [join(root, 'scripts', 'down.sh')], {
    cwd: root, encoding: 'utf8', timeout: 90_000, env: { ...process.env, NODE_OPTIONS: '', CORECTL_DIST: dist, ...env },
  });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

const serverArgs = async (): Promise<string> =>
  `--bind-address=127.0.0.1 --secure-port=${await freePort()} --node-name=up-test --nodeagent-arg=--port=${await freePort()} --nodeagent-arg=--healthz-port=0`;

t.test('make up (fake runtime) prints the hints; make down stops it; make up resumes', async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'corectl-up-'));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  const env = { DATA_DIR: dataDir, RUNTIME: 'fake', SERVER_ARGS: await serverArgs() };
  const first = up(env);
  t.teardown(() => { first.child.kill('SIGKILL'); });
  await waitFor(first, /node up-test Ready/, 60_000);
  t.match(first.out(), `up:   export KUBECONFIG=${dataDir}/admin.coreconfig`);
  t.match(first.out(), /up: {3}kubectl create deployment web --image=localhost\/busybox:static -- httpd -f -p 80/);
  t.ok(existsSync(join(dataDir, 'server.pid')));
  t.match(readFileSync(join(dataDir, 'logs', 'server.log'), 'utf8'), /make up/, 'the log is where /logs/ looks');
  const caBefore = readFileSync(join(dataDir, 'pki', 'ca.crt'), 'utf8');
  const d = down({ DATA_DIR: dataDir });
  t.equal(d.code, 0, d.out);
  t.match(d.out, /down: stopping corectl server \(pid \d+\)/);
  t.equal(await first.exited, 0, 'up.sh ends with the server');
  t.match(first.out(), /corectl: stopped/);
  t.notOk(existsSync(join(dataDir, 'server.pid')));

  const second = up(env);
  t.teardown(() => { second.child.kill('SIGKILL'); });
  await waitFor(second, /corectl: PKI reused from/, 60_000);
  await waitFor(second, /node up-test Ready/, 60_000);
  t.equal(readFileSync(join(dataDir, 'pki', 'ca.crt'), 'utf8'), caBefore, 'same PKI');
  const again = up(env);
  t.equal(await again.exited, 1, 'a second make up on a running cluster refuses');
  t.match(again.out(), /already runs/);
  t.equal(down({ DATA_DIR: dataDir }).code, 0);
  t.equal(await second.exited, 0);
});

const skip = containerdSkipReason();
t.test('make up with a private containerd', { skip: skip ? `no containerd here: ${skip}` : false, timeout: 360_000 }, async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'corectl-up-ctrd-'));
  let bridge = '';
  t.teardown(async () => {
    down({ DATA_DIR: dataDir, REMOVE_PODS: '1' });
    if (bridge) spawnSync('ip', ['link', 'del', bridge], { stdio: 'ignore' });
    await rm(dataDir, { recursive: true, force: true });
  });
  const args = await serverArgs();
  const u = up({ DATA_DIR: dataDir, NO_APT: '1', SERVER_ARGS: args, MIRROR_PORT: String(await freePort()) });
  t.teardown(() => { u.child.kill('SIGKILL'); });
  await waitFor(u, /node up-test Ready/, 120_000);
  // With Debian's docker-registry, make up seeds a local mirror of docker.io: plain busybox runs.
  const kc = kubectl(33);
  if (spawnSync('sh', ['-c', 'command -v docker-registry'], { stdio: 'ignore' }).status === 0 && kc) {
    t.match(u.out(), /up: {3}kubectl create deployment web --image=busybox -- httpd -f -p 80/);
    const k = (...args: string[]): string => spawnSync(kc, [`--kubeconfig=${join(dataDir, 'admin.coreconfig')}`, ...args], { encoding: 'utf8' }).stdout ?? '';
    k('create', 'deployment', 'web', '--image=busybox', '--', 'httpd', '-f', '-p', '80');
    const end = Date.now() + 120_000;
    while (k('get', 'pods', '-l', 'app=web', '-o', 'jsonpath={.items[*].status.phase}') !== 'Running' && Date.now() < end) await new Promise((r) => setTimeout(r, 500));
    t.equal(k('get', 'pods', '-l', 'app=web', '-o', 'jsonpath={.items[*].status.phase}'), 'Running', 'kubectl create deployment web --image=busybox runs from the mirror');
  }
  const conflist = JSON.parse(readFileSync(join(dataDir, 'containerd', 'net.d', '10-corectl.conflist'), 'utf8')) as { plugins: Array<{ bridge: string }> };
  bridge = conflist.plugins[0]?.bridge ?? '';
  t.match(u.out(), /with the CRI runtime at unix:\/\//);
  const ctrdPid = Number(readFileSync(join(dataDir, 'containerd', 'containerd.pid'), 'utf8'));
  t.ok(ctrdPid > 0);
  // A pod that make down / make up must leave alone (adopted, not recreated).
  const client = new RestClient({ connection: await loadCoreconfig({ path: join(dataDir, 'admin.coreconfig') }), contentType: 'application/json' });
  t.teardown(() => client.close());
  const PODS = { group: '', version: 'v1', resource: 'pods', namespace: 'default' };
  // Retried until the default service account exists.
  await pollFor('pod stays created', () => client.create(PODS, {
    apiVersion: 'v1', kind: 'Pod', metadata: { name: 'stays' },
    spec: { nodeName: 'up-test', terminationGracePeriodSeconds: 1, containers: [{ name: 'main', image: 'localhost/busybox:static', command: ['sleep', '3600'] }] },
  }), 60_000);
  const before = await pollFor('pod stays Running', async () => {
    const p = await client.get<Pod>(PODS, 'stays');
    return p.status?.phase === 'Running' && p.status.podIP ? p : undefined;
  }, 90_000);
  const containerId = before.status?.containerStatuses?.[0]?.containerID ?? '';
  const d = down({ DATA_DIR: dataDir });
  t.equal(d.code, 0, d.out);
  t.match(d.out, /containerd \(pid \d+\) stopped/);
  t.not(shimPids(join(dataDir, 'containerd', 'containerd.sock')).length, 0, 'the pod\'s shim still runs');
  t.match(d.out, /down: containerd-setup: \d+ pod\(s\) with \d+ running container\(s\) keep running: make up adopts them/, 'make down says the pods keep running');
  if (existsSync(join(dataDir, 'containerd', 'mirror', 'port'))) t.match(d.out, /registry mirror \(pid \d+\) stopped/);
  t.equal(await u.exited, 0);
  t.throws(() => process.kill(ctrdPid, 0), 'containerd is gone');
  t.notMatch(u.out(), /containerd keeps running/, 'make up does not claim a stopped containerd runs');
  t.match(u.out(), /up: stopped by make down \(containerd too\)/);

  const u2 = up({ DATA_DIR: dataDir, NO_APT: '1', SERVER_ARGS: args });
  t.teardown(() => { u2.child.kill('SIGKILL'); });
  await waitFor(u2, /node up-test Ready/, 120_000);
  const rt = new CriRuntime({ endpoint: `unix://${join(dataDir, 'containerd', 'containerd.sock')}` });
  t.teardown(() => rt.close());
  const uid = before.metadata?.uid ?? '';
  // Several relists and syncs of the new node agent later, nothing was recreated.
  await new Promise((r) => setTimeout(r, 5000));
  const containers = await rt.listContainers({ labelSelector: { 'io.kubernetes.pod.uid': uid } });
  t.same(containers.map((c) => `containerd://${c.id}:${c.state}`), [`${containerId}:running`], 'the same container runs, no new one');
  const after = await client.get<Pod>(PODS, 'stays');
  t.equal(after.status?.podIP, before.status?.podIP, 'same pod IP');
  t.equal(after.status?.containerStatuses?.[0]?.containerID, containerId);
  t.equal(after.status?.containerStatuses?.[0]?.restartCount, 0);
  t.equal(down({ DATA_DIR: dataDir, REMOVE_PODS: '1' }).code, 0);
  t.equal(await u2.exited, 0);
  t.same(shimPids(join(dataDir, 'containerd', 'containerd.sock')), [], 'REMOVE_PODS=1 removed the pods: no shim left');
});

async function pollFor<T>(what: string, fn: () => Promise<T | undefined>, ms: number): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

// scripts/up.sh and scripts/down.sh (make up / make down) on a temp data dir: the fake runtime
// always; a private containerd too when this machine can run one (root, binaries installed).
import t from 'tap';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { containerdSkipReason } from '../helpers/containerd.js';
import { kubectl } from '../helpers/kubectl.js';
import { freePort } from '../../src/util/free-port.js';

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
    down({ DATA_DIR: dataDir });
    if (bridge) spawnSync('ip', ['link', 'del', bridge], { stdio: 'ignore' });
    await rm(dataDir, { recursive: true, force: true });
  });
  const u = up({ DATA_DIR: dataDir, NO_APT: '1', SERVER_ARGS: await serverArgs(), MIRROR_PORT: String(await freePort()) });
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
  const d = down({ DATA_DIR: dataDir });
  t.equal(d.code, 0, d.out);
  t.match(d.out, /containerd \(pid \d+\) stopped/);
  if (existsSync(join(dataDir, 'containerd', 'mirror', 'port'))) t.match(d.out, /registry mirror \(pid \d+\) stopped/);
  t.equal(await u.exited, 0);
  t.throws(() => process.kill(ctrdPid, 0), 'containerd is gone');
  t.notMatch(u.out(), /containerd keeps running/, 'make up does not claim a stopped containerd runs');
  t.match(u.out(), /up: stopped by make down \(containerd too\)/);
});

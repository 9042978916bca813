// `corectl server` as users run it: a real process on loopback with the fake runtime; real
// kubectl with the generated admin.coreconfig; a restart resumes the same cluster and PKI.
import t, { type Test } from 'tap';
import { spawnSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { skipWithoutEtcd, startEtcd } from '../helpers/etcd.js';
import { kubectl as kubectlBinary } from '../helpers/kubectl.js';
import { freePort, startServer, type Running } from '../helpers/corectl-server.js';


const cli = fileURLToPath(new URL('../../src/cli.js', import.meta.url));
const kubectl = kubectlBinary(33);

function kc(coreconfig: string, args: string[]): { code: number | null; out: string; err: string } {
  const r = spawnSync(kubectl ?? 'kubectl', ['--kubeconfig', coreconfig, ...args], { encoding: 'utf8', timeout: 30_000 });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

const dir = await mkdtemp(join(tmpdir(), 'corectl-server-'));
const running: Running[] = [];
t.teardown(async () => {
  for (const r of running) await r.stop();
  await rm(dir, { recursive: true, force: true });
});

const dataDir = join(dir, 'data');
const admin = join(dataDir, 'admin.coreconfig');
const agentAvailable = existsSync(fileURLToPath(new URL('../../src/daemons/nodeagent/main.js', import.meta.url)));

async function serverArgs(): Promise<string[]> {
  return [
    `--data-dir=${dataDir}`, '--bind-address=127.0.0.1', `--secure-port=${await freePort()}`, '--node-name=server-test',
    '--container-runtime=fake',
    `--nodeagent-arg=--port=${await freePort()}`, '--nodeagent-arg=--healthz-port=0',
    ...(agentAvailable ? [] : ['--disable-agent']),
  ];
}

/**
 * What a pod's in-cluster client finds: the ServiceAccount admission plugin mounts the token
 * volume, the root CA publisher fills kube-root-ca.crt, the node agent writes the files, and
 * the token from the volume authenticates as the pod's service account.
 */
async function inClusterCredentials(t: Test, s: Running): Promise<void> {
  // As on Kubernetes, pods are refused until the serviceaccount controller made `default`.
  const saDeadline = Date.now() + 60_000;
  while (kc(admin, ['get', 'serviceaccount', 'default', '-n', 'default']).code !== 0 && Date.now() < saDeadline) {
    await new Promise((r) => setTimeout(r, 200));
  }
  const run = kc(admin, ['run', 'client', '--image=busybox', '--restart=Never', '--', 'sleep', '600']);
  t.equal(run.code, 0, run.err);
  const caPem = await readFile(join(dataDir, 'pki', 'ca.crt'), 'utf8');
  let volumeDir = '';
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const uid = kc(admin, ['get', 'pod', 'client', '-o', 'jsonpath={.metadata.uid} {.spec.volumes[0].name} {.status.phase}']).out.split(' ');
    const dirOf = join(dataDir, 'nodeagent', 'pods', uid[0] ?? '', 'volumes', 'kubernetes.io~projected', uid[1] ?? '');
    if (uid[2] === 'Running' && existsSync(join(dirOf, 'token'))) { volumeDir = dirOf; break; }
    await new Promise((r) => setTimeout(r, 200));
  }
  t.match(volumeDir, /kube-api-access-[a-z0-9]{5}$/, `the pod runs with its token volume (${s.stderr().slice(-300)})`);
  if (!volumeDir) return;
  t.equal(await readFile(join(volumeDir, 'namespace'), 'utf8'), 'default');
  t.equal(await readFile(join(volumeDir, 'ca.crt'), 'utf8'), caPem, 'ca.crt is the cluster CA (kube-root-ca.crt)');
  let published = '';
  for (const until = Date.now() + 15_000; Date.now() < until && published !== caPem.trim(); await new Promise((r) => setTimeout(r, 200))) {
    published = kc(admin, ['get', 'configmap', 'kube-root-ca.crt', '-n', 'kube-system', '-o', 'jsonpath={.data.ca\\.crt}']).out.trim();
  }
  t.equal(published, caPem.trim(), 'published in every namespace');
  const server = /server: (\S+)/.exec(await readFile(admin, 'utf8'))?.[1] ?? '';
  const who = spawnSync(kubectl ?? 'kubectl', [
    '--kubeconfig=/dev/null', `--server=${server}`, `--certificate-authority=${join(volumeDir, 'ca.crt')}`,
    `--token=${await readFile(join(volumeDir, 'token'), 'utf8')}`, 'auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}',
  ], { encoding: 'utf8', timeout: 30_000 });
  t.equal(who.stdout, 'system:serviceaccount:default:default', `the token is the pod's service account (${who.stderr})`);
  t.equal(kc(admin, ['delete', 'pod', 'client', '--wait=false']).code, 0);
}

t.test('first start: PKI, apiserver, kubectl works with admin.coreconfig', { skip: kubectl ? false : 'no kubectl on PATH' }, async (t) => {
  const s = startServer(await serverArgs());
  running.push(s);
  await s.waitFor(/corectl: PKI created in /);
  await s.waitFor(/corectl: apiserver ready on https:\/\/127\.0\.0\.1:\d+ \(\d+\.\ds\)/);
  t.match(await s.waitFor(/export KUBECONFIG=/), `export KUBECONFIG=${admin}`);
  t.ok(existsSync(join(dataDir, 'server.pid')), 'pid file');
  const ns = kc(admin, ['get', 'namespaces', '-o', 'name']);
  t.equal(ns.code, 0, ns.err);
  t.match(ns.out, /namespace\/default/);
  t.match(ns.out, /namespace\/kube-system/);
  const second = spawnSync(process.execPath, [
    '--input-type=module', '-e',
    `const m = await import(${JSON.stringify('file://' + cli)}); process.exitCode = await m.main(process.argv);`,
    'corectl', 'server', ...(await serverArgs()),
  ], { encoding: 'utf8', timeout: 30_000, env: { ...process.env, NODE_OPTIONS: '' } });
  t.equal(second.status, 1, 'a second server on the same data dir refuses');
  t.match(second.stderr, /is in use by another corectl server \(pid \d+\)/);
  const created = kc(admin, ['create', 'configmap', 'survives', '--from-literal=a=b']);
  t.equal(created.code, 0, created.err);
  if (agentAvailable) {
    await s.waitFor(/corectl: node server-test Ready/, 60_000);
    const nodes = kc(admin, ['get', 'nodes', '--no-headers']);
    t.equal(nodes.code, 0, nodes.err);
    t.match(nodes.out, /^server-test\s+Ready\s/m, 'one Ready node');
    t.equal(nodes.out.trim().split('\n').length, 1);
    await inClusterCredentials(t, s);
  } else {
    t.comment('node agent module missing: ran with --disable-agent');
  }
  t.equal(await s.stop(), 0, 'SIGTERM stops cleanly');
  t.match(s.lines.join('\n'), /apiserver stopped\n[^]*corectl: stopped/);
  t.notOk(existsSync(join(dataDir, 'server.pid')), 'pid file removed');
});

t.test('a restart resumes the cluster with the same PKI', { skip: kubectl ? false : 'no kubectl on PATH' }, async (t) => {
  const caBefore = new X509Certificate(await readFile(join(dataDir, 'pki', 'ca.crt'))).fingerprint256;
  const s = startServer(await serverArgs());
  running.push(s);
  await s.waitFor(/corectl: PKI reused from /);
  await s.waitFor(/corectl: apiserver ready/);
  await s.waitFor(/export KUBECONFIG=/);
  t.equal(new X509Certificate(await readFile(join(dataDir, 'pki', 'ca.crt'))).fingerprint256, caBefore, 'same CA');
  const cm = kc(admin, ['get', 'configmap', 'survives', '-o', 'jsonpath={.data.a}']);
  t.equal(cm.code, 0, cm.err);
  t.equal(cm.out, 'b', 'objects of the first run are there');
  if (agentAvailable) {
    await s.waitFor(/corectl: node server-test Ready/, 60_000);
    t.match(kc(admin, ['get', 'nodes', '--no-headers']).out, /^server-test\s+Ready\s/m);
  }
  t.equal(await s.stop(), 0);
});

t.test('a missing part is reported in one line and the rest keeps running', async (t) => {
  const { run } = await import('../../src/daemons/server/main.js');
  const { parseServerArgs } = await import('../../src/flags/server.js');
  const { pino } = await import('pino');
  const { config } = parseServerArgs([
    `--data-dir=${join(dir, 'inproc')}`, '--bind-address=127.0.0.1', `--secure-port=${await freePort()}`, '--node-name=inproc',
    '--disable-agent',
  ]);
  const out: string[] = [];
  const controller = new AbortController();
  const done = run(config, {
    log: pino({ level: 'silent' }), signal: controller.signal, out: (l) => out.push(l),
    partModules: { scheduler: new URL('file:///nonexistent/scheduler/main.js') },
  });
  const deadline = Date.now() + 30_000;
  while (!out.some((l) => l.includes('export KUBECONFIG=')) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  t.ok(out.some((l) => /corectl: scheduler not in this build .*; running without it/.test(l)), out.join('\n'));
  t.ok(out.some((l) => /corectl: controller-manager started/.test(l)));
  t.ok(out.some((l) => /corectl: nodeagent disabled \(--disable-agent\)/.test(l)));
  controller.abort();
  t.equal(await done, 0);
  t.ok(out.some((l) => l === 'corectl: controller-manager stopped'));
});

t.test('pass-through reaches the daemon: the API server on etcd via --apiserver-arg', { skip: kubectl ? skipWithoutEtcd() : 'no kubectl on PATH' }, async (t) => {
  const etcd = await startEtcd();
  t.teardown(() => etcd.stop());
  const data = join(dir, 'on-etcd');
  const s = startServer([
    `--data-dir=${data}`, '--bind-address=127.0.0.1', `--secure-port=${await freePort()}`, '--node-name=on-etcd', '--disable-agent',
    `--apiserver-arg=--kvstore-servers=${etcd.endpoint}`,
  ]);
  running.push(s);
  t.match(await s.waitFor(/corectl: starting apiserver/), `store at ${etcd.endpoint}`);
  await s.waitFor(/export KUBECONFIG=/);
  const created = kc(join(data, 'admin.coreconfig'), ['create', 'namespace', 'in-etcd']);
  t.equal(created.code, 0, created.err);
  t.notOk(existsSync(join(data, 'db')), 'no embedded store was made');
  t.equal(await s.stop(), 0);
});

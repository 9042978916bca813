// make up-ha in network namespaces, as a user runs it: scripts/up-ha.mjs in the foreground, then
// scripts/down-ha.sh. Checks the three etcd members are healthy on their machines' addresses,
// kubectl 1.33 reads /readyz through haproxy, the kubernetes endpoints list the three machine
// addresses on one port, each API server runs in its own namespace, kubectl keeps working with
// one API server SIGKILLed, and down-ha leaves no namespace, link or process of ours. First: a
// namespace by one of up-ha's names that up-ha did not make is refused and left alone, by up-ha
// and by down-ha. Needs root, ip, nsenter, etcd, haproxy and kubectl 1.33.
import t from 'tap';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { etcdAvailable } from '../helpers/etcd.js';
import { haproxyAvailable } from '../helpers/ha-cluster.js';
import { haNetworkSkipReason } from '../helpers/ha-network.js';
import { kubectl } from '../helpers/kubectl.js';
import { kubectlRunner } from '../helpers/kubectl-run.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const dist = fileURLToPath(new URL('../../', import.meta.url));
const kubectl133 = kubectl(33);
const skip = haNetworkSkipReason() ?? (!etcdAvailable() ? 'etcd not installed' : !haproxyAvailable() ? 'haproxy not installed' : !kubectl133 ? 'kubectl.1.33 not installed' : undefined);

const prefix = `cuh${randomBytes(3).toString('hex')}`;
const ours = (): string => {
  const ns = spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' }).stdout.split('\n').filter((l) => l.startsWith(prefix)).map((l) => `netns ${l.split(' ')[0]}`);
  const links = spawnSync('ip', ['-br', 'link'], { encoding: 'utf8' }).stdout.split('\n').filter((l) => l.startsWith(prefix)).map((l) => `link ${l.split(/[\s@]/)[0]}`);
  return [...ns, ...links].join(', ');
};
const downHa = (dir: string): string => {
  const r = spawnSync('bash', [join(root, 'scripts/down-ha.sh')], { encoding: 'utf8', env: { ...process.env, HA_DIR: dir }, timeout: 60_000 });
  return `${r.stdout}${r.stderr}`;
};
const alive = (pid: number): boolean => { try { process.kill(pid, 0); return true; } catch { return false; } };

function upHa(dir: string): { child: ChildProcess; out: () => string; exited: Promise<number | null> } {
  let out = '';
  const child = spawn(process.execPath, [join(root, 'scripts/up-ha.mjs')], { env: { ...process.env, HA_DIR: dir, HA_NET_PREFIX: prefix, CORECTL_DIST: dist }, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout!.setEncoding('utf8').on('data', (c: string) => { out += c; });
  child.stderr!.setEncoding('utf8').on('data', (c: string) => { out += c; });
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  return { child, out: () => out, exited };
}

function etcdHealthy(ip: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request(`http://${ip}:2379/health`, { timeout: 3000 }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (c: string) => { body += c; }).on('end', () => resolve(body.includes('"true"')));
    });
    req.on('error', () => resolve(false)).on('timeout', () => req.destroy());
    req.end();
  });
}

async function until(what: string, ms: number, check: () => Promise<boolean> | boolean): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`${what}: not within ${ms / 1000} s`);
    await new Promise((r) => setTimeout(r, 300));
  }
}

t.test('make up-ha: machines in network namespaces, haproxy in front; make down-ha removes all of it', { skip: skip ?? false, timeout: 240_000 }, async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-up-ha-'));
  let up: ReturnType<typeof upHa> | undefined;
  t.teardown(async () => {
    if (up && up.child.exitCode === null) downHa(dir);
    spawnSync('ip', ['netns', 'del', `${prefix}-m1`], { stdio: 'ignore' });
    await rm(dir, { recursive: true, force: true });
  });

  // A name up-ha would use, made by someone else: refused, and neither script removes it.
  spawnSync('ip', ['netns', 'add', `${prefix}-m1`]);
  const refused = upHa(dir);
  t.not(await refused.exited, 0, 'up-ha refuses when one of its names is taken');
  t.match(refused.out(), new RegExp(`${prefix}-m1 already exists and is not listed as ours`));
  t.match(downHa(dir), /nothing running/);
  t.equal(ours(), `netns ${prefix}-m1`, 'the namespace up-ha did not make is still there, and nothing else of its name');
  spawnSync('ip', ['netns', 'del', `${prefix}-m1`]);

  up = upHa(dir);
  const u = up;
  await Promise.race([
    until('up-ha ready', 180_000, () => u.out().includes('Ctrl-C or make down-ha stops everything.')),
    u.exited.then((c) => { throw new Error(`up-ha exited (${c}): ${u.out()}`); }),
  ]);
  const out = u.out();
  t.comment(out.split('\n').filter((l) => /network:|apiserver\d|haproxy  /.test(l)).join('\n'));
  const net = /network: bridge (\S+) \((\S+)\) on (\S+); machines (.*)/.exec(out);
  t.ok(net, 'up-ha says what network it made');
  t.equal(net?.[1], `${prefix}0`);
  const machines = [...(net?.[4] ?? '').matchAll(/(\S+) (\d+\.\d+\.\d+\.\d+)/g)].map((m) => ({ ns: m[1]!, ip: m[2]! }));
  t.same(machines.map((m) => m.ns), ['m1', 'm2', 'm3', 'w1'].map((n) => `${prefix}-${n}`));
  const cp = machines.slice(0, 3);

  for (const m of cp) t.ok(await etcdHealthy(m.ip), `etcd member on ${m.ip}:2379 healthy`);
  const etcdPids = [...out.matchAll(/etcd etcd\d +\S+ +pid (\d+) +netns (\S+)/g)].map((m) => ({ pid: Number(m[1]), ns: m[2]! }));
  const apiservers = [...out.matchAll(/apiserver(\d) +https:\/\/(\S+):6443 +pid (\d+) +netns (\S+)/g)].map((m) => ({ ip: m[2]!, pid: Number(m[3]), ns: m[4]! }));
  t.same(apiservers.map((a) => a.ip), cp.map((m) => m.ip), 'API servers on the machine addresses, port 6443');
  for (const p of [...etcdPids, ...apiservers]) {
    t.equal(spawnSync('ip', ['netns', 'identify', String(p.pid)], { encoding: 'utf8' }).stdout.trim(), p.ns, `pid ${p.pid} runs in ${p.ns}`);
  }
  t.equal(new Set(apiservers.map((a) => a.ns)).size, 3, 'each API server in a namespace of its own');
  const allPids = [...out.matchAll(/pid (\d+)/g)].map((m) => Number(m[1]));

  const haproxy = /haproxy +(https:\/\/\S+) +\(kubectl: export KUBECONFIG=(\S+)\)/.exec(out);
  t.equal(haproxy?.[1], `https://${net?.[2]}:6443`, 'haproxy on the host\'s bridge address');
  const k = kubectlRunner(kubectl133!, haproxy![2]!, await mkdtemp(join(dir, 'kubectl-')));
  t.equal((await k.ok(t, ['get', '--raw', '/readyz'])).trim(), 'ok');
  let eps: string[] = [];
  await until('kubernetes endpoints list three servers', 60_000, async () => {
    const r = await k.run(['get', 'endpoints', 'kubernetes', '-o', 'jsonpath={range .subsets[*].addresses[*]}{.ip} {end}|{.subsets[*].ports[*].port}']);
    eps = r.stdout.split('|')[0]!.trim().split(' ').filter(Boolean).sort();
    return r.code === 0 && eps.length === 3 && r.stdout.split('|')[1] === '6443';
  }).catch(() => undefined);
  t.same(eps, cp.map((m) => m.ip).sort(), 'kubernetes endpoints: the three machine addresses on 6443');
  await until('node ha-node Ready', 60_000, async () => (await k.run(['get', 'node', 'ha-node', '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].status}'])).stdout === 'True');
  t.pass('the node agent in its namespace registered through the API servers and is Ready');
  let holders: string[] = [];
  await until('three API server identity leases', 30_000, async () => {
    const r = await k.run(['-n', 'kube-system', 'get', 'leases', '-l', 'apiserver.kubernetes.io/identity=kube-apiserver', '-o', 'jsonpath={range .items[*]}{.metadata.labels.kubernetes\\.io/hostname} {end}']);
    holders = r.stdout.trim().split(' ').filter(Boolean).sort();
    return holders.length === 3;
  }).catch(() => undefined);
  t.same(holders, cp.map((m) => m.ns), 'one identity lease per API server, each with its machine\'s host name');

  // One API server SIGKILLed: kubectl through haproxy goes on.
  process.kill(apiservers[0]!.pid, 'SIGKILL');
  await until('API server gone', 10_000, () => !alive(apiservers[0]!.pid));
  let okInRow = 0;
  await until('kubectl through haproxy with one API server down', 30_000, async () => {
    const r = await k.run(['get', '--raw', '/readyz']);
    okInRow = r.code === 0 && r.stdout.trim() === 'ok' ? okInRow + 1 : 0;
    return okInRow >= 5;
  });
  await k.ok(t, ['create', 'configmap', 'after-kill']);
  t.pass('kubectl works with apiserver0 killed');

  const down = downHa(dir);
  t.comment(down);
  t.match(down, /stopping make up-ha/);
  for (const m of machines) t.match(down, new RegExp(`removed network namespace ${m.ns}`));
  t.match(down, new RegExp(`removed bridge ${prefix}0`));
  t.equal(await u.exited, 0, 'up-ha exited');
  t.equal(ours(), '', 'no namespace or link of ours is left');
  t.same(allPids.filter(alive), [], 'no process of ours is left');
});

t.test('up-ha SIGKILLed: make down-ha removes what its state file lists (processes in the namespaces, haproxy, links, namespaces)', { skip: skip ?? false, timeout: 240_000 }, async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-up-ha-'));
  const u = upHa(dir);
  t.teardown(async () => { if (u.child.exitCode === null) u.child.kill('SIGKILL'); downHa(dir); await rm(dir, { recursive: true, force: true }); });
  await Promise.race([
    until('up-ha ready', 180_000, () => u.out().includes('Ctrl-C or make down-ha stops everything.')),
    u.exited.then((c) => { throw new Error(`up-ha exited (${c}): ${u.out()}`); }),
  ]);
  const pids = [...u.out().matchAll(/pid (\d+)/g)].map((m) => Number(m[1]));
  const haproxyPid = Number(/^process (\d+)$/m.exec(await readFile(join(dir, 'network'), 'utf8'))?.[1]);
  t.ok(alive(haproxyPid), 'haproxy is listed in the state file');
  u.child.kill('SIGKILL');
  await u.exited;
  t.not(ours(), '', 'the network is still there with up-ha gone');
  const down = downHa(dir);
  t.comment(down);
  t.match(down, new RegExp(`killed process ${haproxyPid} \\(haproxy\\)`));
  t.match(down, new RegExp(`removed bridge ${prefix}0`));
  t.equal(ours(), '', 'no namespace or link of ours is left');
  await until('processes gone', 10_000, () => [...pids, haproxyPid].filter(alive).length === 0).catch(() => undefined);
  t.same([...pids, haproxyPid].filter(alive), [], 'no process of ours is left');
});

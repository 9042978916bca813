#!/usr/bin/env node
// make up-ha: an HA control plane on this machine, in the foreground (Ctrl-C or make down-ha
// stops it): a three-member etcd cluster, three API servers, haproxy in front of them (when
// installed), two controller managers and two schedulers electing leaders, and one node agent
// with simulated containers.
// As root with the ip and nsenter commands, the "machines" are network namespaces on a bridge
// of ours (test/helpers/ha-network.ts): three control-plane machines (m1..m3), each with one
// etcd member (2379/2380) and one API server (6443) on its own address, a controller manager
// and a scheduler on m1 and m2, and a worker machine (w1) with the node agent; haproxy listens
// on the host's address on that bridge, port 6443. Otherwise (not root, no ip) every process is
// on 127.0.0.1 with its own port, and up-ha says so.
// Each controller manager, scheduler and the node agent has its own coreconfig listing the API
// servers in its own order (its machine's server first), failing over to the others.
// Settings: HA_DIR (default $TMPDIR/corectl-ha; wiped at start: a fresh cluster each time),
// HA_NET_PREFIX (default corectl-ha: bridge corectl-ha0, namespaces corectl-ha-m1.., veths
// corectl-ha-m1h..), HA_NETNS=0 for loopback ports even as root.
import { spawn } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const dist = resolve(process.env.CORECTL_DIST ?? 'dist');
const { startHaCluster, CLI } = await import(join(dist, 'test/helpers/ha-cluster.js'));
const { createHaNetwork, removeHaNetwork, haNetworkSkipReason } = await import(join(dist, 'test/helpers/ha-network.js'));
const { freePort } = await import(join(dist, 'src/util/free-port.js'));
const say = (s) => console.log(`up-ha: ${s}`);

const dir = resolve(process.env.HA_DIR ?? join(tmpdir(), 'corectl-ha'));
const pidFile = join(dir, 'up-ha.pid'), netFile = join(dir, 'network');
if (existsSync(pidFile)) {
  const pid = Number(readFileSync(pidFile, 'utf8'));
  let alive = false;
  try { process.kill(pid, 0); alive = true; } catch { /* gone */ }
  if (alive) { console.error(`up-ha: already running (pid ${pid}) in ${dir}: make down-ha first`); process.exit(1); }
}
// What a run that died without cleaning up left behind (its state file lists only what it made).
removeHaNetwork(netFile, (l) => say(`left over from an earlier run: ${l}`));
rmSync(dir, { recursive: true, force: true });
const logs = join(dir, 'logs');
mkdirSync(logs, { recursive: true });
writeFileSync(pidFile, String(process.pid));

const prefix = process.env.HA_NET_PREFIX || 'corectl-ha';
if (!/^[a-z][a-z0-9-]{0,10}$/.test(prefix)) { console.error('up-ha: HA_NET_PREFIX: at most 11 characters of a-z, 0-9 and -'); process.exit(1); }
const skip = process.env.HA_NETNS === '0' ? 'HA_NETNS=0' : haNetworkSkipReason();
let net;
if (!skip) {
  try {
    net = createHaNetwork(prefix, ['m1', 'm2', 'm3', 'w1'], netFile);
  } catch (e) {
    console.error(`up-ha: ${e.message}`);
    rmSync(pidFile, { force: true });
    process.exit(1);
  }
  say(`network: bridge ${net.bridge} (${net.hostIp}) on ${net.subnet}; machines ${net.machines.map((m) => `${m.netns} ${m.ip}`).join(', ')}`);
} else {
  say(`${skip}: no network namespaces; every "machine" is a port on 127.0.0.1`);
}
const machine = (i) => net?.machines[i];

const children = [];
let stopping = false;
// What stop() did, also kept in HA_DIR/stopped.log for make down-ha to print.
const stopped = [];
const said = (l) => { say(l); stopped.push(l); };
async function removeNetwork() { removeHaNetwork(netFile, said); }
process.on('exit', () => { if (existsSync(netFile)) removeHaNetwork(netFile, (l) => say(l)); });

say(`starting etcd x3 and API servers x3 in ${dir} (logs in ${logs})`);
let ha;
try {
  ha = await startHaCluster({ dir, logDir: logs, haproxy: true, ...(net ? { machines: net.machines.slice(0, 3), haproxyIp: net.hostIp } : {}) });
} catch (e) {
  console.error(`up-ha: ${e.message}`);
  await removeNetwork();
  rmSync(pidFile, { force: true });
  process.exit(1);
}
function daemon(name, m, args) {
  const out = openSync(join(logs, `${name}.log`), 'a');
  const exec = m?.exec ?? [];
  const child = spawn(exec[0] ?? process.execPath, [...exec.slice(1), ...(exec.length ? [process.execPath] : []),
    '--input-type=module', '-e', `const m = await import(${JSON.stringify('file://' + CLI)}); process.exitCode = await m.main(process.argv);`,
    'corectl', ...args,
  ], { stdio: ['ignore', out, out], env: { ...process.env, NODE_OPTIONS: '' } });
  child.once('exit', (code, sig) => { if (!stopping) say(`${name} exited (${sig ?? code}); see ${join(logs, `${name}.log`)}`); });
  children.push({ name, child, where: m?.netns });
}
const ca = join(dir, 'ca.crt'), key = join(dir, 'apiserver.key');
const orders = [[0, 1, 2], [1, 2, 0], [2, 0, 1]];
const election = ['--leader-elect=true', '--leader-elect-resource-lock=leases', '--leader-elect-lease-duration=15s', '--leader-elect-renew-deadline=10s', '--leader-elect-retry-period=2s'];
for (const m of [0, 1]) {
  const cc = await ha.coreconfigOrdered(orders[m]);
  daemon(`controller-manager${m}`, machine(m), ['controller-manager', `--coreconfig=${cc}`, '--port=0', `--root-ca-file=${ca}`, `--service-account-private-key-file=${key}`,
    `--cluster-signing-cert-file=${ca}`, `--cluster-signing-key-file=${join(dir, 'ca.key')}`, ...election]);
  daemon(`scheduler${m}`, machine(m), ['scheduler', `--coreconfig=${cc}`, '--port=0', ...election]);
}
const nodeDir = join(dir, 'node');
const worker = machine(3);
daemon('nodeagent', worker, ['nodeagent', `--coreconfig=${await ha.coreconfigOrdered(orders[2])}`, '--hostname-override=ha-node', `--root-dir=${nodeDir}`,
  `--cert-dir=${join(nodeDir, 'pki')}`, `--address=${worker?.ip ?? '127.0.0.1'}`, `--port=${worker ? 10250 : await freePort()}`,
  ...(worker ? [`--node-ip=${worker.ip}`] : []), '--read-only-port=0', '--container-runtime=fake', '--fail-swap-on=false']);

// Host-side processes too (haproxy; every process when there are no namespaces), so that make
// down-ha can stop them should this process die without stopping them.
for (const pid of [ha.haproxyPid, ...(net ? [] : [...ha.etcd.members.map((m) => m.child?.pid), ...ha.apiservers.map((a) => a.child?.pid), ...children.map((c) => c.child.pid)])]) {
  if (pid) appendFileSync(netFile, `process ${pid}\n`);
}
const at = (ns) => (ns ? `  netns ${ns}` : '');
say('running:');
ha.etcd.members.forEach((m, i) => say(`  etcd ${m.name}        ${m.endpoint}  pid ${m.child?.pid}${at(machine(i)?.netns)}`));
ha.apiservers.forEach((a) => say(`  apiserver${a.index}         ${a.url}  pid ${a.child?.pid}${at(machine(a.index)?.netns)}`));
for (const c of children) say(`  ${c.name.padEnd(19)}pid ${c.child.pid}${at(c.where)}`);
if (ha.haproxyUrl) say(`  haproxy            ${ha.haproxyUrl}  (kubectl: export KUBECONFIG=${ha.haproxyCoreconfigPath})`);
else say('  haproxy is not installed (apt-get install haproxy): kubectl goes to one server, e.g. KUBECONFIG=' + ha.coreconfigFor(0));
say('  controller managers x2, schedulers x2 (leases kube-system/kube-controller-manager and corectl-scheduler), node agent ha-node');
say(`  corectl components' coreconfig (all three servers): ${ha.coreconfigPath}`);
say('Ctrl-C or make down-ha stops everything.');

async function stop() {
  if (stopping) return;
  stopping = true;
  say('stopping');
  const alive = (c) => c.exitCode === null && c.signalCode === null;
  for (const { child: c } of children) if (alive(c)) c.kill('SIGTERM');
  await Promise.all(children.map(({ child: c }) => (!alive(c) ? undefined : new Promise((r) => { const t = setTimeout(() => { c.kill('SIGKILL'); r(); }, 10_000); c.once('exit', () => { clearTimeout(t); r(); }); }))));
  await ha.stop();
  said(`stopped etcd x3, API servers x3, ${ha.haproxyUrl ? 'haproxy, ' : ''}controller managers x2, schedulers x2, node agent`);
  await removeNetwork();
  writeFileSync(join(dir, 'stopped.log'), stopped.map((l) => `${l}\n`).join(''));
  rmSync(pidFile, { force: true });
  say('stopped');
  process.exit(0);
}
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
setInterval(() => {}, 1 << 30);

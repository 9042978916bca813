#!/usr/bin/env node
// make up-ha: an HA control plane on this machine, in the foreground (Ctrl-C or make down-ha
// stops it): a three-member etcd cluster, three API servers, haproxy in front of them (when
// installed), two controller managers and two schedulers electing leaders, and one node agent
// with simulated containers. The "machines" are loopback ports, not network namespaces: every
// process is on 127.0.0.1 with its own port, and each controller manager, scheduler and the
// node agent has its own coreconfig listing the API servers in its own order (its preferred
// server first), failing over to the others.
// Settings: HA_DIR (default $TMPDIR/corectl-ha; wiped at start: a fresh cluster each time).
import { spawn } from 'node:child_process';
import { mkdirSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const dist = resolve(process.env.CORECTL_DIST ?? 'dist');
const { startHaCluster, CLI } = await import(join(dist, 'test/helpers/ha-cluster.js'));
const { freePort } = await import(join(dist, 'src/util/free-port.js'));
const say = (s) => console.log(`up-ha: ${s}`);

const dir = resolve(process.env.HA_DIR ?? join(tmpdir(), 'corectl-ha'));
rmSync(dir, { recursive: true, force: true });
const logs = join(dir, 'logs');
mkdirSync(logs, { recursive: true });
writeFileSync(join(dir, 'up-ha.pid'), String(process.pid));

say(`starting etcd x3 and API servers x3 in ${dir} (logs in ${logs})`);
const ha = await startHaCluster({ dir, logDir: logs, haproxy: true });
const children = [];
function daemon(name, args) {
  const out = openSync(join(logs, `${name}.log`), 'a');
  const child = spawn(process.execPath, [
    '--input-type=module', '-e', `const m = await import(${JSON.stringify('file://' + CLI)}); process.exitCode = await m.main(process.argv);`,
    'corectl', ...args,
  ], { stdio: ['ignore', out, out], env: { ...process.env, NODE_OPTIONS: '' } });
  child.once('exit', (code, sig) => { if (!stopping) say(`${name} exited (${sig ?? code}); see ${join(logs, `${name}.log`)}`); });
  children.push(child);
}
let stopping = false;
const ca = join(dir, 'ca.crt'), key = join(dir, 'apiserver.key');
const machines = [[0, 1, 2], [1, 2, 0], [2, 0, 1]];
const election = ['--leader-elect=true', '--leader-elect-resource-lock=leases', '--leader-elect-lease-duration=15s', '--leader-elect-renew-deadline=10s', '--leader-elect-retry-period=2s'];
for (const m of [0, 1]) {
  const cc = await ha.coreconfigOrdered(machines[m]);
  daemon(`controller-manager${m}`, ['controller-manager', `--coreconfig=${cc}`, '--port=0', `--root-ca-file=${ca}`, `--service-account-private-key-file=${key}`,
    `--cluster-signing-cert-file=${ca}`, `--cluster-signing-key-file=${join(dir, 'ca.key')}`, ...election]);
  daemon(`scheduler${m}`, ['scheduler', `--coreconfig=${cc}`, '--port=0', ...election]);
}
const nodeDir = join(dir, 'node');
daemon('nodeagent', ['nodeagent', `--coreconfig=${await ha.coreconfigOrdered(machines[2])}`, '--hostname-override=ha-node', `--root-dir=${nodeDir}`,
  `--cert-dir=${join(nodeDir, 'pki')}`, '--address=127.0.0.1', `--port=${await freePort()}`, '--read-only-port=0', '--container-runtime=fake', '--fail-swap-on=false']);

say('running:');
ha.etcd.members.forEach((m) => say(`  etcd ${m.name}        ${m.endpoint}`));
ha.apiservers.forEach((a) => say(`  apiserver${a.index}         ${a.url}`));
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
  for (const c of children) if (alive(c)) c.kill('SIGTERM');
  await Promise.all(children.map((c) => (!alive(c) ? undefined : new Promise((r) => { const t = setTimeout(() => { c.kill('SIGKILL'); r(); }, 10_000); c.once('exit', () => { clearTimeout(t); r(); }); }))));
  await ha.stop();
  rmSync(join(dir, 'up-ha.pid'), { force: true });
  say('stopped');
  process.exit(0);
}
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
setInterval(() => {}, 1 << 30);

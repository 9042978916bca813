// scripts/host-network.sh (run by make up as root): IPv4 forwarding and br_netfilter for the
// service proxy, one line per change and nothing when all is set. Run for real inside a network
// namespace of the test's (ip_forward and bridge-nf-call-* are per namespace), and on a
// stand-in /proc/sys tree for the module-loading paths this machine cannot show.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createNetns, netnsSkipReason } from '../helpers/netns.js';

const script = join(process.cwd(), 'scripts', 'host-network.sh');

function run(prefix: readonly string[], args: string[] = [], env: Record<string, string> = {}): { code: number | null; out: string } {
  const argv = [...prefix, 'bash', script, ...args];
  const r = spawnSync(argv[0] as string, argv.slice(1), { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 30_000 });
  return { code: r.status, out: r.stdout + r.stderr };
}

const hasBridgeSysctls = existsSync('/proc/sys/net/bridge/bridge-nf-call-iptables');

t.test('in a network namespace: turns forwarding and bridge netfilter on, says so, then says nothing', { skip: netnsSkipReason() ?? false }, async (t) => {
  const ns = createNetns('cpxsys');
  t.teardown(() => ns.remove());
  const read = (name: string): string => ns.run('cat', `/proc/sys/${name}`).trim();
  const hostForward = readFileSync('/proc/sys/net/ipv4/ip_forward', 'utf8').trim();
  ns.run('sh', '-c', 'echo 0 > /proc/sys/net/ipv4/ip_forward');
  if (hasBridgeSysctls) ns.run('sh', '-c', 'echo 0 > /proc/sys/net/bridge/bridge-nf-call-iptables');

  const dry = run(ns.exec, ['--dry-run']);
  t.equal(dry.code, 1, '--dry-run exits 1 when something would change');
  t.match(dry.out, /^up: would set net\.ipv4\.ip_forward=1 \(now 0\)/m);
  if (hasBridgeSysctls) t.match(dry.out, /^up: would set net\.bridge\.bridge-nf-call-iptables=1 \(now 0\)/m);
  t.equal(read('net/ipv4/ip_forward'), '0', '--dry-run changed nothing');

  const first = run(ns.exec);
  t.equal(first.code, 0, first.out);
  t.match(first.out, /^up: set net\.ipv4\.ip_forward=1 \(was 0\)/m);
  t.equal(read('net/ipv4/ip_forward'), '1');
  if (hasBridgeSysctls) {
    t.match(first.out, /^up: set net\.bridge\.bridge-nf-call-iptables=1 \(was 0\)/m);
    t.equal(read('net/bridge/bridge-nf-call-iptables'), '1');
  }
  t.notMatch(first.out, /ip6tables/, 'a setting already on is not mentioned');

  const again = run(ns.exec);
  t.same([again.code, again.out], [0, ''], 'nothing to change: nothing printed');
  const check = run(ns.exec, ['--check']);
  t.same([check.code, check.out], [0, ''], '--check: all set, exit 0');
  t.equal(readFileSync('/proc/sys/net/ipv4/ip_forward', 'utf8').trim(), hostForward, 'the host\'s own namespace was not touched');
});

t.test('br_netfilter absent: modprobe loads it, or one line says it is not available', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-hostnet-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const sys = join(dir, 'sys');
  mkdirSync(join(sys, 'net', 'ipv4'), { recursive: true });
  writeFileSync(join(sys, 'net', 'ipv4', 'ip_forward'), '1\n');
  // A stand-in modprobe: "loading" the module makes its sysctls appear, off.
  const modprobe = join(dir, 'modprobe');
  writeFileSync(modprobe, `#!/bin/sh\n[ "$1" = br_netfilter ] || exit 1\nmkdir -p ${sys}/net/bridge\necho 0 > ${sys}/net/bridge/bridge-nf-call-iptables\necho 0 > ${sys}/net/bridge/bridge-nf-call-ip6tables\necho "$1" >> ${dir}/loaded\n`, { mode: 0o755 });
  const env = { CORECTL_PROC_SYS: sys, CORECTL_MODPROBE: modprobe };

  const dry = run([], ['--dry-run'], env);
  t.equal(dry.code, 1);
  t.match(dry.out, /^up: would load the br_netfilter module/m);
  t.notOk(existsSync(join(dir, 'loaded')), '--dry-run loads nothing');

  const first = run([], [], env);
  t.equal(first.code, 0, first.out);
  t.same(first.out.trim().split('\n').map((l) => l.replace(/ \(.*$/, '')), [
    'up: loaded the br_netfilter module',
    'up: set net.bridge.bridge-nf-call-iptables=1',
    'up: set net.bridge.bridge-nf-call-ip6tables=1',
  ], first.out);
  t.equal(readFileSync(join(sys, 'net', 'bridge', 'bridge-nf-call-iptables'), 'utf8').trim(), '1');
  t.same(run([], [], env), { code: 0, out: '' }, 'the second run has nothing to say');

  const bare = join(dir, 'bare');
  mkdirSync(join(bare, 'net', 'ipv4'), { recursive: true });
  writeFileSync(join(bare, 'net', 'ipv4', 'ip_forward'), '0\n');
  const none = run([], [], { CORECTL_PROC_SYS: bare, CORECTL_MODPROBE: join(dir, 'no-such-modprobe') });
  t.equal(none.code, 0, 'a missing module does not stop make up');
  t.match(none.out, /^up: set net\.ipv4\.ip_forward=1 \(was 0\)/m);
  t.match(none.out, /^up: br_netfilter is not available/m);
});

t.test('make up runs it as root with real containers', async (t) => {
  const up = readFileSync(join(process.cwd(), 'scripts', 'up.sh'), 'utf8');
  t.match(up, /\n\s+bash scripts\/host-network\.sh \|\| true\n/, 'up.sh calls host-network.sh');
});

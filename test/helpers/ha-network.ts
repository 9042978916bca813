/**
 * Stand-in machines for `make up-ha`: one network namespace per machine, each joined by a veth
 * pair (eth0 inside) to one Linux bridge on the host, on a private /24 no route or address of
 * the host's overlaps (10.213.N.0/24, the first free N). The host holds .1 on the bridge (haproxy
 * listens there); machine i gets .11, .12, … Processes enter a namespace with
 * `nsenter --net=` (network only: `ip netns exec` would also remount /sys) and get a host name
 * of their own (the namespace's) in a UTS namespace; every step execs, so a process's pid is
 * the daemon's.
 *
 * Everything made is written, as it is made, one `kind name` line at a time, to a state file:
 * removal (here, or scripts/down-ha.sh after a crash) deletes what that file lists and nothing
 * else. `process PID` lines name processes on the host (haproxy…): killed only while their
 * command line still names the state file's directory (a pid reused by another is left alone). Needs root and the ip and nsenter commands: haNetworkSkipReason() says why not.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, readFileSync, rmSync } from 'node:fs';
import { dirname } from 'node:path';

export interface HaMachine {
  /** Short name (m1, w1): the namespace is `<prefix>-<name>`. */
  readonly name: string;
  readonly netns: string;
  readonly ip: string;
  /** argv prefix running a command inside the namespace. */
  readonly exec: readonly string[];
}

export interface HaNetwork {
  readonly bridge: string;
  /** The host's address on the bridge. */
  readonly hostIp: string;
  readonly subnet: string;
  readonly machines: readonly HaMachine[];
}

export function haNetworkSkipReason(): string | undefined {
  if (process.getuid?.() !== 0) return 'not root (network namespaces need root)';
  for (const cmd of [['ip', '-V'], ['nsenter', '--version'], ['unshare', '--version']]) {
    if (spawnSync(cmd[0] as string, cmd.slice(1), { stdio: 'ignore' }).status !== 0) return `no ${cmd[0]} command`;
  }
  return undefined;
}

const ipNum = (ip: string): number => ip.split('.').reduce((n, o) => n * 256 + Number(o), 0);

/** The IPv4 prefixes the host uses (addresses and routes), as [network, length]. */
function hostPrefixes(): [number, number][] {
  const out: [number, number][] = [];
  const text = execFileSync('ip', ['-4', '-o', 'addr', 'show'], { encoding: 'utf8' }) + execFileSync('ip', ['-4', 'route', 'show', 'table', 'all'], { encoding: 'utf8' });
  for (const m of text.matchAll(/(?:^|\s)(\d+\.\d+\.\d+\.\d+)(?:\/(\d+))?/g)) {
    const len = m[2] === undefined ? 32 : Number(m[2]);
    if (len > 0) out.push([ipNum(m[1]!), len]);
  }
  return out;
}

/** The first 10.213.N.0/24 that overlaps nothing the host has. */
export function pickSubnet(): string {
  const used = hostPrefixes();
  const mask = (len: number): number => (len === 0 ? 0 : (0xffffffff << (32 - len)) >>> 0);
  for (let n = 0; n < 256; n++) {
    const net = ipNum(`10.213.${n}.0`);
    if (!used.some(([p, len]) => { const l = Math.min(len, 24); return ((p & mask(l)) >>> 0) === ((net & mask(l)) >>> 0); })) return `10.213.${n}`;
  }
  throw new Error('no free 10.213.N.0/24 on this host');
}

function linkExists(name: string): boolean {
  return spawnSync('ip', ['link', 'show', 'dev', name], { stdio: 'ignore' }).status === 0;
}

function netnsExists(name: string): boolean {
  return existsSync(`/var/run/netns/${name}`);
}

/**
 * Makes the bridge and one namespace per machine name. Refuses (before making anything) when a
 * name is taken; on a failure half-way, removes what it made.
 */
export function createHaNetwork(prefix: string, names: readonly string[], stateFile: string): HaNetwork {
  const bridge = `${prefix}0`;
  const taken = [bridge, ...names.flatMap((n) => [`${prefix}-${n}`, `${prefix}-${n}h`])].filter((x) => linkExists(x) || netnsExists(x));
  if (taken.length) throw new Error(`${taken.join(', ')} already exist${taken.length === 1 ? 's' : ''} and ${taken.length === 1 ? 'is' : 'are'} not listed as ours: remove them, run make down-ha, or set HA_NET_PREFIX`);
  const base = pickSubnet();
  const hostIp = `${base}.1`;
  const ip = (...argv: string[]): void => { execFileSync('ip', argv, { stdio: ['ignore', 'ignore', 'pipe'] }); };
  const made = (kind: string, name: string): void => appendFileSync(stateFile, `${kind} ${name}\n`);
  const machines: HaMachine[] = [];
  try {
    ip('link', 'add', bridge, 'type', 'bridge');
    made('bridge', bridge);
    ip('addr', 'add', `${hostIp}/24`, 'dev', bridge);
    ip('link', 'set', bridge, 'up');
    names.forEach((name, i) => {
      const netns = `${prefix}-${name}`, veth = `${prefix}-${name}h`, addr = `${base}.${11 + i}`;
      ip('netns', 'add', netns);
      made('netns', netns);
      ip('link', 'add', veth, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', netns);
      made('veth', veth);
      ip('link', 'set', veth, 'master', bridge, 'up');
      ip('-n', netns, 'addr', 'add', `${addr}/24`, 'dev', 'eth0');
      ip('-n', netns, 'link', 'set', 'eth0', 'up');
      ip('-n', netns, 'link', 'set', 'lo', 'up');
      ip('-n', netns, 'route', 'add', 'default', 'via', hostIp);
      // A UTS namespace of its own too, named after the machine: daemons that name themselves
      // by host name (the API servers' identity leases) differ as on separate machines. Each
      // step execs, so the pid stays the daemon's.
      machines.push({ name, netns, ip: addr, exec: ['nsenter', `--net=/var/run/netns/${netns}`, 'unshare', '--uts', 'sh', '-c', 'hostname "$0" && exec "$@"', netns] });
    });
  } catch (e) {
    removeHaNetwork(stateFile, () => undefined);
    const err = e as { stderr?: Buffer; message: string };
    throw new Error(`setting up the network namespaces: ${err.stderr?.toString().trim() || err.message}`);
  }
  return { bridge, hostIp, subnet: `${base}.0/24`, machines };
}

/**
 * Removes what the state file lists (processes still in its namespaces are killed first: they
 * can only be ours), says each thing removed, and deletes the state file.
 */
export function removeHaNetwork(stateFile: string, say: (line: string) => void): void {
  if (!existsSync(stateFile)) return;
  const items = readFileSync(stateFile, 'utf8').split('\n').map((l) => l.split(' ')).filter((p) => p.length === 2) as [string, string][];
  const quiet = { stdio: 'ignore' as const };
  for (const [kind, pid] of items) {
    if (kind !== 'process') continue;
    let cmd = '';
    try { cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' '); } catch { continue; }
    if (!cmd.includes(dirname(stateFile))) continue;
    try { process.kill(Number(pid), 'SIGKILL'); say(`killed process ${pid} (${cmd.split(' ')[0]})`); } catch { /* gone */ }
  }
  for (const [kind, name] of items) {
    if (kind !== 'netns' || !netnsExists(name)) continue;
    const pids = spawnSync('ip', ['netns', 'pids', name], { encoding: 'utf8' }).stdout?.split(/\s+/).filter(Boolean) ?? [];
    for (const pid of pids) { try { process.kill(Number(pid), 'SIGKILL'); say(`killed process ${pid} left in ${name}`); } catch { /* gone */ } }
  }
  for (const kind of ['veth', 'netns', 'bridge']) {
    for (const [k, name] of items) {
      if (k !== kind) continue;
      if (kind === 'netns') {
        if (netnsExists(name) && spawnSync('ip', ['netns', 'del', name], quiet).status === 0) say(`removed network namespace ${name}`);
      } else if (linkExists(name) && spawnSync('ip', ['link', 'del', name], quiet).status === 0) say(`removed ${kind} ${name}`);
    }
  }
  rmSync(stateFile, { force: true });
}

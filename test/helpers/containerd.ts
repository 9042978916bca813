/**
 * A private containerd (1.6, CRI v1) for tests, benchmarks and `make up`: its own root, state,
 * sockets, runc root, CNI config (bridge + host-local on a private bridge name and subnet) and
 * the offline busybox images from oci-image.ts. Nothing is shared with a system containerd
 * that may be running (shim sockets under /run/containerd/s coexist by hash).
 *
 * `containerdSkipReason()` tells tests whether this can work here (root, binaries, plugins).
 * `startContainerd()` brings one up; `stop()` removes every pod it ran, stops it, kills
 * leftover shims of this instance, unmounts what it left under its dir, deletes the bridge
 * and the dir. `writeContainerdConfig()` + `importImages()` are the building blocks for
 * callers that run containerd themselves.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, open, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CriRuntime } from '../../src/daemons/nodeagent/runtime/cri/cri-runtime.js';
import { containerdRegistryConfig, parseRegistries } from '../../src/daemons/nodeagent/images/registries.js';
import { BUSYBOX_IMAGE, DEFAULT_BUSYBOX_PATH, PAUSE_IMAGE, writeBusyboxImageTar } from './oci-image.js';

export const CNI_BIN_DIR = '/usr/lib/cni';

export interface ContainerdLayout {
  readonly dir: string;
  readonly configPath: string;
  /** Absolute socket path; the CRI endpoint is `unix://` + this. */
  readonly socketPath: string;
  readonly endpoint: string;
  readonly imageTar: string;
  readonly bridge: string;
  readonly subnet: string;
  readonly logPath: string;
  /** Gives the subnet back to the pool once the bridge is gone. */
  readonly releaseSubnet: () => void;
}

export interface StartedContainerd extends ContainerdLayout {
  readonly pid: number;
  /** Names of the images imported into the k8s.io namespace. */
  readonly images: readonly string[];
  stop(): Promise<void>;
}

export interface ContainerdOptions {
  /** Use this directory (created if needed) instead of a fresh temp dir; stop() still removes it. */
  readonly dir?: string;
  readonly busyboxPath?: string;
  /** e.g. '10.88.150.0/24'; default a random unused 10.88.<100-199>.0/24. */
  readonly subnet?: string;
  readonly readyTimeoutMs?: number;
  /** A registries file's text (k3s' registries.yaml shape: mirrors and configs), written into the config. */
  readonly registries?: string;
  /** Run containerd (and so its CNI bridge, pod networks and stream server) in this network namespace (`ip netns`). */
  readonly netns?: string;
}

const live = new Set<ChildProcess>();
let hookInstalled = false;

/** false when a private containerd can run here, otherwise the reason to skip. */
export function containerdSkipReason(busyboxPath = DEFAULT_BUSYBOX_PATH): false | string {
  if (process.platform !== 'linux') return 'containerd tests need Linux';
  if (process.getuid?.() !== 0) return 'containerd tests need root';
  for (const bin of ['containerd', 'ctr', 'runc', 'containerd-shim-runc-v2', 'ip', 'nsenter']) {
    const r = spawnSync('sh', ['-c', `command -v ${bin}`], { stdio: 'ignore' });
    if (r.status !== 0) return `${bin} not installed`;
  }
  if (!existsSync(busyboxPath)) return `${busyboxPath} not found (busybox-static)`;
  for (const plugin of ['bridge', 'host-local', 'loopback']) {
    if (!existsSync(join(CNI_BIN_DIR, plugin))) return `CNI plugin ${plugin} not found in ${CNI_BIN_DIR}`;
  }
  return false;
}

function usedSubnets(): string {
  const r = spawnSync('ip', ['-4', 'route', 'show'], { encoding: 'utf8' });
  return r.stdout ?? '';
}

const SUBNET_LOCKS = join(tmpdir(), 'corectl-containerd-subnets');

function pidAlive(pid: number): boolean {
  try { process.kill(pid, 0); return true; } catch { return false; }
}

/**
 * A random 10.88.<100-199>.0/24 that no route uses and no other helper instance has claimed:
 * claims are files created exclusively under SUBNET_LOCKS holding the owner's pid (claims of
 * dead processes are taken over), so parallel test files never share a subnet.
 */
function pickSubnet(): { subnet: string; release: () => void } {
  mkdirSync(SUBNET_LOCKS, { recursive: true });
  const used = usedSubnets();
  for (let i = 0; i < 100; i++) {
    const third = randomInt(100, 200);
    const subnet = `10.88.${third}.0/24`;
    if (used.includes(`10.88.${third}.`)) continue;
    const lock = join(SUBNET_LOCKS, String(third));
    try {
      writeFileSync(lock, String(process.pid), { flag: 'wx' });
    } catch {
      const owner = Number(readFileSync(lock, 'utf8') || 'NaN');
      if (Number.isInteger(owner) && pidAlive(owner)) continue;
      writeFileSync(lock, String(process.pid));
    }
    return { subnet, release: () => { try { unlinkSync(lock); } catch { /* already gone */ } } };
  }
  throw new Error('no free 10.88.x.0/24 subnet found');
}

function configToml(d: string, socketPath: string, netDir: string): string {
  const q = (s: string): string => JSON.stringify(s);
  return `version = 2
root = ${q(join(d, 'root'))}
state = ${q(join(d, 'state'))}
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]

[grpc]
  address = ${q(socketPath)}
  max_recv_message_size = 16777216
  max_send_message_size = 16777216

[ttrpc]
  address = ${q(socketPath + '.ttrpc')}

[plugins."io.containerd.internal.v1.opt"]
  path = ${q(join(d, 'opt'))}

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = ${q(PAUSE_IMAGE)}
  restrict_oom_score_adj = true
  disable_apparmor = true
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = ${q(CNI_BIN_DIR)}
    conf_dir = ${q(netDir)}
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = ${q(join(d, 'runc'))}
`;
}

/** Writes config.toml, the CNI conflist and the image tar into `dir`; starts nothing. */
export async function writeContainerdConfig(dir: string, opts: Omit<ContainerdOptions, 'dir'> = {}): Promise<ContainerdLayout> {
  for (const sub of ['net.d', 'root', 'state', 'runc', 'ipam', 'opt']) await mkdir(join(dir, sub), { recursive: true });
  const socketPath = join(dir, 'containerd.sock');
  const picked = opts.subnet ? { subnet: opts.subnet, release: () => undefined } : pickSubnet();
  const subnet = picked.subnet;
  const bridge = `cctl${randomBytes(4).toString('hex')}`; // 12 chars, under the 15 limit
  const conflist = {
    cniVersion: '0.4.0',
    name: 'corectl-pods',
    plugins: [{
      type: 'bridge', bridge, isGateway: true, ipMasq: false, hairpinMode: true,
      ipam: { type: 'host-local', dataDir: join(dir, 'ipam'), ranges: [[{ subnet }]], routes: [{ dst: '0.0.0.0/0' }] },
    }],
  };
  await writeFile(join(dir, 'net.d', '10-corectl.conflist'), JSON.stringify(conflist, null, 2));
  const configPath = join(dir, 'config.toml');
  let toml = configToml(dir, socketPath, join(dir, 'net.d'));
  if (opts.registries !== undefined) {
    const certsDir = join(dir, 'certs.d');
    await rm(certsDir, { recursive: true, force: true });
    const reg = containerdRegistryConfig(parseRegistries(opts.registries), certsDir);
    for (const h of reg.hosts) {
      await mkdir(join(certsDir, h.path, '..'), { recursive: true });
      await writeFile(join(certsDir, h.path), h.content);
    }
    toml += reg.toml;
  }
  await writeFile(configPath, toml);
  const imageTar = join(dir, 'images.oci.tar');
  await writeBusyboxImageTar(imageTar, opts.busyboxPath);
  return {
    dir, configPath, socketPath, endpoint: `unix://${socketPath}`, imageTar, bridge, subnet,
    logPath: join(dir, 'containerd.log'), releaseSubnet: picked.release,
  };
}

function ctr(socketPath: string, args: readonly string[]): { ok: boolean; out: string } {
  const r = spawnSync('ctr', ['-a', socketPath, ...args], { encoding: 'utf8', timeout: 60_000 });
  return { ok: r.status === 0, out: `${r.stdout ?? ''}${r.stderr ?? ''}` };
}

/** Imports the layout's image tar into the k8s.io namespace of a running containerd. */
export function importImages(layout: Pick<ContainerdLayout, 'socketPath' | 'imageTar'>): string[] {
  const r = ctr(layout.socketPath, ['-n', 'k8s.io', 'images', 'import', layout.imageTar]);
  if (!r.ok) throw new Error(`ctr images import failed: ${r.out.trim()}`);
  return [PAUSE_IMAGE, BUSYBOX_IMAGE];
}

/** Pids of shims serving this containerd (their command line names our socket). */
export function shimPids(socketPath: string): number[] {
  const pids: number[] = [];
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const argv = readFileSync(`/proc/${e}/cmdline`, 'utf8').split('\0');
      if (argv[0]?.includes('containerd-shim') && argv.includes(socketPath)) pids.push(Number(e));
    } catch { /* gone */ }
  }
  return pids;
}

async function unmountUnder(dir: string): Promise<void> {
  const info = await readFile('/proc/self/mountinfo', 'utf8').catch(() => '');
  const points = info.split('\n').map((l) => l.split(' ')[4] ?? '').filter((p) => p === dir || p.startsWith(`${dir}/`));
  for (const p of points.sort((a, b) => b.length - a.length)) spawnSync('umount', ['-l', p], { stdio: 'ignore' });
}

export async function startContainerd(opts: ContainerdOptions = {}): Promise<StartedContainerd> {
  const skip = containerdSkipReason(opts.busyboxPath);
  if (skip) throw new Error(`cannot start containerd: ${skip}`);
  const dir = opts.dir ?? await mkdtemp(join(tmpdir(), 'corectl-ctrd-'));
  const layout = await writeContainerdConfig(dir, opts);
  const log = await open(layout.logPath, 'a');
  const argv = ['containerd', '--config', layout.configPath];
  // nsenter enters the network namespace only (`ip netns exec` also remounts /sys, which hides
  // the cgroup mounts runc needs) and execs containerd in place: the child's pid is containerd's.
  const child = opts.netns
    ? spawn('nsenter', [`--net=/var/run/netns/${opts.netns}`, ...argv], { stdio: ['ignore', log.fd, log.fd], detached: false })
    : spawn(argv[0] ?? 'containerd', argv.slice(1), { stdio: ['ignore', log.fd, log.fd], detached: false });
  await log.close();
  live.add(child);
  child.once('exit', () => live.delete(child));
  if (!hookInstalled) {
    hookInstalled = true;
    process.once('exit', () => { for (const c of live) c.kill('SIGKILL'); });
  }
  let exited = false;
  child.once('exit', () => { exited = true; });

  const cleanup = async (): Promise<void> => {
    if (!exited) {
      child.kill('SIGTERM');
      for (let i = 0; i < 50 && !exited; i++) await sleep(100);
      if (!exited) child.kill('SIGKILL');
      for (let i = 0; i < 20 && !exited; i++) await sleep(100);
    }
    for (const pid of shimPids(layout.socketPath)) { try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ } }
    await unmountUnder(dir);
    spawnSync('ip', [...(opts.netns ? ['-n', opts.netns] : []), 'link', 'del', layout.bridge], { stdio: 'ignore' });
    layout.releaseSubnet();
    await rm(dir, { recursive: true, force: true }).catch(async () => {
      await sleep(200);
      await unmountUnder(dir);
      await rm(dir, { recursive: true, force: true });
    });
  };

  try {
    const deadline = Date.now() + (opts.readyTimeoutMs ?? 20_000);
    let delay = 25;
    while (!ctr(layout.socketPath, ['version']).ok) {
      if (exited) throw new Error(`containerd exited early; see ${layout.logPath}:\n${await readFile(layout.logPath, 'utf8').catch(() => '')}`);
      if (Date.now() > deadline) throw new Error(`containerd did not answer within the deadline; log ${layout.logPath}`);
      await sleep(delay);
      delay = Math.min(delay * 2, 500);
    }
    const images = importImages(layout);
    let stopped = false;
    return {
      ...layout,
      pid: child.pid ?? -1,
      images,
      async stop(): Promise<void> {
        if (stopped) return;
        stopped = true;
        // Remove every pod through CRI first, so containers, netns and IPs are released properly.
        const rt = new CriRuntime({ endpoint: layout.endpoint, requestTimeoutMs: 15_000 });
        try {
          const pods = await rt.listPodSandbox();
          await Promise.all(pods.map(async (p) => {
            await rt.stopPodSandbox(p.id).catch(() => undefined);
            await rt.removePodSandbox(p.id).catch(() => undefined);
          }));
        } catch { /* containerd already unhealthy: fall through to the hard cleanup */ }
        await rt.close();
        await cleanup();
      },
    };
  } catch (e) {
    await cleanup();
    throw e;
  }
}

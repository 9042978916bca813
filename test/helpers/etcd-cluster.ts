/**
 * A real multi-member etcd cluster on loopback ports (for the HA fault suite, `make up-ha` and
 * the HA bench): each member has its own client and peer port and data directory; or, given
 * hosts (network namespaces, as `make up-ha` makes them), each member on its own address with
 * etcd's usual ports. A member can
 * be killed (SIGKILL, data kept) and started again on the same ports, rejoining with its data.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../src/util/free-port.js';

export interface EtcdMember {
  readonly name: string;
  /** http://127.0.0.1:PORT */
  readonly endpoint: string;
  readonly peer: string;
  readonly dataDir: string;
  child: ChildProcess | undefined;
}

export interface EtcdCluster {
  readonly members: readonly EtcdMember[];
  /** Every client URL, for --kvstore-servers. */
  readonly endpoints: readonly string[];
  /** SIGKILLs member i (its data stays). */
  kill(i: number): Promise<void>;
  /** Starts member i again on its ports with its data. */
  restart(i: number): void;
  /** Resolves once `count` members answer /health with true (a quorum is healthy). */
  waitHealthy(count?: number, timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

const live = new Set<ChildProcess>();
let hooked = false;

function health(endpoint: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = httpRequest(new URL('/health', endpoint), { timeout: 2000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve(res.statusCode === 200 && body.includes('"true"')));
      res.on('error', () => resolve(false));
    });
    req.on('error', () => resolve(false));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

function waitExit(child: ChildProcess, ms: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    child.once('exit', () => { clearTimeout(t); resolve(); });
  });
}

/** A "machine" a member runs on: its own address (etcd's usual ports 2379/2380) and the argv prefix entering its network namespace. */
export interface EtcdHost {
  readonly ip: string;
  readonly exec: readonly string[];
}

export async function startEtcdCluster(size = 3, opts: { dir?: string; logTo?: (name: string) => 'ignore' | number; hosts?: readonly EtcdHost[] } = {}): Promise<EtcdCluster> {
  const dir = opts.dir ?? await mkdtemp(join(tmpdir(), 'corectl-etcd-cluster-'));
  const members: EtcdMember[] = [];
  for (let i = 0; i < size; i++) {
    const host = opts.hosts?.[i];
    const [ip, c, p] = host ? [host.ip, 2379, 2380] : ['127.0.0.1', await freePort(), await freePort()];
    members.push({ name: `etcd${i}`, endpoint: `http://${ip}:${c}`, peer: `http://${ip}:${p}`, dataDir: join(dir, `etcd${i}`), child: undefined });
  }
  const initial = members.map((m) => `${m.name}=${m.peer}`).join(',');
  const spawnMember = (m: EtcdMember): void => {
    const out = opts.logTo?.(m.name) ?? 'ignore';
    const exec = opts.hosts?.[members.indexOf(m)]?.exec ?? [];
    const child = spawn(exec[0] ?? 'etcd', [...exec.slice(1), ...(exec.length ? ['etcd'] : []),
      '--name', m.name, '--data-dir', m.dataDir,
      '--listen-client-urls', m.endpoint, '--advertise-client-urls', m.endpoint,
      '--listen-peer-urls', m.peer, '--initial-advertise-peer-urls', m.peer,
      '--initial-cluster', initial, '--initial-cluster-state', 'new', '--initial-cluster-token', 'corectl-ha',
      '--logger', 'zap', '--log-level', 'error',
      // Loopback: short heartbeats make elections fast, so a killed leader is replaced quickly.
      '--heartbeat-interval', '100', '--election-timeout', '1000',
      '--experimental-watch-progress-notify-interval', '1s',
    ], { stdio: ['ignore', out, out], detached: false });
    live.add(child);
    child.once('exit', () => live.delete(child));
    m.child = child;
  };
  if (!hooked) {
    hooked = true;
    process.once('exit', () => { for (const c of live) c.kill('SIGKILL'); });
  }
  for (const m of members) spawnMember(m);

  const cluster: EtcdCluster = {
    members,
    endpoints: members.map((m) => m.endpoint),
    async kill(i) {
      const m = members[i]!;
      if (!m.child) return;
      m.child.kill('SIGKILL');
      await waitExit(m.child, 5000);
      m.child = undefined;
    },
    restart(i) {
      const m = members[i]!;
      if (m.child) throw new Error(`${m.name} is running`);
      spawnMember(m);
    },
    async waitHealthy(count = size, timeoutMs = 60_000) {
      const end = Date.now() + timeoutMs;
      for (;;) {
        const ok = (await Promise.all(members.filter((m) => m.child).map((m) => health(m.endpoint)))).filter(Boolean).length;
        if (ok >= count) return;
        if (Date.now() > end) throw new Error(`etcd cluster: ${ok} of ${size} members healthy, wanted ${count}`);
        await new Promise((r) => setTimeout(r, 200));
      }
    },
    async stop() {
      for (const m of members) if (m.child) { m.child.kill('SIGKILL'); await waitExit(m.child, 5000); m.child = undefined; }
      if (!opts.dir) await rm(dir, { recursive: true, force: true });
    },
  };
  try {
    await cluster.waitHealthy(size);
  } catch (e) {
    await cluster.stop();
    throw e;
  }
  return cluster;
}

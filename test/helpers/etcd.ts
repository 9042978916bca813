/**
 * Starts a real single-member etcd on free loopback ports with a temporary data directory,
 * for tests. `etcdAvailable()` tells whether an `etcd` binary is on PATH, so test files can
 * skip cleanly where it is not installed.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Backend, KeyValue, WatchEvent } from '../../src/storage/interface.js';
import { freePort } from '../../src/util/free-port.js';

export interface EtcdTlsFiles {
  /** Server certificate and key etcd presents to clients. */
  readonly certFile: string;
  readonly keyFile: string;
  /** CA the helper uses to check etcd's certificate while waiting for it. */
  readonly caFile: string;
  /** With it, etcd demands client certificates signed by this CA (--client-cert-auth). */
  readonly clientCaFile?: string;
  /** A client pair the helper uses for its readiness probe when client certs are demanded. */
  readonly clientCertFile?: string;
  readonly clientKeyFile?: string;
}

export interface StartedEtcd {
  /** Client URL, http://127.0.0.1:PORT or https://127.0.0.1:PORT. */
  readonly endpoint: string;
  readonly dataDir: string;
  /** Kills etcd (SIGKILL after a grace period) and removes the data directory. */
  stop(): Promise<void>;
}

export interface StartEtcdOptions {
  readonly tls?: EtcdTlsFiles;
  /** Extra command-line flags for etcd. */
  readonly extraArgs?: readonly string[];
  /** etcd's --experimental-watch-progress-notify-interval; default '1s'. */
  readonly progressNotifyInterval?: string;
  /** How long to wait for etcd to answer; default 20 s. */
  readonly readyTimeoutMs?: number;
}

let availability: boolean | undefined;

/** etcd processes not stopped yet: killed when the test process exits without stopping them. */
const live = new Set<ChildProcess>();
let exitHookInstalled = false;
function track(child: ChildProcess): void {
  live.add(child);
  child.once('exit', () => live.delete(child));
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once('exit', () => {
      for (const c of live) c.kill('SIGKILL');
    });
  }
}

/** True when an `etcd` binary runs from PATH. */
export function etcdAvailable(): boolean {
  if (availability === undefined) {
    const r = spawnSync('etcd', ['--version'], { stdio: 'ignore', timeout: 10_000 });
    availability = r.status === 0;
  }
  return availability;
}

/** A tap `skip` value: false when etcd is installed, otherwise the reason to skip. */
export function skipWithoutEtcd(): false | string {
  return etcdAvailable() ? false : 'etcd not installed';
}


function probeTcp(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = connect({ host: '127.0.0.1', port }, () => {
      sock.destroy();
      resolve(true);
    });
    sock.on('error', () => resolve(false));
  });
}

function probeHealth(endpoint: string, tls: EtcdTlsFiles | undefined): Promise<boolean> {
  // Client certificates demanded but none given to probe with: a listening port will do.
  if (tls?.clientCaFile && !(tls.clientCertFile && tls.clientKeyFile)) return probeTcp(Number(new URL(endpoint).port));
  return new Promise((resolve) => {
    const url = new URL('/health', endpoint);
    const onResponse = (res: import('node:http').IncomingMessage) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve(res.statusCode === 200 && body.includes('true')));
      res.on('error', () => resolve(false));
    };
    const req = tls
      ? httpsRequest(url, {
          ca: readFileSync(tls.caFile),
          cert: tls.clientCertFile ? readFileSync(tls.clientCertFile) : undefined,
          key: tls.clientKeyFile ? readFileSync(tls.clientKeyFile) : undefined,
          timeout: 2000,
        }, onResponse)
      : httpRequest(url, { timeout: 2000 }, onResponse);
    req.on('error', () => resolve(false));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

function waitExit(child: ChildProcess, ms: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

async function startOnce(opts: StartEtcdOptions): Promise<StartedEtcd> {
  const dataDir = await mkdtemp(join(tmpdir(), 'corectl-etcd-'));
  const [clientPort, peerPort] = [await freePort(), await freePort()];
  const scheme = opts.tls ? 'https' : 'http';
  const endpoint = `${scheme}://127.0.0.1:${clientPort}`;
  const peer = `http://127.0.0.1:${peerPort}`;
  const args = [
    '--name', 'default',
    '--data-dir', join(dataDir, 'data'),
    '--listen-client-urls', endpoint,
    '--advertise-client-urls', endpoint,
    '--listen-peer-urls', peer,
    '--initial-advertise-peer-urls', peer,
    '--initial-cluster', `default=${peer}`,
    '--logger', 'zap',
    '--log-level', 'error',
    // Idle synced watchers get a progress notification this often (etcd's default is 10 min);
    // before etcd 3.4.31/3.5.13 it is the only ordered source of watch progress.
    '--experimental-watch-progress-notify-interval', opts.progressNotifyInterval ?? '1s',
  ];
  if (opts.tls) {
    args.push('--cert-file', opts.tls.certFile, '--key-file', opts.tls.keyFile);
    if (opts.tls.clientCaFile) args.push('--client-cert-auth', '--trusted-ca-file', opts.tls.clientCaFile);
  }
  args.push(...(opts.extraArgs ?? []));

  const child = spawn('etcd', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  track(child);
  let stderrTail = '';
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (c: string) => {
    stderrTail = (stderrTail + c).slice(-4000);
  });
  let spawnError: Error | undefined;
  child.on('error', (e) => (spawnError = e));

  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      if (!(await waitExit(child, 5000))) {
        child.kill('SIGKILL');
        await waitExit(child, 5000);
      }
    }
    await rm(dataDir, { recursive: true, force: true });
  };

  const deadline = Date.now() + (opts.readyTimeoutMs ?? 20_000);
  let delay = 20;
  while (Date.now() < deadline) {
    if (spawnError || child.exitCode !== null || child.signalCode !== null) {
      await stop();
      throw new Error(`etcd exited before answering (${spawnError?.message ?? `code ${child.exitCode}`}): ${stderrTail.trim()}`);
    }
    if (await probeHealth(endpoint, opts.tls)) return { endpoint, dataDir, stop };
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(delay * 2, 250);
  }
  await stop();
  throw new Error(`etcd at ${endpoint} did not answer within the deadline: ${stderrTail.trim()}`);
}

/**
 * Starts etcd and waits until /health answers. A port taken between choosing and binding
 * makes etcd exit at once; that is retried a few times with new ports.
 */
export async function startEtcd(opts: StartEtcdOptions = {}): Promise<StartedEtcd> {
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      return await startOnce(opts);
    } catch (e) {
      lastError = e;
      if (!(e instanceof Error && /address already in use/.test(e.message))) break;
    }
  }
  throw lastError;
}

/**
 * A view of a backend under a key prefix: every key going in gets `prefix` in front, every
 * key coming out loses it. Lets test cases share one etcd without seeing each other's keys
 * (revisions stay shared: cases must not run concurrently on one etcd).
 */
export function withKeyPrefix(backend: Backend, prefix: string): Backend {
  const add = (k: string) => prefix + k;
  const strip = (kv: KeyValue): KeyValue => ({ ...kv, key: kv.key.startsWith(prefix) ? kv.key.slice(prefix.length) : kv.key });
  const stripEvent = (e: WatchEvent): WatchEvent => (e.prevKv ? { ...e, kv: strip(e.kv), prevKv: strip(e.prevKv) } : { ...e, kv: strip(e.kv) });
  return {
    name: backend.name,
    async get(key, opts) {
      const r = await backend.get(add(key), opts);
      return { kv: r.kv && strip(r.kv), revision: r.revision };
    },
    async range(key, opts = {}) {
      const r = await backend.range(add(key), {
        ...opts,
        end: opts.end === undefined ? undefined : add(opts.end),
        after: opts.after === undefined ? undefined : add(opts.after),
      });
      return { ...r, kvs: r.kvs.map(strip) };
    },
    create: (key, value, opts) => backend.create(add(key), value, opts),
    update: (key, value, expected, opts) => backend.update(add(key), value, expected, opts),
    async delete(key, expected, opts) {
      const r = await backend.delete(add(key), expected, opts);
      return { ...r, prevKv: strip(r.prevKv) };
    },
    watch(key, opts) {
      const inner = backend.watch(add(key), opts);
      return {
        close: () => inner.close(),
        async *[Symbol.asyncIterator]() {
          for await (const b of inner) yield { revision: b.revision, events: b.events.map(stripEvent) };
        },
      };
    },
    compact: (r) => backend.compact(r),
    compactedRevision: () => backend.compactedRevision(),
    currentRevision: () => backend.currentRevision(),
    close: () => backend.close(),
  };
}

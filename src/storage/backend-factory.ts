/**
 * Chooses and opens the storage backends from the API server's store options:
 *
 *   --kvstore-servers            empty: the embedded LevelDB store in the data directory;
 *                                otherwise server URLs, the scheme choosing the driver
 *                                (http:// and https:// mean etcd v3)
 *   --kvstore-servers-overrides  'group/resource#url;url' (core group: '/pods#...') sends one
 *                                resource to its own servers
 *   --storage-backend            '' or 'kvstore3'; 'kvstore2' (the v2 API) is refused
 *   --kvstore-cafile/certfile/keyfile   TLS towards https:// servers (overrides too)
 *
 * Drivers live in one explicit registry keyed by URL scheme (the kine pattern, without
 * registration by side-effect imports). Each distinct server list is opened once and shared.
 */
import pino, { type Logger } from 'pino';
import type { Backend } from './interface.js';
import { StorageError } from './errors.js';
import type { EtcdTlsOptions } from './etcd/etcd-client.js';

export interface BackendSet {
  /** The store for every resource without an override. */
  readonly default: Backend;
  /** The store for one resource: its override, or the default. The core group is ''. */
  for(group: string, resource: string): Backend;
  /** Closes every backend of the set once. */
  close(): Promise<void>;
}

export interface OpenBackendOptions {
  /** --kvstore-servers. */
  readonly servers: readonly string[];
  /** --kvstore-servers-overrides. */
  readonly overrides: readonly string[];
  /** Directory of the embedded store when no servers are given. */
  readonly dataDir: string;
  /** --storage-backend. */
  readonly storageBackend?: string;
  readonly tls?: EtcdTlsOptions;
  readonly log?: Logger;
}

interface DriverContext {
  readonly tls?: EtcdTlsOptions;
  readonly log: Logger;
}

type Driver = (servers: readonly string[], ctx: DriverContext) => Promise<Backend>;

async function openEtcd(servers: readonly string[], ctx: DriverContext): Promise<Backend> {
  const { openEtcdBackend } = await import('./etcd/etcd-backend.js');
  return openEtcdBackend({ endpoints: servers, tls: ctx.tls, log: ctx.log });
}

/** URL scheme → driver. */
const drivers: ReadonlyMap<string, Driver> = new Map([
  ['http', openEtcd],
  ['https', openEtcd],
]);

const SUPPORTED_SCHEMES = [...drivers.keys()].join(', ');

/** The driver for a server list: every URL well-formed, one driver for all. */
export function driverFor(servers: readonly string[], option = '--kvstore-servers'): Driver {
  let chosen: Driver | undefined;
  for (const s of servers) {
    const m = /^([a-zA-Z][a-zA-Z0-9+.-]*):\/\/([^/]+)/.exec(s);
    if (!m) throw new StorageError('InvalidArgument', `${option}: ${JSON.stringify(s)} is not a URL of the form scheme://host:port`);
    const scheme = m[1]!.toLowerCase();
    const driver = drivers.get(scheme);
    if (!driver) {
      throw new StorageError('InvalidArgument', `${option}: unsupported scheme "${scheme}" in ${s} (supported: ${SUPPORTED_SCHEMES})`);
    }
    if (chosen && chosen !== driver) throw new StorageError('InvalidArgument', `${option}: servers of different kinds in one list (${servers.join(', ')})`);
    chosen = driver;
  }
  if (!chosen) throw new StorageError('InvalidArgument', `${option}: no servers given`);
  return chosen;
}

export interface ResourceOverride {
  readonly group: string;
  readonly resource: string;
  readonly servers: readonly string[];
}

/** Parses one 'group/resource#url;url' override (core group: '/pods#...'). */
export function parseOverride(entry: string): ResourceOverride {
  const bad = (why: string) =>
    new StorageError('InvalidArgument', `--kvstore-servers-overrides: invalid entry ${JSON.stringify(entry)}: ${why} (want group/resource#http://host:port;http://host:port)`);
  const hash = entry.indexOf('#');
  if (hash < 0) throw bad('no "#" before the servers');
  const target = entry.slice(0, hash);
  const slash = target.indexOf('/');
  if (slash < 0 || target.indexOf('/', slash + 1) >= 0) throw bad('the resource must be written group/resource');
  const group = target.slice(0, slash).trim();
  const resource = target.slice(slash + 1).trim();
  if (!resource) throw bad('empty resource');
  const servers = entry.slice(hash + 1).split(';').map((s) => s.trim()).filter((s) => s !== '');
  if (servers.length === 0) throw bad('no servers');
  return { group, resource, servers };
}

function checkStorageBackend(value: string | undefined): void {
  const v = (value ?? '').trim();
  if (v === '' || v === 'kvstore3') return;
  if (v === 'kvstore2') throw new StorageError('InvalidArgument', 'storage backend kvstore2 (the v2 API) is not supported; use kvstore3');
  throw new StorageError('InvalidArgument', `unknown storage backend ${JSON.stringify(v)} (supported: kvstore3)`);
}

/** Opens the default backend and every override; closes what it opened if any of them fails. */
export async function openBackend(opts: OpenBackendOptions): Promise<BackendSet> {
  const log = opts.log ?? pino({ level: 'silent' });
  checkStorageBackend(opts.storageBackend);
  const servers = opts.servers.map((s) => s.trim()).filter((s) => s !== '');
  // Validate everything before opening anything.
  const defaultDriver = servers.length > 0 ? driverFor(servers) : undefined;
  const overrides = opts.overrides.map((o) => o.trim()).filter((o) => o !== '').map(parseOverride);
  const overrideDrivers = overrides.map((o) => driverFor(o.servers, `--kvstore-servers-overrides ${o.group}/${o.resource}`));

  const ctx: DriverContext = { tls: opts.tls, log };
  const opened = new Map<string, Backend>();
  const openShared = async (list: readonly string[], driver: Driver): Promise<Backend> => {
    const id = [...list].sort().join(';');
    let b = opened.get(id);
    if (!b) {
      b = await driver(list, ctx);
      opened.set(id, b);
    }
    return b;
  };
  let embedded: Backend | undefined;
  const closeAll = async () => {
    const all = [...opened.values(), ...(embedded ? [embedded] : [])];
    await Promise.allSettled(all.map((b) => b.close()));
  };

  try {
    let defaultBackend: Backend;
    if (defaultDriver) {
      defaultBackend = await openShared(servers, defaultDriver);
      log.info({ servers }, 'storage: etcd');
    } else {
      const { openLevelBackend } = await import('./leveldb/level-backend.js');
      embedded = await openLevelBackend({ dir: opts.dataDir, log });
      defaultBackend = embedded;
      log.info({ dir: opts.dataDir }, 'storage: embedded LevelDB');
    }
    const routes = new Map<string, Backend>();
    for (let i = 0; i < overrides.length; i++) {
      const o = overrides[i]!;
      routes.set(`${o.group}/${o.resource}`, await openShared(o.servers, overrideDrivers[i]!));
      log.info({ group: o.group, resource: o.resource, servers: o.servers }, 'storage: resource override');
    }
    let closed: Promise<void> | undefined;
    return {
      default: defaultBackend,
      for: (group, resource) => routes.get(`${group}/${resource}`) ?? defaultBackend,
      close: () => (closed ??= closeAll()),
    };
  } catch (e) {
    await closeAll();
    throw e;
  }
}

/**
 * `corectl controller-manager`: connects to the API server, optionally takes the leader lock,
 * starts the selected controllers (one shared informer per resource) and serves /healthz,
 * /metrics and /debug/pprof/. Stops cleanly when the signal aborts; exits non-zero when
 * leadership is lost (another instance now runs the controllers).
 */
import { setMaxListeners } from 'node:events';
import type { Logger } from 'pino';
import type { ControllerManagerConfig } from '../../flags/controller-manager.js';
import {
  ALL_CONTROLLER_NAMES, IMPLEMENTED, enabledControllers, unknownControllers,
  type Controller, type ControllerContext,
} from './controller-registry.js';
import { SharedInformerFactory, loadConnection, newClient, runLeaderElection, type RestClient } from './deps.js';
import { newEventRecorder } from './events.js';
import { serviceAccountControllerClients, sharedControllerClients, type ControllerClients } from './controller-clients.js';
import { startServers, type Servers } from './servers.js';
import { delegatedAccess } from '../../auth/delegated.js';
import { abortableSleep, withOwnSignal } from '../../util/abort.js';

export interface RunContext {
  log: Logger;
  signal: AbortSignal;
  /** Called once the servers listen (tests read the bound ports). */
  onServing?: (servers: Servers) => void;
}

/** Namespace and name of the leader lock object. */
export const LEADER_LOCK = { namespace: 'kube-system', name: 'kube-controller-manager' } as const;


/** The controllers to start, and the enabled names we cannot run yet. */
export async function selectControllers(selection: readonly string[]): Promise<{ controllers: Controller[]; notImplemented: string[] }> {
  const controllers: Controller[] = [];
  const notImplemented: string[] = [];
  for (const name of enabledControllers(selection)) {
    const make = IMPLEMENTED[name];
    if (make) controllers.push(await make());
    else notImplemented.push(name);
  }
  return { controllers, notImplemented };
}

/** Runs the controllers until the signal aborts; resolves after all of them stopped. */
async function runControllers(controllers: Controller[], client: RestClient, clients: ControllerClients, apiServerCa: Buffer | undefined, config: ControllerManagerConfig, log: Logger, outer: AbortSignal): Promise<void> {
  // Every informer, queue and request listens on this signal: lift Node's listener warning.
  const stop = new AbortController();
  setMaxListeners(0, stop.signal);
  const onStop = (): void => stop.abort(outer.reason);
  if (outer.aborted) onStop(); else outer.addEventListener('abort', onStop, { once: true });
  const signal = stop.signal;
  // Each informer resyncs at a random period in [min-resync-period, twice that).
  const informers = new SharedInformerFactory({ client, minResyncPeriodMs: config.minResyncPeriod, log });
  const running: Promise<void>[] = [];
  for (const c of controllers) {
    if (signal.aborted) break;
    const clog = log.child({ controller: c.name });
    // Its own identity for what it writes (and its events); the informers stay shared.
    const own = clients.clientFor(c.name);
    const ctx: ControllerContext = {
      client: own, informers, config, log: clog, signal, events: (component) => newEventRecorder(own, component, clog),
      ...(apiServerCa ? { apiServerCa } : {}),
    };
    log.info({ controller: c.name, ...(clients.accountFor(c.name) ? { user: clients.accountFor(c.name) } : {}) }, 'starting controller');
    running.push(c.run(ctx).catch((e: unknown) => { log.error({ controller: c.name, err: (e as Error).message }, 'controller stopped with an error'); }));
    await abortableSleep(config.controllerStartInterval, signal);
  }
  informers.start(signal);
  try {
    await Promise.all(running);
    await informers.stopped();
  } finally {
    outer.removeEventListener('abort', onStop);
  }
}

export async function run(config: ControllerManagerConfig, ctx: RunContext): Promise<number> {
  return withOwnSignal(ctx.signal, (signal) => runWith(config, { ...ctx, signal }));
}

async function runWith(config: ControllerManagerConfig, ctx: RunContext): Promise<number> {
  const log = ctx.log;
  const unknown = unknownControllers(config.controllers);
  if (unknown.length) throw new Error(`unknown controller(s) in --controllers: ${unknown.join(', ')} (known: ${ALL_CONTROLLER_NAMES.join(', ')})`);
  const connection = await loadConnection(config.coreconfig, config.master);
  const settings = { qps: config.coreApiQps, burst: config.coreApiBurst, contentType: config.coreApiContentType };
  const client = newClient(connection, { ...settings, log: log.child({ component: 'client' }) });
  const clients = config.useServiceAccountCredentials
    ? serviceAccountControllerClients({ client, connection, settings, log })
    : sharedControllerClients(client);
  const { controllers, notImplemented } = await selectControllers(config.controllers);
  if (notImplemented.length) log.warn({ controllers: notImplemented }, 'enabled controllers that are not implemented yet will not run');
  log.info({ controllers: controllers.map((c) => c.name) }, 'controllers selected');

  let servers: Servers | undefined;
  try {
    servers = await startServers({
      address: config.address || '0.0.0.0', port: config.port, bindAddress: config.bindAddress || '0.0.0.0', securePort: config.securePort,
      certDir: config.certDir, tlsCertFile: config.tlsCertFile, tlsPrivateKeyFile: config.tlsPrivateKeyFile, profiling: config.profiling,
      tlsMinVersion: config.tlsMinVersion, tlsCipherSuites: config.tlsCipherSuites,
      tlsSniCertKey: config.tlsSniCertKey, http2MaxStreamsPerConnection: config.http2MaxStreamsPerConnection,
      clientCa: connection.ca,
      access: delegatedAccess({ create: (ref, obj) => client.create(ref, obj), clientCa: connection.ca !== undefined, log: log.child({ component: 'secure-port' }) }),
    }, log, ctx.signal);
    ctx.onServing?.(servers);
    if (!config.leaderElect) {
      await runControllers(controllers, client, clients, connection.ca, config, log, ctx.signal);
      return 0;
    }
    // Leader election gets its own client (own qps bucket and connection), as Kubernetes does,
    // so controller start-up traffic can never starve lease renewals past the renew deadline.
    const electionClient = newClient(connection, { qps: config.coreApiQps, burst: config.coreApiBurst, contentType: config.coreApiContentType, userAgent: 'corectl-controller-manager/leader-election', log: log.child({ component: 'leader-election-client' }) });
    const outcome = await runLeaderElection({
      client: electionClient, lock: config.leaderElectResourceLock as 'leases' | 'endpoints' | 'configmaps',
      namespace: LEADER_LOCK.namespace, name: LEADER_LOCK.name,
      leaseDurationMs: config.leaderElectLeaseDuration, renewDeadlineMs: config.leaderElectRenewDeadline, retryPeriodMs: config.leaderElectRetryPeriod,
      log: log.child({ component: 'leader-election' }), signal: ctx.signal,
      onStartedLeading: (leading) => runControllers(controllers, client, clients, connection.ca, config, log, leading),
    });
    if (outcome === 'lost') {
      servers.setHealthy(false, 'leader election lost');
      log.error('leader election lost: exiting so that a restart campaigns again');
      return 1;
    }
    return 0;
  } finally {
    await servers?.close();
    clients.close();
    client.close();
  }
}

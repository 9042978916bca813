/**
 * `corectl scheduler`: connects to the API server, optionally takes the leader lock
 * (kube-system/corectl-scheduler, of the --leader-elect-resource-lock kind), schedules pods
 * whose spec.schedulerName is --scheduler-name, and serves health and metrics.
 * Stops cleanly when the signal aborts (0); returns 1 when leadership is lost, so that a
 * restart campaigns again.
 */
import { setMaxListeners } from 'node:events';
import type { Logger } from 'pino';
import { loadCoreconfig } from '../../client/coreconfig.js';
import { SharedInformerFactory } from '../../client/informer-factory.js';
import { LeaderElector } from '../../client/leader-election.js';
import { newResourceLock, type LockKind } from '../../client/resource-lock.js';
import { RestClient } from '../../client/rest-client.js';
import type { SchedulerConfig } from '../../flags/scheduler.js';
import { ApiBinder } from './binder.js';
import { DEFAULT_PLUGINS } from './algorithm.js';
import { VolumeBinding } from './volume-binding.js';
import { EventRecorder } from './events.js';
import { PromSchedulerMetrics } from './metrics.js';
import { ApiPodConditionWriter } from './pod-conditions.js';
import { Scheduler } from './scheduler.js';
import { startServers, type Servers } from './servers.js';
import { delegatedAccess } from '../../auth/delegated.js';
import { withOwnSignal } from '../../util/abort.js';

export interface RunContext {
  log: Logger;
  signal: AbortSignal;
  /** Called once the servers listen (tests read the bound ports). */
  onServing?: (servers: Servers) => void;
  /** Called when the scheduler starts (tests inspect it). */
  onScheduler?: (scheduler: Scheduler) => void;
}

export const LEADER_LOCK = { namespace: 'kube-system', name: 'corectl-scheduler' } as const;

export async function run(config: SchedulerConfig, ctx: RunContext): Promise<number> {
  return withOwnSignal(ctx.signal, (signal) => runWith(config, { ...ctx, signal }));
}

async function runWith(config: SchedulerConfig, ctx: RunContext): Promise<number> {
  const log = ctx.log;
  const connection = await loadCoreconfig({ ...(config.coreconfig ? { path: config.coreconfig } : {}), ...(config.master ? { master: config.master } : {}) });
  const client = new RestClient({
    connection, qps: config.coreApiQps, burst: config.coreApiBurst, contentType: config.coreApiContentType,
    userAgent: 'corectl-scheduler', log: log.child({ component: 'client' }),
  });
  const metrics = new PromSchedulerMetrics(config.schedulerName);
  let servers: Servers | undefined;
  // Events get their own client and rate budget, as in Kubernetes' scheduler, so that writing
  // "Scheduled" events never delays bindings.
  const eventClient = new RestClient({
    connection, qps: config.coreApiQps, burst: config.coreApiBurst, contentType: config.coreApiContentType,
    userAgent: 'corectl-scheduler/events', log: log.child({ component: 'event-client' }),
  });
  const events = new EventRecorder({ client: eventClient, component: config.schedulerName, log: log.child({ component: 'events' }) });
  const conditions = new ApiPodConditionWriter(client, log.child({ component: 'pod-conditions' }));
  const schedule = async (outer: AbortSignal): Promise<void> => {
    // Informers, the queue and every binding listen on this signal: lift Node's listener warning.
    const scope = new AbortController();
    setMaxListeners(0, scope.signal);
    const signal = AbortSignal.any([outer, scope.signal]);
    setMaxListeners(0, signal);
    const informers = new SharedInformerFactory({ client, minResyncPeriodMs: 0, log: log.child({ component: 'informers' }) });
    // Claims and volumes: volume-binding.ts filters nodes and binds delayed claims before the pod.
    const volumes = new VolumeBinding(informers, client);
    const scheduler: Scheduler = new Scheduler({
      schedulerName: config.schedulerName, informers, events, conditions, metrics,
      binder: volumes.wrap(new ApiBinder(client), (name) => scheduler.cache.listNodes().find((n) => n.name === name)?.node),
      plugins: { ...DEFAULT_PLUGINS, filters: [...DEFAULT_PLUGINS.filters, volumes.filter] },
      log: log.child({ component: 'scheduler' }),
    });
    volumes.onChange(() => scheduler.queue.moveAllToActiveOrBackoff());
    metrics.setSources({ pending: () => scheduler.queue.sizes, cache: () => ({ nodes: scheduler.cache.nodeCount(), pods: scheduler.cache.podCount() }) });
    ctx.onScheduler?.(scheduler);
    const synced = informers.waitForCacheSync(signal).then((ok) => { if (ok) servers?.setReady(true); });
    try {
      await scheduler.run(signal);
    } finally {
      scope.abort();
      await synced;
      await informers.stopped();
      servers?.setReady(false);
    }
  };
  try {
    servers = await startServers({ port: config.port, securePort: config.securePort, bindAddress: config.bindAddress || '0.0.0.0', profiling: config.profiling, clientCa: connection.ca,
      access: delegatedAccess({ create: (ref, obj) => client.create(ref, obj), clientCa: connection.ca !== undefined, log: log.child({ component: 'secure-port' }) }) }, metrics.registry, log, ctx.signal);
    ctx.onServing?.(servers);
    if (!config.leaderElect) {
      await schedule(ctx.signal);
      return 0;
    }
    let work: Promise<void> | undefined;
    const elector = new LeaderElector({
      lock: newResourceLock(config.leaderElectResourceLock as LockKind, client, LEADER_LOCK.namespace, LEADER_LOCK.name),
      leaseDurationMs: config.leaderElectLeaseDuration, renewDeadlineMs: config.leaderElectRenewDeadline, retryPeriodMs: config.leaderElectRetryPeriod,
      releaseOnCancel: true, log: log.child({ component: 'leader-election' }),
      callbacks: {
        onStartedLeading: (leading) => { work = schedule(leading); return work; },
        onNewLeader: (id) => log.info({ leader: id }, 'new leader observed'),
      },
    });
    log.info({ lock: `${config.leaderElectResourceLock}/${LEADER_LOCK.namespace}/${LEADER_LOCK.name}`, identity: elector.identity }, 'campaigning for the scheduler lock');
    await elector.run(ctx.signal);
    await work;
    if (!ctx.signal.aborted) {
      servers.setHealthy(false, 'leader election lost');
      log.error('leader election lost: exiting so that a restart campaigns again');
      return 1;
    }
    return 0;
  } finally {
    await Promise.all([events.drain(), conditions.drain()]);
    await servers?.close();
    client.close();
    eventClient.close();
  }
}

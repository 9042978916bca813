/**
 * The one adapter between the controller manager and the client library (src/client).
 * Controllers import client pieces only from here.
 */
import type { Logger } from 'pino';
import { loadCoreconfig, type ClientConnection } from '../../client/coreconfig.js';
import { LeaderElector } from '../../client/leader-election.js';
import { newResourceLock, type LockKind } from '../../client/resource-lock.js';
import { RestClient } from '../../client/rest-client.js';

export { RestClient };
export type { ClientConnection };
export type { ResourceRef, PatchType } from '../../client/rest-client.js';
export { keyOf, splitKey, type IndexFunc } from '../../client/indexer.js';
export { SharedInformerFactory, type InformerKey } from '../../client/informer-factory.js';
export { SharedIndexInformer, deletedObject, type EventHandler, type DeletedFinalStateUnknown } from '../../client/informer.js';
export { WorkQueue, type HandlerResult } from '../../client/workqueue.js';
export { realClock, type Clock } from '../../client/clock.js';

export interface ClientSettings {
  qps: number;
  burst: number;
  contentType: string;
  userAgent?: string;
  log?: Logger;
}

/** Where the API server is and how to authenticate: --coreconfig, overridden by --master. */
export function loadConnection(coreconfig: string, master: string): Promise<ClientConnection> {
  return loadCoreconfig({ ...(coreconfig ? { path: coreconfig } : {}), ...(master ? { master } : {}) });
}

/** Builds the API client from the daemon's connection options. */
export function newClient(connection: ClientConnection, s: ClientSettings): RestClient {
  return new RestClient({
    connection, qps: s.qps, burst: s.burst, contentType: s.contentType,
    userAgent: s.userAgent ?? 'corectl-controller-manager', ...(s.log ? { log: s.log } : {}),
  });
}

export interface LeaderElectionOptions {
  client: RestClient;
  lock: LockKind;
  namespace: string;
  name: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  log: Logger;
  signal: AbortSignal;
  /** Runs while leading; its signal aborts when leadership is lost or on stop. */
  onStartedLeading(signal: AbortSignal): Promise<void>;
}

/**
 * Campaigns for the lock and runs `onStartedLeading` while leading. Resolves after the work
 * returned: 'lost' when leadership was lost while the outer signal was live, else 'stopped'.
 * On a clean stop the lock is released so a standby takes over at once.
 */
export async function runLeaderElection(o: LeaderElectionOptions): Promise<'lost' | 'stopped'> {
  let work: Promise<void> | undefined;
  let lost = false;
  const elector = new LeaderElector({
    lock: newResourceLock(o.lock, o.client, o.namespace, o.name),
    leaseDurationMs: o.leaseDurationMs, renewDeadlineMs: o.renewDeadlineMs, retryPeriodMs: o.retryPeriodMs,
    releaseOnCancel: true, log: o.log,
    callbacks: {
      onStartedLeading: (signal) => { work = o.onStartedLeading(signal); return work; },
      onStoppedLeading: () => { if (!o.signal.aborted) lost = true; },
    },
  });
  o.log.info({ lock: `${o.lock}/${o.namespace}/${o.name}`, identity: elector.identity }, 'attempting to acquire the leader lock');
  await elector.run(o.signal);
  await work?.catch(() => undefined);
  return lost ? 'lost' : 'stopped';
}

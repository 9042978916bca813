/**
 * One reconcile of a DaemonSet: judge every node, claim the pods, settle the current
 * ControllerRevision, then — when no earlier writes are still unobserved — create the missing
 * pods and delete the surplus ones (placement.ts), or else take the next rolling-update step
 * (rolling.ts); trim the history and write the status counts.
 *
 * Contract: expectations are set before any pod write and lowered for every write that did not
 * happen, so a lagging pod watch never causes a second pod on a node. A 409 on the status write
 * is thrown, and the work queue retries the key with backoff from a fresher cache.
 */
import type { Logger } from 'pino';
import type { KubeObject } from '../../../../api/resources/types.js';
import { keyOf, type RestClient } from '../../deps.js';
import type { EventRecorder } from '../../events.js';
import type { ControllerExpectations } from '../controller-utils.js';
import type { FailedPodBackoff } from './failed-backoff.js';
import { DAEMONSETS, type RevisionHistory } from './history.js';
import { judgeNode } from './node-fit.js';
import { hashOf, planManage, podsByNode, type NodeState } from './placement.js';
import type { DaemonPodControl } from './pod-control.js';
import { allowsSurge, fenceposts, planRollingUpdate, strategyType } from './rolling.js';
import { computeStatus, nextAvailableCheckMs, sameStatus, type StatusInput } from './status.js';

type Dict = Record<string, unknown>;

/** At most this many pods are created or deleted per sync. */
export const BURST_PODS = 250;

export interface SyncDeps {
  client: RestClient;
  log: Logger;
  events: EventRecorder;
  expectations: ControllerExpectations;
  backoff: FailedPodBackoff;
  pods: DaemonPodControl;
  history: RevisionHistory;
  now: () => number;
  requeueAfter(key: string, ms: number): void;
}

export interface SyncInput {
  key: string;
  ds: KubeObject;
  nodes: readonly KubeObject[];
  /** The DaemonSet's pods (claimed). */
  pods: readonly KubeObject[];
  /** Its ControllerRevisions. */
  revisions: readonly KubeObject[];
}

function minReadySecondsOf(ds: KubeObject): number {
  const v = ((ds.spec ?? {}) as Dict).minReadySeconds;
  return typeof v === 'number' ? v : 0;
}

export async function syncDaemonSet(d: SyncDeps, i: SyncInput): Promise<void> {
  const { ds, key } = i;
  if (ds.metadata?.deletionTimestamp) return;
  const template = (((ds.spec ?? {}) as Dict).template ?? {}) as Dict;
  const nodes: NodeState[] = i.nodes.map((node) => ({ node, verdict: judgeNode(template, node) }));
  const { revision, hash } = await d.history.current(ds, i.revisions);
  const byNode = podsByNode(i.pods);
  const now = d.now();
  const minReadySeconds = minReadySecondsOf(ds);

  let writeError: unknown;
  if (d.expectations.satisfied(key)) {
    const manage = planManage({
      nodes, byNode, hash, surge: allowsSurge(ds), minReadySeconds, now,
      failedMayGo: (node) => d.backoff.take(`${key}/${node}`),
    });
    if (manage.retryAfterMs !== undefined) d.requeueAfter(key, manage.retryAfterMs);
    for (const f of manage.failed) {
      d.events.event(ds, 'Warning', 'FailedDaemonPod', `Found failed daemon pod ${keyOf(f.pod)} on node ${f.node}, will try to kill it`);
    }
    let createOn = manage.createOn; let remove = manage.remove;
    if (createOn.length === 0 && remove.length === 0 && strategyType(ds) === 'RollingUpdate') {
      const desired = nodes.filter((n) => n.verdict.shouldRun).length;
      const { maxSurge, maxUnavailable } = fenceposts(ds, desired);
      const step = planRollingUpdate({ nodes, byNode, hash, maxSurge, maxUnavailable, minReadySeconds, now });
      createOn = step.createOn; remove = step.remove;
    }
    if (createOn.length || remove.length) d.log.debug({ daemonset: key, hash, createOn, remove: remove.map(keyOf) }, 'syncing daemon pods');
    writeError = await writePods(d, ds, key, createOn.slice(0, BURST_PODS), remove.slice(0, BURST_PODS), hash);
  }

  const liveHashes = new Set(i.pods.map(hashOf).filter((h): h is string => h !== undefined));
  await d.history.truncate(ds, i.revisions, revision, liveHashes);

  const input: StatusInput = { ds, nodes, byNode, hash, minReadySeconds, now };
  await writeStatus(d, input);
  const recheck = nextAvailableCheckMs(input);
  if (recheck !== undefined) d.requeueAfter(key, recheck);
  if (writeError) throw writeError;
}

async function writePods(d: SyncDeps, ds: KubeObject, key: string, createOn: string[], remove: KubeObject[], hash: string): Promise<unknown> {
  if (createOn.length === 0 && remove.length === 0) return undefined;
  d.expectations.expect(key, createOn.length, remove.map(keyOf));
  const [made, deleted] = await Promise.all([
    d.pods.create(ds, createOn, hash, () => d.expectations.creationObserved(key)),
    d.pods.delete(ds, remove, (p) => d.expectations.deletionObserved(key, keyOf(p))),
  ]);
  return deleted.error ?? made.error;
}

async function writeStatus(d: SyncDeps, i: StatusInput): Promise<void> {
  const status = computeStatus(i);
  if (sameStatus(status, (i.ds.status ?? {}) as never)) return;
  await d.client.update({ ...DAEMONSETS, namespace: i.ds.metadata?.namespace ?? '' }, { ...i.ds, status }, { subresource: 'status' });
}

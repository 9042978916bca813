/**
 * The daemonset controller (apps/v1 DaemonSet): one pod per eligible node, rolled to new
 * templates by RollingUpdate (or replaced only when deleted, with OnDelete), the template
 * history kept in ControllerRevisions, and the status counts. daemonset/sync.ts holds one
 * reconcile; the pure decisions live in daemonset/node-fit.ts, placement.ts, rolling.ts and
 * status.ts. This file wires the informers (DaemonSets, pods, nodes, ControllerRevisions) to
 * the queue.
 *
 * Keys are `namespace/name` of DaemonSets; `concurrentDaemonsetSyncs` workers (2 when the
 * option is absent). A node added, removed or changed in labels, taints or spec queues every
 * DaemonSet; a pod event queues its controlling DaemonSet (or, for orphans, the DaemonSets
 * whose selector matches, to adopt it).
 *
 * Contract: one key is synced by one worker at a time (work-queue guarantee); a sync never
 * writes pods while earlier pod writes of the key are unobserved (expectations).
 */
import type { Logger } from 'pino';
import { isApiError } from '../../../api/meta/status.js';
import type { KubeObject } from '../../../api/resources/types.js';
import type { Controller, ControllerContext } from '../controller-registry.js';
import { noopRecorder, type EventRecorder } from '../events.js';
import { deletedObject, keyOf, splitKey, WorkQueue, type ResourceRef, type RestClient, type SharedIndexInformer } from '../deps.js';
import { canonicalJson, ControllerExpectations, controllerRefOf, isPodReady } from './controller-utils.js';
import { FailedPodBackoff } from './daemonset/failed-backoff.js';
import { DAEMONSETS, REVISIONS, RevisionHistory } from './daemonset/history.js';
import { DaemonPodControl, dsSelector, PODS } from './daemonset/pod-control.js';
import { syncDaemonSet } from './daemonset/sync.js';

export const NODES: ResourceRef = { group: '', version: 'v1', resource: 'nodes' };
export const DEFAULT_DAEMONSET_SYNCS = 2;

export interface DaemonSetControllerOptions {
  /** Wait before deleting a node's next failed pod; doubles per further failure. @default 1 s */
  failedPodBackoffMs?: number;
  /** Cap of that wait. @default 15 min */
  maxFailedPodBackoffMs?: number;
  now?: () => number;
}

export class DaemonSetController implements Controller {
  readonly name = 'daemonset';
  readonly expectations = new ControllerExpectations();
  private readonly now: () => number;
  private readonly backoff: FailedPodBackoff;
  private queue!: WorkQueue;
  private sets!: SharedIndexInformer;
  private pods!: SharedIndexInformer;
  private nodes!: SharedIndexInformer;
  private revisions!: SharedIndexInformer;
  private client!: RestClient;
  private log!: Logger;
  private events: EventRecorder = noopRecorder;
  private control!: DaemonPodControl;
  private history!: RevisionHistory;

  constructor(o: DaemonSetControllerOptions = {}) {
    this.now = o.now ?? Date.now;
    this.backoff = new FailedPodBackoff(o.failedPodBackoffMs ?? 1000, o.maxFailedPodBackoffMs ?? 15 * 60_000, this.now);
  }

  async run(ctx: ControllerContext): Promise<void> {
    this.client = ctx.client;
    this.log = ctx.log;
    this.events = ctx.events?.('daemonset-controller') ?? noopRecorder;
    this.control = new DaemonPodControl(ctx.client, this.events, ctx.log);
    this.history = new RevisionHistory(ctx.client, ctx.log);
    this.queue = new WorkQueue({ name: 'daemonset', log: ctx.log });
    this.sets = ctx.informers.informerFor(DAEMONSETS);
    this.pods = ctx.informers.informerFor(PODS);
    this.nodes = ctx.informers.informerFor(NODES);
    this.revisions = ctx.informers.informerFor(REVISIONS);
    this.sets.addEventHandler({
      onAdd: (o) => this.queue.add(keyOf(o)),
      onUpdate: (_old, cur) => this.queue.add(keyOf(cur)),
      onDelete: (x) => { const o = deletedObject(x); this.expectations.delete(keyOf(o)); this.backoff.forget(`${keyOf(o)}/`); this.queue.add(keyOf(o)); },
    });
    this.pods.addEventHandler({
      onAdd: (p) => this.addPod(p),
      onUpdate: (o, c) => this.updatePod(o, c),
      onDelete: (p) => this.deletePod(deletedObject(p)),
    });
    this.nodes.addEventHandler({
      onAdd: () => this.enqueueAll(),
      onUpdate: (o, c) => { if (nodeShapeChanged(o, c)) this.enqueueAll(); },
      onDelete: () => this.enqueueAll(),
    });
    this.revisions.addEventHandler({
      onAdd: (r) => this.enqueueOwner(r),
      onUpdate: (_o, c) => this.enqueueOwner(c),
      onDelete: (r) => this.enqueueOwner(deletedObject(r)),
    });
    ctx.informers.start(ctx.signal);
    const synced = await Promise.all([this.sets, this.pods, this.nodes, this.revisions].map((i) => i.waitForSync(ctx.signal)));
    if (!synced.every(Boolean)) return;
    const configured = (ctx.config as unknown as Record<string, unknown>).concurrentDaemonsetSyncs;
    const workers = typeof configured === 'number' && configured > 0 ? configured : DEFAULT_DAEMONSET_SYNCS;
    try {
      await this.queue.runWorkers(workers, (key) => this.sync(key), ctx.signal);
    } finally {
      await this.events.flush();
    }
  }

  private enqueueAll(): void {
    for (const ds of this.sets.indexer.list()) this.queue.add(keyOf(ds));
  }

  private ownerOf(obj: KubeObject): KubeObject | undefined {
    const ref = controllerRefOf(obj);
    if (!ref || ref.kind !== 'DaemonSet') return undefined;
    const ds = this.sets.indexer.get(obj.metadata?.namespace, ref.name);
    return ds && ds.metadata?.uid === ref.uid ? ds : undefined;
  }

  private enqueueOwner(obj: KubeObject): void {
    const ds = this.ownerOf(obj);
    if (ds) this.queue.add(keyOf(ds));
  }

  private matchingSets(pod: KubeObject): KubeObject[] {
    return this.sets.indexer.listNamespace(pod.metadata?.namespace ?? '').filter((ds) => dsSelector(ds)?.(pod.metadata?.labels) ?? false);
  }

  private addPod(pod: KubeObject): void {
    if (pod.metadata?.deletionTimestamp) { this.deletePod(pod); return; }
    if (controllerRefOf(pod)) {
      const ds = this.ownerOf(pod);
      if (!ds) return;
      this.expectations.creationObserved(keyOf(ds));
      this.queue.add(keyOf(ds));
      return;
    }
    for (const ds of this.matchingSets(pod)) this.queue.add(keyOf(ds));
  }

  private updatePod(old: KubeObject, cur: KubeObject): void {
    if (old.metadata?.resourceVersion === cur.metadata?.resourceVersion) return;
    if (cur.metadata?.deletionTimestamp) { this.deletePod(cur); return; }
    const oldRef = controllerRefOf(old); const curRef = controllerRefOf(cur);
    if (oldRef && oldRef.uid !== curRef?.uid) this.enqueueOwner(old);
    if (curRef) {
      const ds = this.ownerOf(cur);
      if (!ds) return;
      this.queue.add(keyOf(ds));
      const minReady = Number(((ds.spec ?? {}) as Record<string, unknown>).minReadySeconds ?? 0);
      if (minReady > 0 && !isPodReady(old) && isPodReady(cur)) this.queue.addAfter(keyOf(ds), minReady * 1000 + 1000);
      return;
    }
    const labelsChanged = canonicalJson(old.metadata?.labels ?? {}) !== canonicalJson(cur.metadata?.labels ?? {});
    if (labelsChanged || oldRef) for (const ds of this.matchingSets(cur)) this.queue.add(keyOf(ds));
  }

  private deletePod(pod: KubeObject): void {
    const ds = this.ownerOf(pod);
    if (!ds) return;
    this.expectations.deletionObserved(keyOf(ds), keyOf(pod));
    this.queue.add(keyOf(ds));
  }

  /** One reconcile of `namespace/name`. Throws to be retried with backoff. */
  async sync(key: string): Promise<void> {
    const ds = this.sets.indexer.getByKey(key);
    if (!ds) { this.expectations.delete(key); this.backoff.forget(`${key}/`); return; }
    const namespace = splitKey(key).namespace ?? '';
    const pods = await this.control.claim(ds, this.pods.indexer.listNamespace(namespace), () => this.stillExists(ds));
    const revisions = this.revisions.indexer.listNamespace(namespace).filter((r) => controllerRefOf(r)?.uid === ds.metadata?.uid);
    await syncDaemonSet({
      client: this.client, log: this.log, events: this.events, expectations: this.expectations, backoff: this.backoff,
      pods: this.control, history: this.history, now: this.now,
      requeueAfter: (k, ms) => this.queue.addAfter(k, Math.max(1, ms)),
    }, { key, ds, nodes: this.nodes.indexer.list(), pods, revisions });
  }

  /** A fresh read before adopting: the DaemonSet must still exist, with the same uid, not being deleted. */
  private async stillExists(ds: KubeObject): Promise<boolean> {
    try {
      const fresh = await this.client.get({ ...DAEMONSETS, namespace: ds.metadata?.namespace ?? '' }, ds.metadata?.name ?? '');
      return fresh.metadata?.uid === ds.metadata?.uid && !fresh.metadata?.deletionTimestamp;
    } catch (e) {
      if (isApiError(e) && e.code === 404) return false;
      throw e;
    }
  }
}

/** Labels, taints or other spec fields changed (status heartbeats alone do not matter). */
function nodeShapeChanged(old: KubeObject, cur: KubeObject): boolean {
  return canonicalJson(old.metadata?.labels ?? {}) !== canonicalJson(cur.metadata?.labels ?? {})
    || canonicalJson(old.spec ?? {}) !== canonicalJson(cur.spec ?? {});
}

export function newDaemonSetController(): Controller {
  return new DaemonSetController();
}

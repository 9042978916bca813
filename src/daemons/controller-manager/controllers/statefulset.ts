/**
 * The statefulset controller (apps/v1 StatefulSet): gives each set the pods `<set>-<ordinal>`
 * with their claims, in order (or in parallel), replaces failed pods under the same name,
 * records pod templates as ControllerRevisions and rolls pods onto the newest one, and
 * reports status. statefulset/sync.ts holds one reconcile, statefulset/identity.ts the pod
 * identity, statefulset/revisions.ts the revision history, statefulset/claim.ts adoption;
 * this file wires the informers and the queue.
 *
 * Keys are `namespace/name` of StatefulSets; `concurrentStatefulsetSyncs` workers (5 when
 * the option is absent). A set is queued on its own events and on those of its pods (or of
 * orphan pods its selector matches).
 *
 * Contract: one key is synced by one worker at a time. Our own status writes count as the
 * freshest view of a set until the cache catches up with them, so a lagging watch cannot
 * make a sync write status from a stale resourceVersion or forget a collision count.
 */
import { isApiError } from '../../../api/meta/status.js';
import type { KubeObject } from '../../../api/resources/types.js';
import type { Controller, ControllerContext } from '../controller-registry.js';
import { noopRecorder, type EventRecorder } from '../events.js';
import { deletedObject, keyOf, splitKey, WorkQueue, type ResourceRef, type RestClient, type SharedIndexInformer } from '../deps.js';
import { controllerRefOf, isPodReady } from './controller-utils.js';
import { claimSetPods, setSelector } from './statefulset/claim.js';
import { minReadySecondsOf } from './statefulset/identity.js';
import { PODS, PVCS, REVISIONS, StatefulPodControl } from './statefulset/pod-control.js';
import { ownRevisions } from './statefulset/revisions.js';
import { statusObject, type SetStatus } from './statefulset/status.js';
import { StatefulSetSync } from './statefulset/sync.js';

export const STATEFULSETS: ResourceRef = { group: 'apps', version: 'v1', resource: 'statefulsets' };
export const DEFAULT_STATEFULSET_SYNCS = 5;

function rv(o: KubeObject | undefined): bigint {
  try { return BigInt(o?.metadata?.resourceVersion ?? '0'); } catch { return 0n; }
}

export class StatefulSetController implements Controller {
  readonly name = 'statefulset';
  /** Our latest status write per key, while the cache has not caught up with it. */
  private readonly written = new Map<string, KubeObject>();
  private queue!: WorkQueue;
  private sets!: SharedIndexInformer;
  private pods!: SharedIndexInformer;
  private revisions!: SharedIndexInformer;
  private claims!: SharedIndexInformer;
  private client!: RestClient;
  private events: EventRecorder = noopRecorder;
  private control!: StatefulPodControl;

  constructor(private readonly now: () => number = Date.now) {}

  async run(ctx: ControllerContext): Promise<void> {
    this.client = ctx.client;
    this.events = ctx.events?.('statefulset-controller') ?? noopRecorder;
    this.control = new StatefulPodControl(ctx.client, this.events, ctx.log);
    this.queue = new WorkQueue({ name: 'statefulset', log: ctx.log });
    this.sets = ctx.informers.informerFor(STATEFULSETS);
    this.pods = ctx.informers.informerFor(PODS);
    this.revisions = ctx.informers.informerFor(REVISIONS);
    this.claims = ctx.informers.informerFor(PVCS);
    this.sets.addEventHandler({
      onAdd: (s) => this.queue.add(keyOf(s)),
      onUpdate: (_old, cur) => this.queue.add(keyOf(cur)),
      onDelete: (x) => { const s = deletedObject(x); this.written.delete(keyOf(s)); this.queue.add(keyOf(s)); },
    });
    this.pods.addEventHandler({
      onAdd: (p) => this.podChanged(undefined, p),
      onUpdate: (old, cur) => this.podChanged(old, cur),
      onDelete: (x) => this.podChanged(undefined, deletedObject(x)),
    });
    ctx.informers.start(ctx.signal);
    const synced = await Promise.all([this.sets, this.pods, this.revisions, this.claims].map((i) => i.waitForSync(ctx.signal)));
    if (!synced.every(Boolean)) return;
    const configured = (ctx.config as unknown as Record<string, unknown>).concurrentStatefulsetSyncs;
    const workers = typeof configured === 'number' && configured > 0 ? configured : DEFAULT_STATEFULSET_SYNCS;
    try {
      await this.queue.runWorkers(workers, (key) => this.sync(key), ctx.signal);
    } finally {
      await this.events.flush();
    }
  }

  private ownerOf(pod: KubeObject): KubeObject | undefined {
    const ref = controllerRefOf(pod);
    if (!ref || ref.kind !== 'StatefulSet') return undefined;
    const set = this.sets.indexer.get(pod.metadata?.namespace, ref.name);
    return set && set.metadata?.uid === ref.uid ? set : undefined;
  }

  private podChanged(old: KubeObject | undefined, cur: KubeObject): void {
    if (old && old.metadata?.resourceVersion === cur.metadata?.resourceVersion) return;
    const owners = new Set<KubeObject>();
    for (const p of old ? [old, cur] : [cur]) {
      if (controllerRefOf(p)) { const s = this.ownerOf(p); if (s) owners.add(s); continue; }
      for (const s of this.sets.indexer.listNamespace(p.metadata?.namespace ?? '')) if (setSelector(s)?.(p.metadata?.labels)) owners.add(s);
    }
    for (const s of owners) {
      this.queue.add(keyOf(s));
      const minReady = minReadySecondsOf(s);
      if (minReady > 0 && old && !isPodReady(old) && isPodReady(cur)) this.queue.addAfter(keyOf(s), minReady * 1000 + 100);
    }
  }

  /** The set to sync: the cached one, or our own newer write of it while the cache lags. */
  private current(key: string): KubeObject | undefined {
    const cached = this.sets.indexer.getByKey(key);
    const mine = this.written.get(key);
    if (cached && mine && mine.metadata?.uid === cached.metadata?.uid && rv(mine) > rv(cached)) return mine;
    this.written.delete(key);
    return cached;
  }

  /** One reconcile of `namespace/name`. Throws to be retried with backoff. */
  async sync(key: string): Promise<void> {
    const set = this.current(key);
    if (!set) return;
    const namespace = splitKey(key).namespace ?? '';
    const pods = await claimSetPods(set, this.pods.indexer.listNamespace(namespace), this.control, () => this.stillExists(set));
    const revisions = ownRevisions(set, this.revisions.indexer.listNamespace(namespace));
    await new StatefulSetSync({
      control: this.control, now: this.now,
      claim: (name) => this.claims.indexer.get(namespace, name),
      requeueAfter: (ms) => this.queue.addAfter(key, Math.max(ms, 1)),
      writeStatus: (s, status) => this.writeStatus(key, s, status),
    }, set, pods, revisions).run();
  }

  private async writeStatus(key: string, set: KubeObject, status: SetStatus): Promise<void> {
    const ref = { ...STATEFULSETS, namespace: set.metadata?.namespace ?? '' };
    const updated = await this.client.update(ref, { ...set, status: statusObject(set, status) }, { subresource: 'status' });
    this.written.set(key, updated);
  }

  /** A fresh read before adopting: the set must still exist, with the same uid, not being deleted. */
  private async stillExists(set: KubeObject): Promise<boolean> {
    try {
      const fresh = await this.client.get({ ...STATEFULSETS, namespace: set.metadata?.namespace ?? '' }, set.metadata?.name ?? '');
      return fresh.metadata?.uid === set.metadata?.uid && !fresh.metadata?.deletionTimestamp;
    } catch (e) {
      if (isApiError(e) && e.code === 404) return false;
      throw e;
    }
  }
}

export function newStatefulSetController(): Controller {
  return new StatefulSetController();
}

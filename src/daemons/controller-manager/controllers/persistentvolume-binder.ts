/**
 * The persistent volume binder (Kubernetes' persistentvolume-binder, the "persistentvolume-
 * controller" in events): binds PersistentVolumeClaims to PersistentVolumes in both
 * directions (claim spec.volumeName, volume spec.claimRef), keeps both phases, asks external
 * provisioners for volumes, releases and reclaims volumes whose claims are gone, and marks
 * claims whose volumes are gone Lost. The steps live in persistentvolume/: sync-claim.ts,
 * sync-volume.ts, reclaim.ts, provision.ts, writes.ts, volume-index.ts.
 *
 * Contract: two queues, claims (`namespace/name`) and volumes (name), one worker each: two
 * claim syncs at once could give one volume to two claims. Keys come from informer events and
 * from a resync of every claim and volume each --pvclaimbinder-sync-period (at start too);
 * deleting a bound claim queues its volume and deleting a volume queues its claim. A sync
 * reads the binder's own newest view of both kinds (persistentvolume/versioned-store.ts),
 * which the informers and the binder's writes feed; an informer version older than the view
 * is skipped (a newer event follows). A sync that fails is retried with backoff. Delete,
 * recycle and provisioning run beside the workers (persistentvolume/operations.ts) and are
 * awaited when the controller stops.
 */
import type { Logger } from 'pino';
import type { KubeObject } from '../../../api/resources/types.js';
import type { Controller, ControllerContext } from '../controller-registry.js';
import { noopRecorder, type EventRecorder } from '../events.js';
import { deletedObject, keyOf, realClock, WorkQueue, type RestClient, type SharedIndexInformer } from '../deps.js';
import { CLAIMS, CLASSES, PODS, VOLUMES, type BinderCore } from './persistentvolume/binder-core.js';
import { OperationMap } from './persistentvolume/operations.js';
import { indexPodsByClaim } from './persistentvolume/pods.js';
import { syncClaim } from './persistentvolume/sync-claim.js';
import { syncVolume } from './persistentvolume/sync-volume.js';
import { VersionedStore } from './persistentvolume/versioned-store.js';
import { claimKey, claimRefKey, claimSpec, nameOf, volumeSpec } from './persistentvolume/volume-helpers.js';

const DEFAULT_SYNC_PERIOD_MS = 15_000;

export class PersistentVolumeBinderController implements Controller, BinderCore {
  readonly name = 'persistentvolume-binder';
  readonly volumes = new VersionedStore(nameOf);
  readonly claims = new VersionedStore(claimKey);
  client!: RestClient;
  log!: Logger;
  events: EventRecorder = noopRecorder;
  operations!: OperationMap;
  enableDynamicProvisioning = true;
  enableHostPathProvisioner = false;
  claimInformer!: SharedIndexInformer;
  classInformer!: SharedIndexInformer;
  podInformer!: SharedIndexInformer;
  private volumeInformer!: SharedIndexInformer;
  private claimQueue!: WorkQueue;
  private volumeQueue!: WorkQueue;

  async run(ctx: ControllerContext): Promise<void> {
    this.client = ctx.client;
    this.log = ctx.log;
    this.events = ctx.events?.('persistentvolume-controller') ?? noopRecorder;
    this.operations = new OperationMap(ctx.log);
    this.enableDynamicProvisioning = ctx.config.enableDynamicProvisioning;
    this.enableHostPathProvisioner = ctx.config.enableHostpathProvisioner;
    this.claimQueue = new WorkQueue({ name: 'claims', log: ctx.log });
    this.volumeQueue = new WorkQueue({ name: 'volumes', log: ctx.log });
    this.volumeInformer = ctx.informers.informerFor(VOLUMES);
    this.claimInformer = ctx.informers.informerFor(CLAIMS);
    this.classInformer = ctx.informers.informerFor(CLASSES);
    this.podInformer = ctx.informers.informerFor(PODS);
    indexPodsByClaim(this.podInformer);
    const volumeKey = (x: KubeObject): void => this.volumeQueue.add(keyOf(x));
    const claimEventKey = (x: KubeObject): void => this.claimQueue.add(keyOf(x));
    this.volumeInformer.addEventHandler({ onAdd: volumeKey, onUpdate: (_o, v) => volumeKey(v), onDelete: (x) => volumeKey(deletedObject(x)) });
    this.claimInformer.addEventHandler({ onAdd: claimEventKey, onUpdate: (_o, c) => claimEventKey(c), onDelete: (x) => claimEventKey(deletedObject(x)) });
    ctx.informers.start(ctx.signal);
    const synced = await Promise.all([this.volumeInformer, this.claimInformer, this.classInformer, this.podInformer].map((i) => i.waitForSync(ctx.signal)));
    if (!synced.every(Boolean)) return;
    for (const v of this.volumeInformer.indexer.list()) this.volumes.update(v);
    for (const c of this.claimInformer.indexer.list()) this.claims.update(c);
    const period = ctx.config.pvclaimbinderSyncPeriod > 0 ? ctx.config.pvclaimbinderSyncPeriod : DEFAULT_SYNC_PERIOD_MS;
    try {
      await Promise.all([
        this.resyncEvery(period, ctx.signal),
        this.volumeQueue.runWorkers(1, (key) => this.volumeWorker(key), ctx.signal),
        this.claimQueue.runWorkers(1, (key) => this.claimWorker(key), ctx.signal),
      ]);
    } finally {
      await this.operations.drain();
      await this.events.flush();
    }
  }

  enqueueClaim(key: string): void { this.claimQueue.add(key); }

  /** Queues every claim and volume now and then every period (informer resyncs are not relied on). */
  private async resyncEvery(periodMs: number, signal: AbortSignal): Promise<void> {
    for (;;) {
      for (const key of this.claimInformer.indexer.keys()) this.claimQueue.add(key);
      for (const key of this.volumeInformer.indexer.keys()) this.volumeQueue.add(key);
      try { await realClock.sleep(periodMs, signal); } catch { return; }
    }
  }

  /** Syncs the volume the informer has, or handles its deletion when it has none. */
  private async volumeWorker(key: string): Promise<void> {
    const volume = this.volumeInformer.indexer.getByKey(key);
    if (volume) {
      if (this.volumes.update(volume)) await syncVolume(this, volume);
      return;
    }
    const known = this.volumes.get(key);
    if (!known) return;
    this.volumes.delete(key);
    // Its claim becomes Lost now rather than at the next resync.
    const ref = volumeSpec(known).claimRef;
    if (ref) this.claimQueue.add(claimRefKey(ref));
  }

  private async claimWorker(key: string): Promise<void> {
    const claim = this.claimInformer.indexer.getByKey(key);
    if (claim) {
      if (this.claims.update(claim)) await syncClaim(this, claim);
      return;
    }
    const known = this.claims.get(key);
    if (!known) return;
    this.claims.delete(key);
    // Its volume is released now rather than at the next resync.
    const volumeName = claimSpec(known).volumeName;
    if (volumeName) this.volumeQueue.add(volumeName);
  }
}

export function newPersistentVolumeBinderController(): Controller {
  return new PersistentVolumeBinderController();
}

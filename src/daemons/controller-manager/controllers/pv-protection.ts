/**
 * The PV protection controller: a PersistentVolume bound to a claim is not removed when it is
 * deleted. It carries the finalizer `kubernetes.io/pv-protection` (normally added by the API
 * server's StorageObjectInUseProtection admission plugin on create); this controller adds it to
 * volumes that lack it, and takes it off a volume being deleted once its status.phase is not
 * `Bound`, which lets the API server finish the deletion.
 *
 * Contract: keys are volume names (cluster-scoped); one worker. Volumes are queued when added or
 * changed while they need work (finalizer missing on a live volume, or present on a deleted
 * one). A sync reads only the cache; writes are updates carrying the cached resourceVersion: a
 * 409 fails the sync, which requeues it with backoff; a 404 ends it. Other finalizers are
 * never touched.
 */
import type { Logger } from 'pino';
import { PV_PROTECTION_FINALIZER } from '../../../api/resources/core/persistentvolumes.js';
import type { KubeObject } from '../../../api/resources/types.js';
import type { Controller, ControllerContext } from '../controller-registry.js';
import { needsProtectionWork, syncProtection } from './protection-finalizer.js';
import { keyOf, WorkQueue, type ResourceRef, type RestClient, type SharedIndexInformer } from '../deps.js';

export { PV_PROTECTION_FINALIZER };

const VOLUMES: ResourceRef = { group: '', version: 'v1', resource: 'persistentvolumes' };


/** The binder (or an admin) says the volume is bound: its claim may still be using it. */
export function isVolumeBound(pv: KubeObject): boolean {
  return (pv.status as { phase?: string } | undefined)?.phase === 'Bound';
}

/** A volume this controller has to write: finalizer missing on a live volume, or present on a deleted one. */
export function volumeNeedsWork(pv: KubeObject): boolean {
  return needsProtectionWork(pv, PV_PROTECTION_FINALIZER);
}

export class PvProtectionController implements Controller {
  readonly name = 'pv-protection';
  private queue!: WorkQueue;
  private volumes!: SharedIndexInformer;
  private client!: RestClient;
  private log!: Logger;

  async run(ctx: ControllerContext): Promise<void> {
    this.client = ctx.client;
    this.log = ctx.log;
    this.queue = new WorkQueue({ name: this.name, log: ctx.log });
    this.volumes = ctx.informers.informerFor(VOLUMES);
    const changed = (pv: KubeObject): void => { if (volumeNeedsWork(pv)) this.queue.add(keyOf(pv)); };
    this.volumes.addEventHandler({ onAdd: changed, onUpdate: (_o, pv) => changed(pv) });
    ctx.informers.start(ctx.signal);
    if (!(await this.volumes.waitForSync(ctx.signal))) return;
    // One worker, as in Kubernetes: each sync is one small write at most.
    await this.queue.runWorkers(1, (key) => this.sync(key), ctx.signal);
  }

  async sync(name: string): Promise<void> {
    const pv = this.volumes.indexer.getByKey(name);
    if (!pv) return;
    await syncProtection({ client: this.client, ref: VOLUMES, finalizer: PV_PROTECTION_FINALIZER, log: this.log, logAs: { volume: name } },
      pv, () => Promise.resolve(isVolumeBound(pv)));
  }
}

export function newPvProtectionController(): Controller {
  return new PvProtectionController();
}

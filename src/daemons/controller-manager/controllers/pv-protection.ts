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
import { isApiError } from '../../../api/meta/status.js';
import type { KubeObject } from '../../../api/resources/types.js';
import type { Controller, ControllerContext } from '../controller-registry.js';
import { keyOf, WorkQueue, type ResourceRef, type RestClient, type SharedIndexInformer } from '../deps.js';

export const PV_PROTECTION_FINALIZER = 'kubernetes.io/pv-protection';

const VOLUMES: ResourceRef = { group: '', version: 'v1', resource: 'persistentvolumes' };

const finalizersOf = (o: KubeObject): string[] => o.metadata?.finalizers ?? [];

/** The binder (or an admin) says the volume is bound: its claim may still be using it. */
export function isVolumeBound(pv: KubeObject): boolean {
  return (pv.status as { phase?: string } | undefined)?.phase === 'Bound';
}

/** A volume this controller has to write: finalizer missing on a live volume, or present on a deleted one. */
export function volumeNeedsWork(pv: KubeObject): boolean {
  return Boolean(pv.metadata?.deletionTimestamp) === finalizersOf(pv).includes(PV_PROTECTION_FINALIZER);
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
    const finalizers = finalizersOf(pv);
    const has = finalizers.includes(PV_PROTECTION_FINALIZER);
    if (pv.metadata?.deletionTimestamp) {
      if (!has) return;
      if (isVolumeBound(pv)) {
        this.log.debug({ volume: name }, 'volume is being deleted but is still bound');
        return;
      }
      await this.writeFinalizers(pv, finalizers.filter((f) => f !== PV_PROTECTION_FINALIZER));
      this.log.info({ volume: name }, 'volume is not bound: removed its protection finalizer');
      return;
    }
    if (has) return;
    await this.writeFinalizers(pv, [...finalizers, PV_PROTECTION_FINALIZER]);
    this.log.debug({ volume: name }, 'added the protection finalizer');
  }

  private async writeFinalizers(pv: KubeObject, finalizers: string[]): Promise<void> {
    try {
      await this.client.update(VOLUMES, { ...pv, metadata: { ...pv.metadata, finalizers } });
    } catch (e) {
      // Gone meanwhile: nothing left to protect. A 409 is thrown: the retry reads a fresher cache.
      if (isApiError(e) && e.code === 404) return;
      throw e;
    }
  }
}

export function newPvProtectionController(): Controller {
  return new PvProtectionController();
}

/**
 * The volume expander (Kubernetes' persistentvolume-expander, "volume_expand" in events).
 * Kubernetes keeps it only to hand expansion to external controllers: of its in-tree plugins
 * only Portworx still expands in-tree, and none exists here, so for a bound claim whose
 * storage request grew past status.capacity (or whose volume awaits a file-system resize,
 * pre-resize-capacity annotation):
 *  - a volume of a migrated in-tree plugin (awsElasticBlockStore, gcePersistentDisk, azureDisk,
 *    azureFile and the like) is for that plugin's CSI driver: a Normal ExternalExpanding event, and the
 *    claim annotated volume.kubernetes.io/storage-resizer with the driver's name;
 *  - a corectl.io/local-path volume is grown here (persistentvolume/expand-local-path.ts) and
 *    left with FileSystemResizePending for the node agent to finish;
 *  - any other volume (CSI ones included: their external-resizer watches claims itself) gets
 *    a Warning ExternalExpanding "waiting for an external controller to expand this PVC".
 * The Resizing and FileSystemResizePending conditions, the new capacity and the volume's size
 * are the external resizer's and the node's work, not this controller's.
 *
 * Contract: keys `namespace/name` of claims, queued when a Bound claim is added or deleted, or
 * updated with a larger request or a larger status capacity; 10 workers, as Kubernetes. The
 * volume is read from the API server; a volume not bound to the claim (by uid) fails the sync,
 * which is retried with backoff. The annotation is a merge patch of the claim's metadata.
 */
import type { Logger } from 'pino';
import type { KubeObject } from '../../../api/resources/types.js';
import type { Controller, ControllerContext } from '../controller-registry.js';
import { noopRecorder, type EventRecorder } from '../events.js';
import { deletedObject, keyOf, WorkQueue, type RestClient, type SharedIndexInformer } from '../deps.js';
import { claimsIn, CLAIMS, VOLUMES } from './persistentvolume/binder-core.js';
import {
  ANN_PRE_RESIZE_CAPACITY, asClaim, claimSpec, claimStatus, hasAnnotation, requestedBytes, storageBytes, uidOf, volumeSpec,
} from './persistentvolume/volume-helpers.js';
import { migratedDriver, migratedPluginOf } from './persistentvolume/volume-plugins.js';
import { expandLocalPath, isLocalPathVolume } from './persistentvolume/expand-local-path.js';

/** On claims: the controller expected to expand the volume. */
export const ANN_STORAGE_RESIZER = 'volume.kubernetes.io/storage-resizer';
const WORKERS = 10;

const capacityBytes = (c: KubeObject): number => storageBytes(claimStatus(c).capacity);

export class PersistentVolumeExpanderController implements Controller {
  readonly name = 'persistentvolume-expander';
  private queue!: WorkQueue;
  private claims!: SharedIndexInformer;
  private client!: RestClient;
  private log!: Logger;
  private events: EventRecorder = noopRecorder;

  async run(ctx: ControllerContext): Promise<void> {
    this.client = ctx.client;
    this.log = ctx.log;
    this.events = ctx.events?.('volume_expand') ?? noopRecorder;
    this.queue = new WorkQueue({ name: 'volume_expand', log: ctx.log });
    this.claims = ctx.informers.informerFor(CLAIMS);
    const enqueue = (c: KubeObject): void => { if (claimStatus(c).phase === 'Bound') this.queue.add(keyOf(c)); };
    this.claims.addEventHandler({
      onAdd: enqueue,
      onUpdate: (old, cur) => {
        // A larger request asks for an expansion; a larger capacity may end one.
        if (requestedBytes(cur) > requestedBytes(old) || capacityBytes(cur) > capacityBytes(old)) enqueue(cur);
      },
      onDelete: (x) => enqueue(deletedObject(x)),
    });
    ctx.informers.start(ctx.signal);
    if (!(await this.claims.waitForSync(ctx.signal))) return;
    try {
      await this.queue.runWorkers(WORKERS, (key) => this.sync(key), ctx.signal);
    } finally {
      await this.events.flush();
    }
  }

  async sync(key: string): Promise<void> {
    const claim = this.claims.indexer.getByKey(key);
    if (!claim) return;
    const volumeName = claimSpec(claim).volumeName ?? '';
    let volume: KubeObject;
    try {
      volume = await this.client.get(VOLUMES, volumeName);
    } catch (e) {
      throw new Error(`failed to get PV "${volumeName}": ${(e as Error).message}`, { cause: e });
    }
    const ref = volumeSpec(volume).claimRef;
    if (!ref || ref.namespace !== claim.metadata?.namespace || ref.uid !== uidOf(claim)) {
      throw new Error(`persistent Volume is not bound to PVC being updated : ${key}`);
    }
    if (requestedBytes(claim) <= capacityBytes(claim) && !hasAnnotation(volume, ANN_PRE_RESIZE_CAPACITY)) return;
    const plugin = migratedPluginOf(volume);
    if (plugin) {
      this.events.event(asClaim(claim), 'Normal', 'ExternalExpanding', `CSI migration enabled for ${plugin}; waiting for external resizer to expand the pvc`);
      await this.setResizer(claim, migratedDriver(plugin)!);
      return;
    }
    if (isLocalPathVolume(volume)) {
      if (await expandLocalPath(this.client, claim, volume)) {
        this.events.event(asClaim(claim), 'Normal', 'FileSystemResizeRequired', 'Require file system resize of volume on node');
      }
      return;
    }
    // Nothing here can expand it and retrying will not change that: no requeue.
    this.events.event(asClaim(claim), 'Warning', 'ExternalExpanding', 'waiting for an external controller to expand this PVC');
    this.log.info({ claim: key }, 'waiting for an external controller to expand the claim');
  }

  private async setResizer(claim: KubeObject, driver: string): Promise<void> {
    if (claim.metadata?.annotations?.[ANN_STORAGE_RESIZER] === driver) return;
    try {
      await this.client.patch(claimsIn(claim.metadata?.namespace ?? ''), claim.metadata?.name ?? '', 'merge', { metadata: { annotations: { [ANN_STORAGE_RESIZER]: driver } } });
    } catch (e) {
      const message = `error setting resizer annotation to pvc ${keyOf(claim)}, with error ${(e as Error).message}`;
      this.events.event(asClaim(claim), 'Warning', 'ExternalExpanding', message);
      throw new Error(message, { cause: e });
    }
  }
}

export function newPersistentVolumeExpanderController(): Controller {
  return new PersistentVolumeExpanderController();
}

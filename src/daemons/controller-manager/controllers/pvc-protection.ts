/**
 * The PVC protection controller: a PersistentVolumeClaim that pods still use is not removed
 * when it is deleted. It carries the finalizer `kubernetes.io/pvc-protection` (normally added by
 * the API server's StorageObjectInUseProtection admission plugin on create); this controller
 * adds it to claims that lack it, and takes it off a claim being deleted once no pod in the
 * claim's namespace uses it, which lets the API server finish the deletion.
 *
 * Which pods hold a claim follows Kubernetes (see podUsesClaim): scheduled pods only; a
 * `persistentVolumeClaim` volume holds its claim until the pod is deleted, even after the pod
 * finished; an ephemeral volume V holds the claim `<pod name>-<V>` the pod controls until the
 * pod is shut down.
 *
 * Contract: keys are `namespace/name`; one worker. Claims are queued when added or changed
 * while they need work (finalizer missing on a live claim, or present on a deleted one); the
 * claims a pod names are queued when the pod is deleted or has finished (only then can the pod
 * stop holding a claim; a pod replaced under the same name queues the old one's claims too).
 * Before taking the finalizer off, a claim the informer cache shows unused is checked again
 * against a live list of the namespace's pods, since the cache may not have seen a new pod yet.
 * Writes are updates carrying the cached resourceVersion: a 409 fails the sync, which requeues
 * it with backoff; a 404 ends it. Other finalizers are never touched.
 *
 * Kubernetes keeps one live pod list per namespace across claims; here each claim being deleted
 * lists on its own.
 */
import type { Logger } from 'pino';
import { PVC_PROTECTION_FINALIZER } from '../../../api/resources/core/persistentvolumeclaims.js';
import type { KubeObject } from '../../../api/resources/types.js';
import type { Controller, ControllerContext } from '../controller-registry.js';
import { needsProtectionWork, syncProtection } from './protection-finalizer.js';
import {
  deletedObject, keyOf, WorkQueue, type ResourceRef, type RestClient, type SharedIndexInformer,
} from '../deps.js';
import { podPhase } from './controller-utils.js';

export { PVC_PROTECTION_FINALIZER };

const CLAIMS: ResourceRef = { group: '', version: 'v1', resource: 'persistentvolumeclaims' };
const PODS: ResourceRef = { group: '', version: 'v1', resource: 'pods' };
/** Pod index: `namespace/claim` for every claim a pod's volumes name (shared informer, so a fixed name). */
export const POD_CLAIM_INDEX = 'pod-claims';

interface PodVolume { name?: string; persistentVolumeClaim?: { claimName?: string }; ephemeral?: unknown }

/** Names of the claims a pod's volumes refer to, directly or through an ephemeral volume. */
export function claimNamesOf(pod: KubeObject): string[] {
  const volumes = ((pod.spec as { volumes?: PodVolume[] } | undefined)?.volumes) ?? [];
  const names: string[] = [];
  for (const v of volumes) {
    if (v.persistentVolumeClaim?.claimName) names.push(v.persistentVolumeClaim.claimName);
    else if (v.ephemeral && v.name) names.push(`${pod.metadata?.name ?? ''}-${v.name}`);
  }
  return names;
}

export function isPodFinished(pod: KubeObject): boolean {
  const phase = podPhase(pod);
  return phase === 'Succeeded' || phase === 'Failed';
}

/** The kubelet is done with the pod: it finished, or it was deleted without a grace period. */
function isPodShutDown(pod: KubeObject): boolean {
  return isPodFinished(pod) || (!!pod.metadata?.deletionTimestamp && (pod.metadata.deletionGracePeriodSeconds ?? 0) === 0);
}

/**
 * True when `pod` holds `claim` (of its own namespace), by Kubernetes' rules: only a scheduled
 * pod holds claims; a `persistentVolumeClaim` volume holds its claim whatever the pod's phase
 * (until the pod is deleted); an ephemeral volume holds the claim generated for it (named
 * `<pod>-<volume>` and controlled by the pod) until the pod is shut down.
 */
export function podUsesClaim(pod: KubeObject, claim: KubeObject): boolean {
  if (!(pod.spec as { nodeName?: string } | undefined)?.nodeName) return false;
  const name = claim.metadata?.name ?? '';
  const volumes = ((pod.spec as { volumes?: PodVolume[] } | undefined)?.volumes) ?? [];
  for (const v of volumes) {
    if (v.persistentVolumeClaim?.claimName === name) return true;
    if (v.ephemeral && v.name && `${pod.metadata?.name ?? ''}-${v.name}` === name && !isPodShutDown(pod)
      && (claim.metadata?.ownerReferences ?? []).some((r) => r.controller === true && r.uid === pod.metadata?.uid)) return true;
  }
  return false;
}

/** A claim this controller has to write: finalizer missing on a live claim, or present on a deleted one. */
export function claimNeedsWork(claim: KubeObject): boolean {
  return needsProtectionWork(claim, PVC_PROTECTION_FINALIZER);
}

export class PvcProtectionController implements Controller {
  readonly name = 'pvc-protection';
  private queue!: WorkQueue;
  private claims!: SharedIndexInformer;
  private pods!: SharedIndexInformer;
  private client!: RestClient;
  private log!: Logger;

  async run(ctx: ControllerContext): Promise<void> {
    this.client = ctx.client;
    this.log = ctx.log;
    this.queue = new WorkQueue({ name: this.name, log: ctx.log });
    this.claims = ctx.informers.informerFor(CLAIMS);
    this.pods = ctx.informers.informerFor(PODS);
    try {
      this.pods.addIndexers({ [POD_CLAIM_INDEX]: (p) => claimNamesOf(p).map((n) => `${p.metadata?.namespace ?? ''}/${n}`) });
    } catch (e) {
      // Another controller on the shared informer added the same index first.
      if (!/already exists/.test((e as Error).message)) throw e;
    }
    const claimChanged = (c: KubeObject): void => { if (claimNeedsWork(c)) this.queue.add(keyOf(c)); };
    this.claims.addEventHandler({ onAdd: claimChanged, onUpdate: (_o, c) => claimChanged(c) });
    this.pods.addEventHandler({
      onAdd: (p) => { if (isPodFinished(p)) this.enqueueClaimsOf(p); },
      onUpdate: (old, p) => {
        if (old.metadata?.uid !== p.metadata?.uid) this.enqueueClaimsOf(old);
        if (isPodFinished(p)) this.enqueueClaimsOf(p);
      },
      onDelete: (x) => this.enqueueClaimsOf(deletedObject(x)),
    });
    ctx.informers.start(ctx.signal);
    const synced = await Promise.all([this.claims.waitForSync(ctx.signal), this.pods.waitForSync(ctx.signal)]);
    if (!synced.every(Boolean)) return;
    // One worker, as in Kubernetes: each sync is one small write at most.
    await this.queue.runWorkers(1, (key, signal) => this.sync(key, signal), ctx.signal);
  }

  private enqueueClaimsOf(pod: KubeObject): void {
    const namespace = pod.metadata?.namespace;
    if (!namespace) return;
    for (const name of claimNamesOf(pod)) this.queue.add(`${namespace}/${name}`);
  }

  async sync(key: string, signal?: AbortSignal): Promise<void> {
    const claim = this.claims.indexer.getByKey(key);
    if (!claim) return;
    await syncProtection({
      client: this.client, ref: { ...CLAIMS, namespace: claim.metadata?.namespace ?? '' }, finalizer: PVC_PROTECTION_FINALIZER, log: this.log, logAs: { claim: key },
    }, claim, () => this.inUse(claim, signal));
  }

  /** The cache first (cheap, and a hit is final), then a live list of the namespace's pods. */
  private async inUse(claim: KubeObject, signal?: AbortSignal): Promise<boolean> {
    const namespace = claim.metadata?.namespace ?? '';
    const name = claim.metadata?.name ?? '';
    if (this.pods.indexer.byIndex(POD_CLAIM_INDEX, `${namespace}/${name}`).some((p) => podUsesClaim(p, claim))) return true;
    const live = await this.client.list({ ...PODS, namespace }, signal ? { signal } : {});
    return live.items.some((p) => podUsesClaim(p, claim));
  }
}

export function newPvcProtectionController(): Controller {
  return new PvcProtectionController();
}

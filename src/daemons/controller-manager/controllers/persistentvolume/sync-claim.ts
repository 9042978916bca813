/**
 * One claim's sync (Kubernetes' syncClaim, syncUnboundClaim and syncBoundClaim).
 *
 * A claim without pv.kubernetes.io/bind-completed is unbound:
 *  - without spec.volumeName it gets the best matching volume (volume-index.ts); with none,
 *    a claim of a WaitForFirstConsumer class not yet given a node (selected-node annotation)
 *    gets a WaitForFirstConsumer (or WaitForPodScheduled) event, a claim with a class is
 *    handed to provisioning (provision.ts), and a classless claim gets FailedBinding;
 *  - with spec.volumeName (pre-bound by the user) it binds to that volume when the volume is
 *    free and fits (else VolumeMismatch), or already points back at the claim; it waits while
 *    the volume is missing or bound elsewhere.
 * A claim with bind-completed is bound: it is completed again if the volume came unbound, and
 * becomes Lost (a terminal phase, with a ClaimLost or ClaimMisbound event) when its volume is
 * gone, its spec.volumeName was cleared, or the volume belongs to another claim.
 */
import type { KubeObject } from '../../../../api/resources/types.js';
import { claimEvent, type BinderCore } from './binder-core.js';
import { findBestMatchForClaim } from './volume-index.js';
import { provisionClaim } from './provision.js';
import { podIsTerminated, podsUsingClaim } from './pods.js';
import {
  ANN_BIND_COMPLETED, ANN_BOUND_BY_CONTROLLER, ANN_SELECTED_NODE, claimClass, claimKey, claimRefKey, claimSpec, hasAnnotation,
  isVolumeBoundToClaim, nameOf, uidOf, volumeMismatch, volumeSpec,
} from './volume-helpers.js';
import { annealMigration, bind, updateClaimStatus, updateClaimStatusWithEvent } from './writes.js';

export async function syncClaim(core: BinderCore, claim: KubeObject): Promise<void> {
  const current = await annealMigration(core, claim, true);
  if (!hasAnnotation(current, ANN_BIND_COMPLETED)) await syncUnboundClaim(core, current);
  else await syncBoundClaim(core, current);
}

/** True for a claim of a WaitForFirstConsumer class (an unknown class binds at once). */
function isDelayBindingMode(core: BinderCore, claim: KubeObject): boolean {
  const name = claimClass(claim);
  if (!name) return false;
  const cls = core.classInformer.indexer.get(undefined, name);
  if (!cls) return false;
  if (cls.volumeBindingMode === undefined || cls.volumeBindingMode === null) throw new Error(`VolumeBindingMode not set for StorageClass "${name}"`);
  return cls.volumeBindingMode === 'WaitForFirstConsumer';
}

/** Says what a delayed-binding claim waits for: any consumer, or the scheduling of the pods naming it. */
function emitWaitingEvent(core: BinderCore, claim: KubeObject): void {
  const waiting = podsUsingClaim(core, claim).filter((p) => !podIsTerminated(p) && !(p.spec as { nodeName?: string } | undefined)?.nodeName).map(nameOf);
  if (!waiting.length) {
    claimEvent(core, claim, 'Normal', 'WaitForFirstConsumer', 'waiting for first consumer to be created before binding');
    return;
  }
  const message = waiting.length > 1 ? `waiting for pods ${waiting.join(',')} to be scheduled` : `waiting for pod ${waiting[0]} to be scheduled`;
  claimEvent(core, claim, 'Normal', 'WaitForPodScheduled', message);
}

async function syncUnboundClaim(core: BinderCore, claim: KubeObject): Promise<void> {
  const volumeName = claimSpec(claim).volumeName;
  if (!volumeName) {
    const delayBinding = isDelayBindingMode(core, claim);
    let volume: KubeObject | undefined;
    try {
      volume = findBestMatchForClaim(claim, core.volumes.list(), delayBinding);
    } catch (e) {
      throw new Error(`error finding PV for claim "${claimKey(claim)}": ${(e as Error).message}`, { cause: e });
    }
    if (volume) { await bind(core, volume, claim); return; }
    if (delayBinding && !hasAnnotation(claim, ANN_SELECTED_NODE)) {
      emitWaitingEvent(core, claim);
    } else if (claimClass(claim) !== '') {
      // Provisioning runs on its own; its volume is bound by a later sync.
      await provisionClaim(core, claim);
      return;
    } else {
      claimEvent(core, claim, 'Normal', 'FailedBinding', 'no persistent volumes available for this claim and no storage class is set');
    }
    await updateClaimStatus(core, claim, 'Pending');
    return;
  }
  const volume = core.volumes.get(volumeName);
  if (!volume) {
    // The named volume does not exist (yet): wait for it.
    await updateClaimStatus(core, claim, 'Pending');
    return;
  }
  const ref = volumeSpec(volume).claimRef;
  if (!ref) {
    const why = volumeMismatch(volume, claim);
    if (why) {
      claimEvent(core, claim, 'Warning', 'VolumeMismatch', `Cannot bind to requested volume "${volumeName}": ${why}`);
      await updateClaimStatus(core, claim, 'Pending');
      return;
    }
    await bind(core, volume, claim);
    return;
  }
  if (isVolumeBoundToClaim(volume, claim)) {
    // The volume already points at this claim (pre-bound, or our first write landed): finish.
    await bind(core, volume, claim);
    return;
  }
  claimEvent(core, claim, 'Warning', 'FailedBinding', `volume "${volumeName}" already bound to a different claim.`);
  if (!hasAnnotation(claim, ANN_BOUND_BY_CONTROLLER)) {
    // The user asked for a volume someone else has: wait until it is free.
    await updateClaimStatus(core, claim, 'Pending');
    return;
  }
  // Only a removed bind-completed annotation leads here.
  throw new Error(`invalid binding of claim "${claimKey(claim)}" to volume "${volumeName}": volume already claimed by "${claimRefKey(ref)}"`);
}

async function syncBoundClaim(core: BinderCore, claim: KubeObject): Promise<void> {
  const volumeName = claimSpec(claim).volumeName;
  if (!volumeName) {
    await updateClaimStatusWithEvent(core, claim, 'Lost', undefined, 'Warning', 'ClaimLost', 'Bound claim has lost reference to PersistentVolume. Data on the volume is lost!');
    return;
  }
  const volume = core.volumes.get(volumeName);
  if (!volume) {
    await updateClaimStatusWithEvent(core, claim, 'Lost', undefined, 'Warning', 'ClaimLost', 'Bound claim has lost its PersistentVolume. Data on the volume is lost!');
    return;
  }
  const ref = volumeSpec(volume).claimRef;
  if (!ref || ref.uid === uidOf(claim)) {
    // Unbound volume (or our volume write not seen yet): bind again. Bound: bind() writes nothing.
    await bind(core, volume, claim);
    return;
  }
  await updateClaimStatusWithEvent(core, claim, 'Lost', undefined, 'Warning', 'ClaimMisbound', 'Two claims are bound to the same volume, this one is bound incorrectly');
}

/**
 * One volume's sync (Kubernetes' syncVolume).
 *
 *  - no spec.claimRef, or one without a uid (pre-bound by the user, not yet bound): Available;
 *  - its claim is gone (not in any cache nor the API, or replaced by one with another uid):
 *    Released, then the reclaim policy runs (reclaim.ts); Released and Failed are kept;
 *  - its claim has no spec.volumeName yet: the claim is queued to finish the binding (or, on a
 *    volumeMode mismatch, both get a VolumeMismatch event);
 *  - its claim names it: Bound;
 *  - its claim names another volume: a volume provisioned for it with the Delete policy is
 *    released and reclaimed; otherwise the binding is undone (unbindVolume).
 */
import { isApiError } from '../../../../api/meta/status.js';
import type { KubeObject } from '../../../../api/resources/types.js';
import { claimEvent, claimsIn, volumeEvent, type BinderCore } from './binder-core.js';
import { reclaimVolume } from './reclaim.js';
import {
  ANN_DYNAMICALLY_PROVISIONED, claimKey, claimRefKey, claimSpec, hasAnnotation, nameOf, uidOf, volumeModeMismatch, volumeSpec,
  volumeStatus, type ClaimRef,
} from './volume-helpers.js';
import { annealMigration, unbindVolume, updateVolumePhase } from './writes.js';

async function liveClaim(core: BinderCore, ref: ClaimRef): Promise<KubeObject | undefined> {
  try {
    return await core.client.get(claimsIn(ref.namespace ?? ''), ref.name ?? '');
  } catch (e) {
    if (isApiError(e) && e.code === 404) return undefined;
    throw e;
  }
}

const releasedOrFailed = (v: KubeObject): boolean => ['Released', 'Failed'].includes(volumeStatus(v).phase ?? '');

/**
 * The claim the volume is bound to, if it still exists. A volume made by an external
 * provisioner or bound by the scheduler may name a claim the caches have not seen yet, so a
 * miss is checked against the API server before the volume is released.
 */
async function boundClaim(core: BinderCore, volume: KubeObject, ref: ClaimRef): Promise<KubeObject | undefined> {
  let claim = core.claims.get(claimRefKey(ref));
  if (!claim && !releasedOrFailed(volume)) {
    claim = core.claimInformer.indexer.get(ref.namespace, ref.name ?? '') ?? await liveClaim(core, ref);
  }
  if (claim && uidOf(claim) !== ref.uid) {
    // A claim of that name with another uid: the cache may be behind, ask the API server.
    const live = await liveClaim(core, ref);
    claim = live && uidOf(live) === ref.uid ? live : undefined;
  }
  return claim;
}

export async function syncVolume(core: BinderCore, original: KubeObject): Promise<void> {
  let volume = await annealMigration(core, original, false);
  const ref = volumeSpec(volume).claimRef;
  if (!ref || !ref.uid) {
    await updateVolumePhase(core, volume, 'Available');
    return;
  }
  const claim = await boundClaim(core, volume, ref);
  if (!claim) {
    // Failed is kept so the user sees what went wrong; reclaiming is still retried.
    if (!releasedOrFailed(volume)) {
      core.log.info({ volume: nameOf(volume), reclaimPolicy: volumeSpec(volume).persistentVolumeReclaimPolicy }, 'volume is released; running its reclaim policy');
      volume = await updateVolumePhase(core, volume, 'Released');
    }
    await reclaimVolume(core, volume);
    return;
  }
  const volumeName = claimSpec(claim).volumeName;
  if (!volumeName) {
    if (volumeModeMismatch(claim, volume)) {
      // The claim's sync will never pick this volume; say why on both.
      volumeEvent(core, volume, 'Warning', 'VolumeMismatch', `Cannot bind PersistentVolume to requested PersistentVolumeClaim "${nameOf(claim)}" due to incompatible volumeMode.`);
      claimEvent(core, claim, 'Warning', 'VolumeMismatch', `Cannot bind PersistentVolume "${nameOf(volume)}" to requested PersistentVolumeClaim due to incompatible volumeMode.`);
      return;
    }
    // Bound (by us, by the scheduler or a provisioner) but the claim is not: its sync finishes it.
    core.enqueueClaim(claimKey(claim));
    return;
  }
  if (volumeName === nameOf(volume)) {
    await updateVolumePhase(core, volume, 'Bound');
    return;
  }
  if (hasAnnotation(volume, ANN_DYNAMICALLY_PROVISIONED) && volumeSpec(volume).persistentVolumeReclaimPolicy === 'Delete') {
    // Provisioned for a claim that got another volume: not needed.
    if (!releasedOrFailed(volume)) volume = await updateVolumePhase(core, volume, 'Released');
    await reclaimVolume(core, volume);
    return;
  }
  await unbindVolume(core, volume);
}

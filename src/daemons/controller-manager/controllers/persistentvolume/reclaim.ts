/**
 * What happens to a released volume (Kubernetes' reclaimVolume and its delete and recycle
 * operations), by spec.persistentVolumeReclaimPolicy:
 *  - Retain: nothing; the volume stays Released with its claimRef until an admin acts;
 *  - Delete: the storage is deleted by the volume's plugin, then the volume object. Plugins
 *    are as in volume-plugins.ts: a host-path directory under /tmp/ is removed on this host,
 *    a local-path directory on its node by a helper pod (local-path.ts);
 *    volumes of external provisioners and CSI drivers are left to them (they stay Released);
 *    any other volume becomes Failed with a VolumeFailedDelete event (and status.message);
 *  - Recycle: not supported here; Failed with VolumeFailedRecycle (after a Normal event and
 *    no change while pods still use the old claim);
 *  - anything else: Failed with VolumeUnknownReclaimPolicy.
 * A volume handed to a CSI driver (pv.kubernetes.io/migrated-to) is left to it. Delete and
 * Recycle run as operations (operations.ts) and re-read the volume first; a failed attempt is
 * retried by later syncs after a backoff, without repeating the event.
 */
import { rm } from 'node:fs/promises';
import { isApiError } from '../../../../api/meta/status.js';
import type { KubeObject } from '../../../../api/resources/types.js';
import { VOLUMES, volumeEvent, type BinderCore } from './binder-core.js';
import { podIsTerminated, podsUsingClaimKey } from './pods.js';
import { ANN_MIGRATED_TO, claimRefKey, claimSpec, nameOf, uidOf, volumeSpec } from './volume-helpers.js';
import { deleteLocalPathDirectory, HelperPending } from './local-path.js';
import { deleterFor, hostPathDeletable, recycleFailure } from './volume-plugins.js';
import { updateVolumePhaseWithEvent } from './writes.js';

export async function reclaimVolume(core: BinderCore, volume: KubeObject): Promise<void> {
  if (volume.metadata?.annotations?.[ANN_MIGRATED_TO]) return;
  const policy = volumeSpec(volume).persistentVolumeReclaimPolicy;
  const id = `${nameOf(volume)}[${uidOf(volume)}]`;
  switch (policy) {
    case 'Retain':
      return;
    case 'Recycle':
      core.operations.run(`recycle-${id}`, () => recycleVolume(core, volume));
      return;
    case 'Delete':
      core.operations.run(`delete-${id}`, () => deleteVolume(core, volume));
      return;
    default:
      await updateVolumePhaseWithEvent(core, volume, 'Failed', 'Warning', 'VolumeUnknownReclaimPolicy', 'Volume has unrecognized PersistentVolumeReclaimPolicy');
  }
}

/** The volume as the API server has it now; undefined (logged) when it cannot be read. */
async function reread(core: BinderCore, volume: KubeObject): Promise<KubeObject | undefined> {
  try {
    return await core.client.get(VOLUMES, nameOf(volume));
  } catch (e) {
    core.log.debug({ volume: nameOf(volume), err: (e as Error).message }, 'cannot read the volume to reclaim it');
    return undefined;
  }
}

/** Bound to a claim that no longer exists, or that now names another volume. */
function isVolumeReleased(core: BinderCore, volume: KubeObject): boolean {
  const ref = volumeSpec(volume).claimRef;
  if (!ref || !ref.uid) return false;
  const claim = core.claims.get(claimRefKey(ref));
  if (claim && uidOf(claim) === ref.uid) {
    const name = claimSpec(claim).volumeName;
    return !!name && name !== nameOf(volume);
  }
  return true;
}

async function deleteVolume(core: BinderCore, volume: KubeObject): Promise<void> {
  const fresh = await reread(core, volume);
  if (!fresh || !isVolumeReleased(core, fresh)) return;
  const deleter = deleterFor(volume);
  if (deleter.kind === 'external') {
    core.log.debug({ volume: nameOf(volume) }, 'an external deleter is to delete the volume');
    return;
  }
  if (deleter.kind === 'failed') return failDelete(core, volume, deleter.error);
  if (deleter.kind === 'local-path') {
    try {
      await deleteLocalPathDirectory(core, fresh);
    } catch (e) {
      if (e instanceof HelperPending) throw e;
      return failDelete(core, volume, (e as Error).message);
    }
  } else {
    const refused = hostPathDeletable(deleter.path);
    if (refused) return failDelete(core, volume, refused);
    try {
      await rm(deleter.path, { recursive: true, force: true });
    } catch (e) {
      return failDelete(core, volume, (e as Error).message);
    }
  }
  core.log.info({ volume: nameOf(volume) }, 'volume storage deleted; deleting the volume');
  try {
    await core.client.delete(VOLUMES, nameOf(volume));
  } catch (e) {
    // Tried again by the next sync of the volume.
    if (!(isApiError(e) && e.code === 404)) core.log.info({ volume: nameOf(volume), err: (e as Error).message }, 'cannot delete the volume object');
  }
}

async function failDelete(core: BinderCore, volume: KubeObject, message: string): Promise<never> {
  await updateVolumePhaseWithEvent(core, volume, 'Failed', 'Warning', 'VolumeFailedDelete', message);
  throw new Error(message);
}

async function recycleVolume(core: BinderCore, volume: KubeObject): Promise<void> {
  const fresh = await reread(core, volume);
  if (!fresh || !isVolumeReleased(core, fresh)) return;
  const ref = volumeSpec(fresh).claimRef!;
  const users = podsUsingClaimKey(core, claimRefKey(ref)).filter((p) => !podIsTerminated(p))
    .map((p) => `${p.metadata?.namespace ?? ''}/${nameOf(p)}`).sort();
  // A cached claim of that name is a newer claim (the volume is released), not a user of this volume.
  if (users.length && !core.claims.get(claimRefKey(ref))) {
    volumeEvent(core, fresh, 'Normal', 'VolumeFailedRecycle', `Volume is used by pods: ${users.join(',')}`);
    return;
  }
  try {
    await updateVolumePhaseWithEvent(core, fresh, 'Failed', 'Warning', 'VolumeFailedRecycle', recycleFailure(fresh));
  } catch (e) {
    core.log.debug({ volume: nameOf(fresh), err: (e as Error).message }, 'cannot mark the volume Failed; retried on its next sync');
  }
}

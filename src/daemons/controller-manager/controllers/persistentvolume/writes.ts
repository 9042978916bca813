/**
 * The binder's writes, each as Kubernetes' persistent volume controller makes it: an update
 * carrying the resourceVersion of the object it read (a 409 is thrown; the sync is retried
 * with fresher objects), made only when something changes, and recorded in the binder's own
 * view so the next sync does not act on the version the informer still holds.
 *
 * Binding is four writes in this order: the volume's spec.claimRef, the volume's phase, the
 * claim's spec.volumeName with its annotations, the claim's status. A failure anywhere leaves
 * a state the next sync of either object completes.
 */
import type { KubeObject, ObjectMeta } from '../../../../api/resources/types.js';
import { deepEqual } from '../../../../api/resources/common/validation.js';
import { isQuantity } from '../../../../util/quantity.js';
import type { EventType } from '../../events.js';
import { claimEvent, claimsIn, VOLUMES, volumeEvent, type BinderCore } from './binder-core.js';
import {
  ANN_BETA_STORAGE_PROVISIONER, ANN_BIND_COMPLETED, ANN_BOUND_BY_CONTROLLER, ANN_DYNAMICALLY_PROVISIONED, ANN_MIGRATED_TO,
  ANN_PRE_RESIZE_CAPACITY, ANN_STORAGE_PROVISIONER, claimRefTo, claimStatus, hasAnnotation, isVolumeBoundToClaim, nameOf,
  storageBytes, uidOf, volumeSpec, volumeStatus, type ClaimStatus,
} from './volume-helpers.js';
import { migratedDriver } from './volume-plugins.js';

const namespaceOf = (o: KubeObject): string => o.metadata?.namespace ?? '';

async function writeClaim(core: BinderCore, claim: KubeObject, status = false): Promise<KubeObject> {
  const updated = await core.client.update(claimsIn(namespaceOf(claim)), claim, status ? { subresource: 'status' } : {});
  core.claims.update(updated);
  return updated;
}

async function writeVolume(core: BinderCore, volume: KubeObject, status = false): Promise<KubeObject> {
  const updated = await core.client.update(VOLUMES, volume, status ? { subresource: 'status' } : {});
  core.volumes.update(updated);
  return updated;
}

/**
 * Sets the claim's phase; with a volume, also status.accessModes (and the volume's attributes
 * class) from it, and status.capacity when the claim is just becoming `phase` (later a
 * difference may be intended, e.g. a pending file-system resize). Without one, clears them.
 */
export async function updateClaimStatus(core: BinderCore, claim: KubeObject, phase: string, volume?: KubeObject): Promise<KubeObject> {
  const old = claimStatus(claim);
  const status: ClaimStatus = { ...old };
  let dirty = false;
  if (old.phase !== phase) { status.phase = phase; dirty = true; }
  if (!volume) {
    for (const f of ['accessModes', 'capacity', 'currentVolumeAttributesClassName', 'modifyVolumeStatus']) {
      if (status[f] != null) { delete status[f]; dirty = true; }
    }
  } else {
    const spec = volumeSpec(volume);
    if (!deepEqual(old.accessModes ?? null, spec.accessModes ?? null)) { status.accessModes = spec.accessModes; dirty = true; }
    const vac = spec.volumeAttributesClassName ?? undefined;
    if ((old.currentVolumeAttributesClassName ?? undefined) !== vac) {
      if (vac === undefined) delete status.currentVolumeAttributesClassName; else status.currentVolumeAttributesClassName = vac;
      dirty = true;
    }
    if (old.phase !== phase) {
      const cap = spec.capacity?.storage;
      if (cap === undefined) throw new Error(`PersistentVolume "${nameOf(volume)}" is without a storage capacity`);
      const preResize = volume.metadata?.annotations?.[ANN_PRE_RESIZE_CAPACITY];
      if (preResize !== undefined) {
        // The volume still needs a file-system resize: the claim reports the size before it.
        status.capacity = { ...old.capacity, storage: isQuantity(preResize) ? preResize : cap };
        dirty = true;
      } else if (old.capacity?.storage === undefined || storageBytes(spec.capacity) !== storageBytes(old.capacity)) {
        status.capacity = { ...spec.capacity };
        dirty = true;
      }
    }
  }
  if (!dirty) return claim;
  const updated = await writeClaim(core, { ...claim, status }, true);
  core.log.debug({ claim: `${namespaceOf(claim)}/${nameOf(claim)}`, phase }, 'claim entered phase');
  return updated;
}

/** updateClaimStatus plus an event, both only when the phase changes. */
export async function updateClaimStatusWithEvent(
  core: BinderCore, claim: KubeObject, phase: string, volume: KubeObject | undefined, type: EventType, reason: string, message: string,
): Promise<KubeObject> {
  if (claimStatus(claim).phase === phase) return claim;
  const updated = await updateClaimStatus(core, claim, phase, volume);
  claimEvent(core, updated, type, reason, message);
  return updated;
}

export async function updateVolumePhase(core: BinderCore, volume: KubeObject, phase: string, message = ''): Promise<KubeObject> {
  if (volumeStatus(volume).phase === phase) return volume;
  const status: Record<string, unknown> = { ...volumeStatus(volume), phase };
  if (message) status.message = message; else delete status.message;
  const updated = await writeVolume(core, { ...volume, status }, true);
  core.log.debug({ volume: nameOf(volume), phase }, 'volume entered phase');
  return updated;
}

/** updateVolumePhase plus an event (whose message also goes to status.message), only on a change. */
export async function updateVolumePhaseWithEvent(
  core: BinderCore, volume: KubeObject, phase: string, type: EventType, reason: string, message: string,
): Promise<KubeObject> {
  if (volumeStatus(volume).phase === phase) return volume;
  const updated = await updateVolumePhase(core, volume, phase, message);
  volumeEvent(core, updated, type, reason, message);
  return updated;
}

function withAnnotations(o: KubeObject, set: Record<string, string>, remove: readonly string[] = []): KubeObject {
  const annotations = { ...o.metadata?.annotations, ...set };
  for (const k of remove) delete annotations[k];
  const metadata: ObjectMeta = { ...o.metadata, annotations };
  if (!Object.keys(annotations).length) delete metadata.annotations;
  return { ...o, metadata };
}

/** Points the volume at the claim (uid included); marks it bound by the controller unless the user pre-bound it. */
async function bindVolumeToClaim(core: BinderCore, volume: KubeObject, claim: KubeObject): Promise<KubeObject> {
  const byController = !isVolumeBoundToClaim(volume, claim);
  const ref = volumeSpec(volume).claimRef;
  let next = volume;
  let dirty = false;
  if (!ref || ref.name !== nameOf(claim) || (ref.namespace ?? '') !== namespaceOf(claim) || (ref.uid ?? '') !== uidOf(claim)) {
    next = { ...next, spec: { ...volumeSpec(next), claimRef: claimRefTo(claim) } };
    dirty = true;
  }
  if (byController && !hasAnnotation(next, ANN_BOUND_BY_CONTROLLER)) {
    next = withAnnotations(next, { [ANN_BOUND_BY_CONTROLLER]: 'yes' });
    dirty = true;
  }
  if (!dirty) return volume;
  const updated = await writeVolume(core, next);
  core.log.info({ volume: nameOf(volume), claim: `${namespaceOf(claim)}/${nameOf(claim)}` }, 'claim bound to volume');
  return updated;
}

/** Sets spec.volumeName (marked bound by the controller unless the user named the volume) and bind-completed. */
async function bindClaimToVolume(core: BinderCore, claim: KubeObject, volume: KubeObject): Promise<KubeObject> {
  let next = claim;
  let dirty = false;
  if ((claim.spec as { volumeName?: string } | undefined)?.volumeName !== nameOf(volume)) {
    next = { ...next, spec: { ...(next.spec as object), volumeName: nameOf(volume) } };
    if (!hasAnnotation(next, ANN_BOUND_BY_CONTROLLER)) next = withAnnotations(next, { [ANN_BOUND_BY_CONTROLLER]: 'yes' });
    dirty = true;
  }
  if (!hasAnnotation(next, ANN_BIND_COMPLETED)) {
    next = withAnnotations(next, { [ANN_BIND_COMPLETED]: 'yes' });
    dirty = true;
  }
  if (!dirty) return claim;
  return writeClaim(core, next);
}

/** Binds both sides and marks both Bound (volume first); returns on the first failure. */
export async function bind(core: BinderCore, volume: KubeObject, claim: KubeObject): Promise<void> {
  let v = await bindVolumeToClaim(core, volume, claim);
  v = await updateVolumePhase(core, v, 'Bound');
  const c = await bindClaimToVolume(core, claim, v);
  await updateClaimStatus(core, c, 'Bound', v);
}

/**
 * Undoes a binding the claim did not complete: a binding the controller made is removed with
 * its annotation; a user's pre-binding keeps its claim name and loses only the uid. The volume
 * becomes Available.
 */
export async function unbindVolume(core: BinderCore, volume: KubeObject): Promise<void> {
  const spec = { ...volumeSpec(volume) };
  let next: KubeObject;
  if (hasAnnotation(volume, ANN_BOUND_BY_CONTROLLER)) {
    delete spec.claimRef;
    next = withAnnotations({ ...volume, spec }, {}, [ANN_BOUND_BY_CONTROLLER]);
  } else {
    const ref = { ...spec.claimRef };
    delete ref.uid;
    next = { ...volume, spec: { ...spec, claimRef: ref } };
  }
  const updated = await writeVolume(core, next);
  await updateVolumePhase(core, updated, 'Available');
}

/** Asks `provisioner` for a volume: both storage-provisioner annotations (kept if already right). */
export async function setClaimProvisioner(core: BinderCore, claim: KubeObject, provisioner: string): Promise<KubeObject> {
  if (claim.metadata?.annotations?.[ANN_STORAGE_PROVISIONER] === provisioner) return claim;
  const next = withAnnotations(claim, { [ANN_BETA_STORAGE_PROVISIONER]: provisioner, [ANN_STORAGE_PROVISIONER]: provisioner });
  migrationAnnotations(next, true);
  return writeClaim(core, next);
}

/**
 * Keeps pv.kubernetes.io/migrated-to right on objects of an in-tree provisioner (the claim's
 * storage-provisioner, the volume's provisioned-by): the CSI driver when that plugin was
 * migrated, absent otherwise. Changes `obj`'s annotations in place; true when it changed them.
 */
function migrationAnnotations(obj: KubeObject, isClaim: boolean): boolean {
  const ann = obj.metadata?.annotations;
  if (!ann) return false;
  const provisioner = isClaim ? ann[ANN_STORAGE_PROVISIONER] ?? ann[ANN_BETA_STORAGE_PROVISIONER] : ann[ANN_DYNAMICALLY_PROVISIONED];
  if (provisioner === undefined) return false;
  const driver = migratedDriver(provisioner);
  if (driver) {
    if (ann[ANN_MIGRATED_TO] === driver) return false;
    ann[ANN_MIGRATED_TO] = driver;
    return true;
  }
  if (!ann[ANN_MIGRATED_TO]) return false;
  delete ann[ANN_MIGRATED_TO];
  return true;
}

/** The object with its migrated-to annotation corrected (written first), or the same object. */
export async function annealMigration(core: BinderCore, obj: KubeObject, isClaim: boolean): Promise<KubeObject> {
  const copy: KubeObject = { ...obj, metadata: { ...obj.metadata, annotations: { ...obj.metadata?.annotations } } };
  if (!migrationAnnotations(copy, isClaim)) return obj;
  try {
    return isClaim ? await writeClaim(core, copy) : await writeVolume(core, copy);
  } catch (e) {
    throw new Error(`persistent Volume Controller can't anneal migration annotations: ${(e as Error).message}`, { cause: e });
  }
}

/**
 * PersistentVolume / PersistentVolumeClaim fields and the binding annotations, as Kubernetes'
 * persistent volume controller and component-helpers/storage/volume read them: the class of
 * either side (the beta annotation wins over the field), the claim a volume points at, storage
 * sizes, access and volume modes.
 */
import type { LabelSelectorObject } from '../../../../api/meta/label-selector.js';
import type { KubeObject } from '../../../../api/resources/types.js';
import { parseQuantity } from '../../../../util/quantity.js';

/** On claims: the claim has been bound once; its later history is read differently. */
export const ANN_BIND_COMPLETED = 'pv.kubernetes.io/bind-completed';
/** On volumes and claims: the controller (not the user) made the binding. */
export const ANN_BOUND_BY_CONTROLLER = 'pv.kubernetes.io/bound-by-controller';
/** On volumes: the plugin or external provisioner that created it. */
export const ANN_DYNAMICALLY_PROVISIONED = 'pv.kubernetes.io/provisioned-by';
/** On volumes and claims: the CSI driver an in-tree plugin's volumes are handled by. */
export const ANN_MIGRATED_TO = 'pv.kubernetes.io/migrated-to';
/** On claims: who is asked to provision a volume for it (both keys are written). */
export const ANN_STORAGE_PROVISIONER = 'volume.kubernetes.io/storage-provisioner';
export const ANN_BETA_STORAGE_PROVISIONER = 'volume.beta.kubernetes.io/storage-provisioner';
/** On claims of WaitForFirstConsumer classes: the node the scheduler chose; starts provisioning. */
export const ANN_SELECTED_NODE = 'volume.kubernetes.io/selected-node';
/** On claims and volumes: the class, before spec.storageClassName existed (still wins). */
export const ANN_BETA_STORAGE_CLASS = 'volume.beta.kubernetes.io/storage-class';
/** On volumes: the size before an expansion that still needs a file-system resize. */
export const ANN_PRE_RESIZE_CAPACITY = 'volume.alpha.kubernetes.io/pre-resize-capacity';

export interface ClaimRef {
  kind?: string;
  namespace?: string;
  name?: string;
  uid?: string;
  apiVersion?: string;
  resourceVersion?: string;
}

export interface VolumeSpec {
  claimRef?: ClaimRef | null;
  capacity?: Record<string, string>;
  accessModes?: string[];
  storageClassName?: string;
  volumeMode?: string;
  volumeAttributesClassName?: string | null;
  persistentVolumeReclaimPolicy?: string;
  hostPath?: { path?: string };
  [source: string]: unknown;
}

export interface VolumeStatus { phase?: string; message?: string; reason?: string }

export interface ClaimSpec {
  volumeName?: string;
  storageClassName?: string | null;
  accessModes?: string[];
  resources?: { requests?: Record<string, string> };
  selector?: LabelSelectorObject | null;
  volumeMode?: string;
  volumeAttributesClassName?: string | null;
}

export interface ClaimStatus { phase?: string; accessModes?: string[]; capacity?: Record<string, string>; [field: string]: unknown }

export const volumeSpec = (v: KubeObject): VolumeSpec => (v.spec ?? {}) as VolumeSpec;
export const volumeStatus = (v: KubeObject): VolumeStatus => (v.status ?? {}) as VolumeStatus;
export const claimSpec = (c: KubeObject): ClaimSpec => (c.spec ?? {}) as ClaimSpec;
export const claimStatus = (c: KubeObject): ClaimStatus => (c.status ?? {}) as ClaimStatus;

export const hasAnnotation = (o: KubeObject, key: string): boolean => o.metadata?.annotations?.[key] !== undefined;
export const nameOf = (o: KubeObject): string => o.metadata?.name ?? '';
export const uidOf = (o: KubeObject): string => o.metadata?.uid ?? '';

/** `namespace/name`, the claim queue's key. */
export const claimKey = (c: KubeObject): string => `${c.metadata?.namespace ?? ''}/${nameOf(c)}`;
export const claimRefKey = (r: ClaimRef): string => `${r.namespace ?? ''}/${r.name ?? ''}`;

/** The claim's class: the beta annotation, else spec.storageClassName, else "" (no class). */
export function claimClass(c: KubeObject): string {
  const ann = c.metadata?.annotations?.[ANN_BETA_STORAGE_CLASS];
  if (ann !== undefined) return ann;
  return claimSpec(c).storageClassName ?? '';
}

export function volumeClass(v: KubeObject): string {
  const ann = v.metadata?.annotations?.[ANN_BETA_STORAGE_CLASS];
  if (ann !== undefined) return ann;
  return volumeSpec(v).storageClassName ?? '';
}

/** Bytes of a `storage` quantity; a missing or unreadable one counts as 0, as Go's zero Quantity. */
export function storageBytes(list: Record<string, string> | undefined): number {
  const q = list?.storage;
  if (q === undefined) return 0;
  try { return parseQuantity(String(q)); } catch { return 0; }
}

export const requestedBytes = (c: KubeObject): number => storageBytes(claimSpec(c).resources?.requests);
export const volumeBytes = (v: KubeObject): number => storageBytes(volumeSpec(v).capacity);

/** Pre-bound or bound to this claim: same namespace and name, and same uid when the ref has one. */
export function isVolumeBoundToClaim(v: KubeObject, c: KubeObject): boolean {
  const ref = volumeSpec(v).claimRef;
  if (!ref) return false;
  if (ref.name !== nameOf(c) || (ref.namespace ?? '') !== (c.metadata?.namespace ?? '')) return false;
  return !ref.uid || ref.uid === uidOf(c);
}

/** A nil volumeMode on either side means Filesystem (an API server may be older than us). */
export function volumeModeMismatch(c: KubeObject, v: KubeObject): boolean {
  return (claimSpec(c).volumeMode || 'Filesystem') !== (volumeSpec(v).volumeMode || 'Filesystem');
}

/** Every access mode the claim asks for is one the volume offers. */
export function accessModesSatisfied(c: KubeObject, v: KubeObject): boolean {
  const offered = new Set(volumeSpec(v).accessModes ?? []);
  return (claimSpec(c).accessModes ?? []).every((m) => offered.has(m));
}

export const volumeAttributesClassOf = (o: KubeObject): string => (o.spec as { volumeAttributesClassName?: string | null } | undefined)?.volumeAttributesClassName ?? '';

/**
 * Why a volume the claim names in spec.volumeName cannot be bound to it, or undefined when it
 * can (Kubernetes' checkVolumeSatisfyClaim, in its order; sizes compared in whole bytes).
 */
export function volumeMismatch(v: KubeObject, c: KubeObject): string | undefined {
  if (v.metadata?.deletionTimestamp) return `the volume is marked for deletion "${nameOf(v)}"`;
  if (Math.ceil(volumeBytes(v)) < Math.ceil(requestedBytes(c))) return 'requested PV is too small';
  if (volumeClass(v) !== claimClass(c)) return 'storageClassName does not match';
  if (volumeAttributesClassOf(v) !== volumeAttributesClassOf(c)) return 'volumeAttributesClassName does not match';
  if (volumeModeMismatch(c, v)) return 'incompatible volumeMode';
  if (!accessModesSatisfied(c, v)) return 'incompatible accessMode';
  return undefined;
}

/** The reference a bound volume keeps to its claim (client-go's GetReference of the claim). */
export function claimRefTo(c: KubeObject): ClaimRef {
  return {
    kind: 'PersistentVolumeClaim', namespace: c.metadata?.namespace ?? '', name: nameOf(c), uid: uidOf(c),
    apiVersion: 'v1', resourceVersion: c.metadata?.resourceVersion ?? '',
  };
}

/** With apiVersion and kind set (cached list items may lack them), for events about the object. */
export const asVolume = (v: KubeObject): KubeObject => ({ ...v, apiVersion: 'v1', kind: 'PersistentVolume' });
export const asClaim = (c: KubeObject): KubeObject => ({ ...c, apiVersion: 'v1', kind: 'PersistentVolumeClaim' });

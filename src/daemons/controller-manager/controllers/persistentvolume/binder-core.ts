/**
 * What the binder's sync steps (sync-claim.ts, sync-volume.ts, reclaim.ts, provision.ts,
 * writes.ts) share: the client, the binder's own views of volumes and claims, the informer
 * caches it reads, the operation map and the event recorder.
 */
import type { Logger } from 'pino';
import type { KubeObject } from '../../../../api/resources/types.js';
import type { ResourceRef, RestClient, SharedIndexInformer } from '../../deps.js';
import type { EventRecorder, EventType } from '../../events.js';
import type { OperationMap } from './operations.js';
import { asClaim, asVolume } from './volume-helpers.js';
import type { VersionedStore } from './versioned-store.js';

export const VOLUMES: ResourceRef = { group: '', version: 'v1', resource: 'persistentvolumes' };
export const CLAIMS: ResourceRef = { group: '', version: 'v1', resource: 'persistentvolumeclaims' };
export const CLASSES: ResourceRef = { group: 'storage.k8s.io', version: 'v1', resource: 'storageclasses' };
export const PODS: ResourceRef = { group: '', version: 'v1', resource: 'pods' };

export const claimsIn = (namespace: string): ResourceRef => ({ ...CLAIMS, namespace });

export interface BinderCore {
  readonly client: RestClient;
  readonly log: Logger;
  readonly events: EventRecorder;
  /** Newest known volumes, keyed by name. */
  readonly volumes: VersionedStore;
  /** Newest known claims, keyed by `namespace/name`. */
  readonly claims: VersionedStore;
  readonly claimInformer: SharedIndexInformer;
  readonly classInformer: SharedIndexInformer;
  /** Indexed by claim (pvc-protection's POD_CLAIM_INDEX). */
  readonly podInformer: SharedIndexInformer;
  readonly operations: OperationMap;
  readonly enableDynamicProvisioning: boolean;
  /** --enable-hostpath-provisioner: kubernetes.io/host-path classes are provisioned (local-path.ts). */
  readonly enableHostPathProvisioner: boolean;
  enqueueClaim(key: string): void;
}

export function claimEvent(core: BinderCore, claim: KubeObject, type: EventType, reason: string, message: string): void {
  core.events.event(asClaim(claim), type, reason, message);
}

export function volumeEvent(core: BinderCore, volume: KubeObject, type: EventType, reason: string, message: string): void {
  core.events.event(asVolume(volume), type, reason, message);
}

/**
 * persistentVolumeClaim volumes: the claim (in the pod's namespace) must be bound; its
 * PersistentVolume says where the data is. Sources a machine without a cloud has:
 *  - hostPath: the host path itself (DirectoryOrCreate / FileOrCreate create it; this is what
 *    the local-path and host-path provisioners hand out);
 *  - local: an existing directory on this node (the scheduler put the pod here by the volume's
 *    node affinity); the pod's fsGroup is applied to it, as Kubernetes does for local volumes;
 *  - nfs: mounted with the host's mount helper under the pod's volume directory;
 *  - csi: staged and published through the driver's node service (csi-node.ts).
 * The mount is read-only when the pod's volume source or the volume says so. Claims and volumes
 * are read with the node's credentials (the node authorizer lets a node read those of its pods).
 */
import { existsSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { isApiError } from '../../../api/meta/status.js';
import type { KubeObject } from '../../../api/resources/types.js';
import type { RestClient } from '../../../client/rest-client.js';
import type { Dict, Pod } from '../pod-types.js';

/** Reads claims and volumes; undefined when not found. */
export interface ClaimReader {
  claim(namespace: string, name: string): Promise<KubeObject | undefined>;
  volume(name: string): Promise<KubeObject | undefined>;
  /** Merge-patches the claim's status (finishing an expansion on the node). */
  patchClaimStatus?(namespace: string, name: string, patch: Record<string, unknown>): Promise<void>;
}

export class ClaimError extends Error {
  override readonly name = 'ClaimError';
}

/** The object `fn` reads, or undefined when the API server answers 404. */
export async function getOrUndefined(fn: () => Promise<KubeObject>): Promise<KubeObject | undefined> {
  try {
    return await fn();
  } catch (e) {
    if (isApiError(e) && e.status.code === 404) return undefined;
    throw e;
  }
}

/** Claims and volumes through the node agent's API client. */
export function apiClaimReader(client: RestClient, signal?: AbortSignal): ClaimReader {
  const opts = signal ? { signal } : {};
  return {
    claim: (namespace, name) => getOrUndefined(() => client.get({ group: '', version: 'v1', resource: 'persistentvolumeclaims', namespace }, name, opts)),
    volume: (name) => getOrUndefined(() => client.get({ group: '', version: 'v1', resource: 'persistentvolumes' }, name, opts)),
    patchClaimStatus: async (namespace, name, patch) => {
      await client.patch({ group: '', version: 'v1', resource: 'persistentvolumeclaims', namespace }, name, 'merge', patch, { subresource: 'status', ...opts });
    },
  };
}

export interface BoundVolume {
  readonly claim: KubeObject;
  readonly volume: KubeObject;
  readonly spec: Dict;
  /** The claim source's or the volume source's readOnly. */
  readonly readOnly: boolean;
}

const isDict = (v: unknown): v is Dict => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The volume bound to the pod's claim; throws ClaimError (with kubelet's wording) while it is not usable yet. */
export async function resolveClaim(pod: Pod, source: Dict, reader: ClaimReader | undefined): Promise<BoundVolume> {
  const ns = pod.metadata?.namespace ?? 'default';
  const name = String(source.claimName ?? '');
  if (!reader) throw new ClaimError(`error processing PVC ${ns}/${name}: no API server to read it from`);
  const claim = await reader.claim(ns, name);
  if (!claim) throw new ClaimError(`error processing PVC ${ns}/${name}: persistentvolumeclaim "${name}" not found`);
  if (claim.metadata?.deletionTimestamp) throw new ClaimError(`error processing PVC ${ns}/${name}: PVC is being deleted`);
  const cspec = (claim.spec ?? {}) as Dict;
  const phase = (claim.status as Dict | undefined)?.phase;
  const volumeName = typeof cspec.volumeName === 'string' ? cspec.volumeName : '';
  if (phase !== 'Bound' || !volumeName) throw new ClaimError(`error processing PVC ${ns}/${name}: PVC is not bound`);
  const volume = await reader.volume(volumeName);
  if (!volume) throw new ClaimError(`error processing PVC ${ns}/${name}: persistentvolume "${volumeName}" not found`);
  const spec = (volume.spec ?? {}) as Dict;
  const ref = isDict(spec.claimRef) ? spec.claimRef : undefined;
  if (ref?.uid && ref.uid !== claim.metadata?.uid) throw new ClaimError(`error processing PVC ${ns}/${name}: volume ${volumeName} is bound to another claim`);
  if (spec.volumeMode === 'Block' && !isDict(spec.local)) throw new ClaimError(`volume ${volumeName}: volumeMode Block is supported for local volumes only`);
  const srcRo = (s: unknown): boolean => isDict(s) && s.readOnly === true;
  return { claim, volume, spec, readOnly: source.readOnly === true || srcRo(spec.nfs) || srcRo(spec.csi) };
}

/**
 * The host path of a bound hostPath or local volume; undefined for other sources. `local`:
 * the pod's fsGroup applies (local volumes, and the hostPath volumes of the local-path
 * provisioner, whose directories are this node's to manage: created world-writable as k3s'
 * local-path does, so that a pod running as any user can use its volume).
 */
export function localPathOf(bound: BoundVolume): { path: string; type: string; local: boolean } | undefined {
  const { spec } = bound;
  const ann = bound.volume.metadata?.annotations ?? {};
  if (isDict(spec.hostPath)) {
    const path = String(spec.hostPath.path ?? '');
    // Only a directory the provisioner named (<base>/pvc-<uid>_<ns>_<claim>) is ours to chmod and chown.
    const managed = ann['pv.kubernetes.io/provisioned-by'] === 'corectl.io/local-path' && !!ann['corectl.io/local-path-base']
      && dirname(path) === ann['corectl.io/local-path-base'] && /^pvc-[0-9a-f-]+_[^/]+$/.test(basename(path));
    return { path, type: managed ? 'LocalPath' : String(spec.hostPath.type ?? ''), local: managed };
  }
  if (isDict(spec.local)) {
    const path = String(spec.local.path ?? '');
    if (!existsSync(path)) throw new ClaimError(`MountVolume.NewMounter initialization failed for volume "${bound.volume.metadata?.name}" : path "${path}" does not exist`);
    return { path, type: '', local: true };
  }
  return undefined;
}

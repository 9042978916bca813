/**
 * Expanding a corectl.io/local-path volume (local-path.ts): its storage is a directory, so the
 * controller's part is bookkeeping, done here as an external resizer would: the volume's
 * spec.capacity becomes the claim's request, the claim's status.allocatedResources records it,
 * and the claim gets the FileSystemResizePending condition; the node agent of a pod using the
 * claim finishes the "file system" resize (nothing to grow for a directory) and sets the
 * claim's status.capacity, removing the condition (volumes/expansion.ts).
 */
import type { KubeObject } from '../../../../api/resources/types.js';
import type { RestClient } from '../../deps.js';
import { claimsIn, VOLUMES } from './binder-core.js';
import { claimSpec, claimStatus, nameOf, requestedBytes, volumeBytes, volumeSpec } from './volume-helpers.js';
import { LOCAL_PATH_PROVISIONER } from './local-path.js';

export const FS_RESIZE_PENDING = 'FileSystemResizePending';
const PENDING_MESSAGE = 'Waiting for user to (re-)start a pod to finish file system resize of volume on node.';

export function isLocalPathVolume(volume: KubeObject): boolean {
  return volume.metadata?.annotations?.['pv.kubernetes.io/provisioned-by'] === LOCAL_PATH_PROVISIONER;
}

/** Grows the volume to the claim's request and leaves the rest to the node; true when it wrote something. */
export async function expandLocalPath(client: RestClient, claim: KubeObject, volume: KubeObject): Promise<boolean> {
  const want = claimSpec(claim).resources?.requests?.storage;
  if (!want) return false;
  let wrote = false;
  if (volumeBytes(volume) < requestedBytes(claim)) {
    await client.patch(VOLUMES, nameOf(volume), 'merge', { spec: { capacity: { ...(volumeSpec(volume).capacity ?? {}), storage: want } } });
    wrote = true;
  }
  const st = claimStatus(claim) as { conditions?: Array<{ type?: string }>; allocatedResources?: Record<string, string> };
  if (st.allocatedResources?.storage !== want || !(st.conditions ?? []).some((c) => c.type === FS_RESIZE_PENDING)) {
    const others = (st.conditions ?? []).filter((c) => c.type !== FS_RESIZE_PENDING && c.type !== 'Resizing');
    await client.patch(claimsIn(claim.metadata?.namespace ?? ''), nameOf(claim), 'merge', {
      status: {
        allocatedResources: { ...(st.allocatedResources ?? {}), storage: want },
        conditions: [...others, { type: FS_RESIZE_PENDING, status: 'True', lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'), message: PENDING_MESSAGE }],
      },
    }, { subresource: 'status' });
    wrote = true;
  }
  return wrote;
}

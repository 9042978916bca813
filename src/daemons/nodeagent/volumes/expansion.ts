/**
 * The node's part of a volume expansion (Kubernetes' NodeExpandVolume step): a claim of one of
 * the pod's volumes with the FileSystemResizePending condition has a volume that already grew
 * (the external resizer's or persistentvolume-expander's work); the node grows what is mounted
 * — NodeExpandVolume for a CSI driver with EXPAND_VOLUME, nothing for a directory (hostPath,
 * local) — then sets the claim's status.capacity to the volume's and drops the condition.
 * Runs on the pod worker's volume refresh, so a running pod finishes it within a sync period.
 */
import { parseQuantity } from '../../../util/quantity.js';
import type { Dict, Pod } from '../pod-types.js';
import type { VolumeContext } from './volumes.js';

export const FS_RESIZE_PENDING = 'FileSystemResizePending';

const isDict = (v: unknown): v is Dict => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Finishes the pending expansions of the pod's claims; returns the claims finished. */
export async function finishExpansions(pod: Pod, paths: ReadonlyMap<string, string>, ctx: VolumeContext): Promise<string[]> {
  const reader = ctx.claims;
  if (!reader?.patchClaimStatus) return [];
  const ns = pod.metadata?.namespace ?? 'default';
  const done: string[] = [];
  for (const v of pod.spec?.volumes ?? []) {
    if (!isDict(v.persistentVolumeClaim)) continue;
    const name = String(v.persistentVolumeClaim.claimName ?? '');
    const claim = await reader.claim(ns, name);
    const status = (claim?.status ?? {}) as { conditions?: Array<{ type?: string; status?: string }>; capacity?: Record<string, string> };
    if (!claim || !(status.conditions ?? []).some((c) => c.type === FS_RESIZE_PENDING && c.status === 'True')) continue;
    const volume = await reader.volume(String((claim.spec as Dict | undefined)?.volumeName ?? ''));
    const size = ((volume?.spec as Dict | undefined)?.capacity as Record<string, string> | undefined)?.storage;
    if (!volume || !size) continue;
    const target = paths.get(v.name);
    if (isDict((volume.spec as Dict).csi) && ctx.csi && target) await ctx.csi.expand(volume, target, parseQuantity(size));
    await reader.patchClaimStatus(ns, name, {
      status: { capacity: { ...(status.capacity ?? {}), storage: size }, conditions: (status.conditions ?? []).filter((c) => c.type !== FS_RESIZE_PENDING) },
    });
    ctx.log.info({ claim: `${ns}/${name}`, capacity: size }, 'volume expansion finished on the node');
    done.push(name);
  }
  return done;
}

/**
 * Which volume an unbound claim gets (Kubernetes' findBestMatchForClaim and FindMatchingVolume).
 *
 * Volumes are grouped by their set of access modes; the groups offering every mode the claim
 * asks for are searched in order of fewest modes, so a ReadWriteOnce claim takes a
 * ReadWriteOnce-only volume before a ReadWriteOnce+ReadWriteMany one even when the latter is
 * smaller. Within a group: a volume pre-bound to the claim (spec.claimRef naming it) wins
 * outright if it is large enough, of the right volume mode and attributes class, and not being
 * deleted; otherwise the smallest Available volume, not claimed, of the claim's class, matching
 * its selector, that is large enough. With delayed binding (WaitForFirstConsumer) only
 * pre-bound volumes are taken: the scheduler binds the others once it picked a node.
 * Node affinity is not looked at here (the scheduler's concern).
 */
import { labelSelectorFromObject } from '../../../../api/meta/label-selector.js';
import type { KubeObject } from '../../../../api/resources/types.js';
import {
  claimClass, claimSpec, isVolumeBoundToClaim, requestedBytes, volumeAttributesClassOf, volumeBytes,
  volumeClass, volumeModeMismatch, volumeSpec, volumeStatus,
} from './volume-helpers.js';

/** Kubernetes' canonical order of access modes (GetAccessModesAsString). */
const MODE_ORDER = ['ReadWriteOnce', 'ReadOnlyMany', 'ReadWriteMany', 'ReadWriteOncePod'];

function modesKey(modes: readonly string[] | undefined): string {
  const set = new Set(modes ?? []);
  return MODE_ORDER.filter((m) => set.has(m)).join(',');
}

/** Volumes grouped by access-mode set, the groups able to serve `requested`, fewest modes first. */
function candidateGroups(volumes: readonly KubeObject[], requested: readonly string[]): KubeObject[][] {
  const groups = new Map<string, KubeObject[]>();
  for (const v of volumes) {
    const key = modesKey(volumeSpec(v).accessModes);
    const g = groups.get(key);
    if (g) g.push(v); else groups.set(key, [v]);
  }
  return [...groups.entries()]
    .map(([key, vols]) => ({ modes: key ? key.split(',') : [], vols }))
    .filter((g) => requested.every((m) => g.modes.includes(m)))
    .sort((a, b) => a.modes.length - b.modes.length)
    .map((g) => g.vols);
}

function matchInGroup(claim: KubeObject, volumes: readonly KubeObject[], delayBinding: boolean): KubeObject | undefined {
  const requested = requestedBytes(claim);
  const cls = claimClass(claim);
  const vac = volumeAttributesClassOf(claim);
  const sel = claimSpec(claim).selector;
  // Throws (a 400 ApiError) on a selector validation should have refused.
  const selector = sel ? labelSelectorFromObject(sel) : undefined;
  let smallest: KubeObject | undefined;
  for (const v of volumes) {
    if (volumeSpec(v).claimRef && !isVolumeBoundToClaim(v, claim)) continue;
    const size = volumeBytes(v);
    if (size < requested) continue;
    if (volumeModeMismatch(claim, v)) continue;
    if (volumeAttributesClassOf(v) !== vac) continue;
    if (v.metadata?.deletionTimestamp) continue;
    if (isVolumeBoundToClaim(v, claim)) return v;
    if (delayBinding) continue;
    // Volumes not yet Available would most likely fail the binding writes on conflicts.
    if (volumeStatus(v).phase !== 'Available') continue;
    if (selector && !selector.matches(v.metadata?.labels)) continue;
    if (volumeClass(v) !== cls) continue;
    if (!smallest || volumeBytes(smallest) > size) smallest = v;
  }
  return smallest;
}

export function findBestMatchForClaim(claim: KubeObject, volumes: readonly KubeObject[], delayBinding: boolean): KubeObject | undefined {
  for (const group of candidateGroups(volumes, claimSpec(claim).accessModes ?? [])) {
    const v = matchInGroup(claim, group, delayBinding);
    if (v) return v;
  }
  return undefined;
}

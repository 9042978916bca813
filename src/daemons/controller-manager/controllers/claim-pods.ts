/**
 * Kubernetes' ClaimPods, shared by the workload controllers: which pods an owner controls.
 * Its own pods that still match stay; matching orphans are adopted; its pods that stopped
 * matching are released.
 *
 * Contract: an owner being deleted neither adopts nor releases; pods being deleted are never
 * adopted; `canAdopt` (a fresh read of the owner) is asked at most once per claim and only when
 * there is an orphan to adopt. Pods controlled by another owner are left alone.
 */
import { labelSelectorObjectMatcher, type LabelSelectorObject, type Labels } from '../../../api/meta/label-selector.js';
import type { KubeObject } from '../../../api/resources/types.js';
import { controllerRefOf } from './controller-utils.js';

/** How a controller writes ownership: `adopt` returns the adopted pod, or undefined when it could not. */
export interface PodClaimOps {
  adopt(pod: KubeObject): Promise<KubeObject | undefined>;
  release(pod: KubeObject): Promise<void>;
}

/**
 * A label selector as a matcher; undefined (matching nothing) when it is missing or empty,
 * so that a workload never claims every pod of its namespace.
 */
export function nonEmptySelectorMatcher(sel: LabelSelectorObject | undefined): ((labels: Labels) => boolean) | undefined {
  if (!sel || (Object.keys(sel.matchLabels ?? {}).length === 0 && !sel.matchExpressions?.length)) return undefined;
  return labelSelectorObjectMatcher(sel);
}

/**
 * The pods `owner` controls among `candidates` after claiming. `matches` says whether a pod
 * belongs to the owner (its selector, plus any rule of the controller's own).
 */
export async function claimPods(owner: KubeObject, candidates: readonly KubeObject[], matches: (pod: KubeObject) => boolean,
  ops: PodClaimOps, canAdopt: () => Promise<boolean>): Promise<KubeObject[]> {
  const uid = owner.metadata?.uid;
  const deleting = Boolean(owner.metadata?.deletionTimestamp);
  const out: KubeObject[] = [];
  let adoptable: boolean | undefined;
  for (const pod of candidates) {
    const ref = controllerRefOf(pod);
    const match = matches(pod);
    if (ref) {
      if (ref.uid !== uid) continue;
      if (match) out.push(pod);
      else if (!deleting) await ops.release(pod);
      continue;
    }
    if (!match || deleting || pod.metadata?.deletionTimestamp) continue;
    adoptable ??= await canAdopt();
    if (!adoptable) continue;
    const adopted = await ops.adopt(pod);
    if (adopted) out.push(adopted);
  }
  return out;
}

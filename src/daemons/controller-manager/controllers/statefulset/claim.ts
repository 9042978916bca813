/**
 * Which pods a StatefulSet controls (Kubernetes' ClaimPods with the set's extra rule): its
 * own pods that still match its selector, plus matching orphans named like its pods
 * (`<set>-<ordinal>`), which it adopts; its pods that stopped matching are released.
 *
 * Contract: a set being deleted neither adopts nor releases; pods being deleted are never
 * adopted; `canAdopt` (a fresh read of the set) is asked at most once per claim and only
 * when there is an orphan to adopt.
 */
import { labelSelectorObjectMatcher, type LabelSelectorObject, type Labels } from '../../../../api/meta/label-selector.js';
import type { KubeObject } from '../../../../api/resources/types.js';
import { controllerRefOf } from '../controller-utils.js';
import { isMemberOf, setSpec } from './identity.js';
import type { StatefulPodControl } from './pod-control.js';

/** The set's selector as a matcher; undefined (matching nothing) when missing or empty. */
export function setSelector(set: KubeObject): ((labels: Labels) => boolean) | undefined {
  const sel = setSpec(set).selector as LabelSelectorObject | undefined;
  if (!sel || (Object.keys(sel.matchLabels ?? {}).length === 0 && !sel.matchExpressions?.length)) return undefined;
  return labelSelectorObjectMatcher(sel);
}

export async function claimPods(set: KubeObject, candidates: readonly KubeObject[], control: StatefulPodControl, canAdopt: () => Promise<boolean>): Promise<KubeObject[]> {
  const match = setSelector(set);
  const uid = set.metadata?.uid;
  const deleting = Boolean(set.metadata?.deletionTimestamp);
  const out: KubeObject[] = [];
  let adoptable: boolean | undefined;
  for (const pod of candidates) {
    const ref = controllerRefOf(pod);
    const matches = (match?.(pod.metadata?.labels) ?? false) && isMemberOf(set, pod);
    if (ref) {
      if (ref.uid !== uid) continue;
      if (matches) out.push(pod);
      else if (!deleting) await control.release(set, pod);
      continue;
    }
    if (!matches || deleting || pod.metadata?.deletionTimestamp) continue;
    adoptable ??= await canAdopt();
    if (!adoptable) continue;
    const adopted = await control.adopt(set, pod);
    if (adopted) out.push(adopted);
  }
  return out;
}

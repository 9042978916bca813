/**
 * Which pods a StatefulSet controls: the shared claim (claim-pods.ts) with the set's extra
 * rule that a pod must also be named like its pods (`<set>-<ordinal>`) to match.
 */
import type { LabelSelectorObject, Labels } from '../../../../api/meta/label-selector.js';
import type { KubeObject } from '../../../../api/resources/types.js';
import { claimPods, nonEmptySelectorMatcher } from '../claim-pods.js';
import { isMemberOf, setSpec } from './identity.js';
import type { StatefulPodControl } from './pod-control.js';

/** The set's selector as a matcher; undefined (matching nothing) when missing or empty. */
export function setSelector(set: KubeObject): ((labels: Labels) => boolean) | undefined {
  return nonEmptySelectorMatcher(setSpec(set).selector as LabelSelectorObject | undefined);
}

export function claimSetPods(set: KubeObject, candidates: readonly KubeObject[], control: StatefulPodControl, canAdopt: () => Promise<boolean>): Promise<KubeObject[]> {
  const match = setSelector(set);
  return claimPods(set, candidates, (pod) => (match?.(pod.metadata?.labels) ?? false) && isMemberOf(set, pod),
    { adopt: (pod) => control.adopt(set, pod), release: (pod) => control.release(set, pod) }, canAdopt);
}

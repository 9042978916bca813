/**
 * Which pods a Job controls: the shared claim (claim-pods.ts) with the Job's selector and its
 * pod control's adopt and release.
 */
import type { LabelSelectorObject, Labels } from '../../../../api/meta/label-selector.js';
import type { KubeObject } from '../../../../api/resources/types.js';
import { claimPods, nonEmptySelectorMatcher } from '../claim-pods.js';
import { jobSpec } from './job-spec.js';
import type { JobPodControl } from './pod-control.js';

/** The Job's selector as a matcher; undefined (matching nothing) when it is missing or empty. */
export function jobSelector(job: KubeObject): ((labels: Labels) => boolean) | undefined {
  return nonEmptySelectorMatcher(jobSpec(job).selector as LabelSelectorObject | undefined);
}

export function claimJobPods(job: KubeObject, candidates: readonly KubeObject[], control: JobPodControl, canAdopt: () => Promise<boolean>): Promise<KubeObject[]> {
  const match = jobSelector(job);
  return claimPods(job, candidates, (pod) => match?.(pod.metadata?.labels) ?? false,
    { adopt: (pod) => control.adopt(job, pod), release: (pod) => control.release(job, pod) }, canAdopt);
}

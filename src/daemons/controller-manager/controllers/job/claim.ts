/**
 * Which pods a Job controls (Kubernetes' ClaimPods): its own pods that still match its
 * selector, plus matching orphans it adopts; its pods that stopped matching are released.
 *
 * Contract: a Job being deleted neither adopts nor releases; pods being deleted are never
 * adopted; `canAdopt` (a fresh read of the Job) is asked at most once per claim and only when
 * there is an orphan to adopt.
 */
import { labelSelectorObjectMatcher, type LabelSelectorObject, type Labels } from '../../../../api/meta/label-selector.js';
import type { KubeObject } from '../../../../api/resources/types.js';
import { controllerRefOf } from '../controller-utils.js';
import { jobSpec } from './job-spec.js';
import type { JobPodControl } from './pod-control.js';

/** The Job's selector as a matcher; undefined (matching nothing) when it is missing or empty. */
export function jobSelector(job: KubeObject): ((labels: Labels) => boolean) | undefined {
  const sel = jobSpec(job).selector as LabelSelectorObject | undefined;
  if (!sel || (Object.keys(sel.matchLabels ?? {}).length === 0 && !sel.matchExpressions?.length)) return undefined;
  return labelSelectorObjectMatcher(sel);
}

export async function claimPods(job: KubeObject, candidates: readonly KubeObject[], control: JobPodControl, canAdopt: () => Promise<boolean>): Promise<KubeObject[]> {
  const match = jobSelector(job);
  const uid = job.metadata?.uid;
  const deleting = Boolean(job.metadata?.deletionTimestamp);
  const out: KubeObject[] = [];
  let adoptable: boolean | undefined;
  for (const pod of candidates) {
    const ref = controllerRefOf(pod);
    const matches = match?.(pod.metadata?.labels) ?? false;
    if (ref) {
      if (ref.uid !== uid) continue;
      if (matches) out.push(pod);
      else if (!deleting) await control.release(job, pod);
      continue;
    }
    if (!matches || deleting || pod.metadata?.deletionTimestamp) continue;
    adoptable ??= await canAdopt();
    if (!adoptable) continue;
    const adopted = await control.adopt(job, pod);
    if (adopted) out.push(adopted);
  }
  return out;
}

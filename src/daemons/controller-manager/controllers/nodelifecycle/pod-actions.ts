/**
 * What the node lifecycle controller does to the pods of a failed node: mark them not ready
 * (Kubernetes' MarkPodsNotReady) and, in the legacy eviction mode, delete them (DeletePods).
 *
 * Contract: writes go through pods/status (an update carrying the cached resourceVersion, so a
 * pod changed meanwhile is retried later rather than overwritten) and plain deletes; a pod
 * already gone is no error; the others are collected and thrown together after every pod was
 * tried.
 */
import { labelSelectorFromObject, type LabelSelectorObject } from '../../../../api/meta/label-selector.js';
import { isApiError } from '../../../../api/meta/status.js';
import type { KubeObject } from '../../../../api/resources/types.js';
import type { ResourceRef, RestClient } from '../../deps.js';
import type { EventRecorder } from '../../events.js';
import { metaTime } from '../../../../api/meta/time.js';

export const PODS: ResourceRef = { group: '', version: 'v1', resource: 'pods' };
/** The pod status reason set on pods of an unresponsive node before they are deleted. */
export const NODE_LOST_REASON = 'NodeLost';

type Dict = Record<string, unknown>;
interface PodCondition { type: string; status: string; lastTransitionTime?: string; [k: string]: unknown }

export function nodeNameOf(pod: KubeObject): string { return String(((pod.spec ?? {}) as Dict).nodeName ?? ''); }

/** What an Event about the object names (cached objects may lack kind and apiVersion). */
export function eventRef(obj: KubeObject, kind: 'Node' | 'Pod'): KubeObject {
  const m = obj.metadata ?? {};
  return { apiVersion: 'v1', kind, metadata: { name: m.name ?? '', uid: m.uid ?? '', ...(m.namespace ? { namespace: m.namespace } : {}) } };
}

/** Kubernetes' RecordNodeEvent. */
export function recordNodeEvent(events: EventRecorder, node: KubeObject, type: 'Normal' | 'Warning', reason: string, what: string): void {
  events.event(eventRef(node, 'Node'), type, reason, `Node ${node.metadata?.name ?? ''} event: ${what}`);
}

class AggregateFailure extends Error {
  constructor(readonly errors: readonly unknown[]) { super(errors.map((e) => (e as Error).message).join('; ')); }
}

async function updateStatus(client: RestClient, pod: KubeObject, status: Dict): Promise<boolean> {
  try {
    await client.update({ ...PODS, namespace: pod.metadata?.namespace ?? '' }, { ...pod, status }, { subresource: 'status' });
    return true;
  } catch (e) {
    if (isApiError(e) && e.code === 404) return false;
    throw e;
  }
}

/** Sets the Ready condition of the node's pods to False (those that have one that is not False). */
export async function markPodsNotReady(client: RestClient, events: EventRecorder, pods: readonly KubeObject[], nodeName: string, now: number): Promise<void> {
  const errors: unknown[] = [];
  for (const pod of pods) {
    if (nodeNameOf(pod) !== nodeName) continue;
    const status = (pod.status ?? {}) as Dict;
    const conditions = (status.conditions ?? []) as PodCondition[];
    const i = conditions.findIndex((c) => c.type === 'Ready');
    const ready = conditions[i];
    if (!ready || ready.status === 'False') continue;
    const next = [...conditions];
    next[i] = { ...ready, status: 'False', lastTransitionTime: metaTime(now) };
    try {
      if (await updateStatus(client, pod, { ...status, conditions: next })) events.event(eventRef(pod, 'Pod'), 'Warning', 'NodeNotReady', 'Node is not ready');
    } catch (e) {
      errors.push(e);
    }
  }
  if (errors.length) throw new AggregateFailure(errors);
}

/** Whether a DaemonSet of the pod's namespace selects it (such pods are never evicted). */
export function isDaemonSetPod(pod: KubeObject, daemonSets: readonly KubeObject[]): boolean {
  return daemonSets.some((ds) => {
    if (ds.metadata?.namespace !== pod.metadata?.namespace) return false;
    try {
      const sel = labelSelectorFromObject(((ds.spec ?? {}) as { selector?: LabelSelectorObject }).selector);
      return sel.requirements.length > 0 && sel.matches(pod.metadata?.labels);
    } catch {
      return false;
    }
  });
}

/**
 * Deletes the pods of an unresponsive node (legacy eviction): each gets status reason NodeLost
 * first; pods being deleted already and DaemonSet pods are left. True when some pods are still
 * on their way out.
 */
export async function deletePodsOfNode(client: RestClient, events: EventRecorder, node: KubeObject, pods: readonly KubeObject[], daemonSets: readonly KubeObject[]): Promise<boolean> {
  const nodeName = node.metadata?.name ?? '';
  let remaining = false;
  const errors: unknown[] = [];
  if (pods.length > 0) recordNodeEvent(events, node, 'Normal', 'DeletingAllPods', `Deleting all Pods from Node ${nodeName}.`);
  for (const pod of pods) {
    if (nodeNameOf(pod) !== nodeName) continue;
    const name = pod.metadata?.name ?? '';
    const status = (pod.status ?? {}) as Dict;
    if (status.reason !== NODE_LOST_REASON) {
      try {
        await updateStatus(client, pod, { ...status, reason: NODE_LOST_REASON, message: `Node ${nodeName} which was running pod ${name} is unresponsive` });
      } catch (e) {
        if (isApiError(e) && e.code === 409) { errors.push(e); continue; }
      }
    }
    if (pod.metadata?.deletionGracePeriodSeconds !== undefined && pod.metadata.deletionGracePeriodSeconds !== null) { remaining = true; continue; }
    if (isDaemonSetPod(pod, daemonSets)) continue;
    events.event(eventRef(pod, 'Pod'), 'Normal', 'NodeControllerEviction', `Marking for deletion Pod ${name} from Node ${nodeName}`);
    try {
      await client.delete({ ...PODS, namespace: pod.metadata?.namespace ?? '' }, name);
    } catch (e) {
      if (isApiError(e) && e.code === 404) continue;
      throw e;
    }
    remaining = true;
  }
  if (errors.length) throw new AggregateFailure(errors);
  return remaining;
}

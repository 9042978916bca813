/**
 * A StatefulSet pod's stable identity: its name `<set>-<ordinal>`, its labels, its DNS
 * hostname/subdomain and its claims `<claim template>-<set>-<ordinal>`. Pure functions on
 * plain objects (no API calls).
 *
 * Contract: a pod belongs to a set's identity space iff its name is `<set name>-<ordinal>`;
 * ordinals in [start, start + replicas) are wanted, all others are condemned.
 */
import type { KubeObject } from '../../../../api/resources/types.js';
import { isPodReady, newControllerRef, podFromTemplate, podPhase, readyCondition } from '../controller-utils.js';

export type Dict = Record<string, unknown>;

export const REVISION_LABEL = 'controller-revision-hash';
export const POD_NAME_LABEL = 'statefulset.kubernetes.io/pod-name';
export const POD_INDEX_LABEL = 'apps.kubernetes.io/pod-index';

export function setSpec(set: KubeObject): Dict { return (set.spec ?? {}) as Dict; }
export function setStatus(set: KubeObject): Dict { return (set.status ?? {}) as Dict; }

/** spec.replicas (default 1). */
export function replicasOf(set: KubeObject): number {
  const r = setSpec(set).replicas;
  return typeof r === 'number' ? r : 1;
}

/** spec.ordinals.start (default 0). */
export function ordinalStart(set: KubeObject): number {
  const s = ((setSpec(set).ordinals ?? {}) as Dict).start;
  return typeof s === 'number' && s > 0 ? s : 0;
}

export function minReadySecondsOf(set: KubeObject): number {
  const m = setSpec(set).minReadySeconds;
  return typeof m === 'number' && m > 0 ? m : 0;
}

export function isParallel(set: KubeObject): boolean { return setSpec(set).podManagementPolicy === 'Parallel'; }

export function updateStrategyType(set: KubeObject): string {
  return String(((setSpec(set).updateStrategy ?? {}) as Dict).type ?? 'RollingUpdate');
}

/** rollingUpdate.partition (0 when unset). */
export function partitionOf(set: KubeObject): number {
  const ru = (((setSpec(set).updateStrategy ?? {}) as Dict).rollingUpdate ?? {}) as Dict;
  return typeof ru.partition === 'number' && ru.partition > 0 ? ru.partition : 0;
}

export function podName(set: KubeObject, ordinal: number): string { return `${set.metadata?.name ?? ''}-${ordinal}`; }

/** The ordinal in a pod's name, or -1 when the name carries none. */
export function ordinalOf(pod: KubeObject): number {
  const m = /^(.*)-(\d+)$/.exec(pod.metadata?.name ?? '');
  return m ? Number(m[2]) : -1;
}

/** Named like a pod of this set. */
export function isMemberOf(set: KubeObject, pod: KubeObject): boolean {
  const m = /^(.*)-(\d+)$/.exec(pod.metadata?.name ?? '');
  return !!m && m[1] === set.metadata?.name;
}

export function claimTemplates(set: KubeObject): KubeObject[] {
  return (setSpec(set).volumeClaimTemplates ?? []) as KubeObject[];
}

export function claimName(template: KubeObject, set: KubeObject, ordinal: number): string {
  return `${template.metadata?.name ?? ''}-${set.metadata?.name ?? ''}-${ordinal}`;
}

/** The claims the pod of `ordinal` uses, one per claim template (not yet created). */
export function claimsFor(set: KubeObject, ordinal: number): KubeObject[] {
  const selectorLabels = (((setSpec(set).selector ?? {}) as Dict).matchLabels ?? {}) as Record<string, string>;
  return claimTemplates(set).map((t) => {
    const meta = (t.metadata ?? {}) as Dict;
    const labels = { ...((meta.labels ?? {}) as Record<string, string>), ...selectorLabels };
    const metadata: Dict = { name: claimName(t, set, ordinal), namespace: set.metadata?.namespace ?? '' };
    if (Object.keys(labels).length) metadata.labels = labels;
    if (meta.annotations) metadata.annotations = { ...(meta.annotations as Dict) };
    return { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata, spec: structuredClone(t.spec ?? {}) } as KubeObject;
  });
}

/** Labels and DNS identity of the pod of `ordinal` (applied over the template). */
export function setIdentity(set: KubeObject, pod: KubeObject, ordinal: number): void {
  const name = podName(set, ordinal);
  const meta = pod.metadata ?? (pod.metadata = {});
  meta.name = name;
  meta.labels = { ...(meta.labels ?? {}), [POD_NAME_LABEL]: name, [POD_INDEX_LABEL]: String(ordinal) };
  const spec = (pod.spec ?? (pod.spec = {})) as Dict;
  spec.hostname = name;
  const svc = setSpec(set).serviceName;
  if (typeof svc === 'string' && svc) spec.subdomain = svc;
}

/** Points the pod's volumes named like claim templates at its claims (adding missing ones). */
export function setStorage(set: KubeObject, pod: KubeObject, ordinal: number): void {
  const templates = claimTemplates(set);
  if (!templates.length) return;
  const spec = (pod.spec ?? (pod.spec = {})) as Dict;
  const byName = new Map(templates.map((t) => [t.metadata?.name ?? '', t]));
  const volumes = ((spec.volumes ?? []) as Dict[]).filter((v) => !byName.has(String(v.name)));
  for (const t of templates) {
    volumes.push({ name: t.metadata?.name ?? '', persistentVolumeClaim: { claimName: claimName(t, set, ordinal) } });
  }
  spec.volumes = volumes;
}

/** The pod of `ordinal` built from `template` (the template of revision `revisionName`). */
export function newSetPod(set: KubeObject, template: Dict, ordinal: number, revisionName: string): KubeObject {
  const ref = newControllerRef(set, 'apps/v1', 'StatefulSet');
  const pod = podFromTemplate(template, set.metadata?.namespace ?? '', '', ref);
  delete pod.metadata?.generateName;
  setIdentity(set, pod, ordinal);
  setStorage(set, pod, ordinal);
  pod.metadata!.labels = { ...(pod.metadata!.labels ?? {}), [REVISION_LABEL]: revisionName };
  return pod;
}

export function podRevision(pod: KubeObject): string { return pod.metadata?.labels?.[REVISION_LABEL] ?? ''; }

export function isTerminating(pod: KubeObject): boolean { return Boolean(pod.metadata?.deletionTimestamp); }
export function isFinished(pod: KubeObject): boolean { const p = podPhase(pod); return p === 'Failed' || p === 'Succeeded'; }
export function isRunningAndReady(pod: KubeObject): boolean { return podPhase(pod) === 'Running' && isPodReady(pod); }

/** Ready for minReadySeconds; `waitMs` says how long until it will be. */
export function availability(pod: KubeObject, minReadySeconds: number, now: number): { available: boolean; waitMs: number } {
  if (!isRunningAndReady(pod)) return { available: false, waitMs: 0 };
  if (minReadySeconds <= 0) return { available: true, waitMs: 0 };
  const since = Date.parse(readyCondition(pod)?.lastTransitionTime ?? '');
  if (Number.isNaN(since)) return { available: false, waitMs: minReadySeconds * 1000 };
  const left = since + minReadySeconds * 1000 - now;
  return left <= 0 ? { available: true, waitMs: 0 } : { available: false, waitMs: left };
}

/** Healthy enough to move on from: running, ready and available, not being deleted. */
export function isHealthy(pod: KubeObject, minReadySeconds: number, now: number): boolean {
  return !isTerminating(pod) && availability(pod, minReadySeconds, now).available;
}

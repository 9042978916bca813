/**
 * Whether a DaemonSet's pod belongs on a node, and the node-specific parts of the pods it
 * creates (tolerations every daemon pod carries, the affinity pinning it to one node).
 *
 * A node is judged against the pod template as the created pod will look: the template's
 * nodeName (when set), nodeSelector and required node affinity must match; every NoSchedule
 * and NoExecute taint must be tolerated, counting the automatic daemon tolerations.
 * `shouldRun` says a pod should be created there; `shouldContinueRunning` says an existing pod
 * may stay (NoSchedule taints do not evict, so only NoExecute ones count for it).
 *
 * The matching itself (selectors, terms, tolerations) is the scheduler's, shared through
 * src/api/resources/core/node-placement.ts.
 *
 * Contract: pure functions of their arguments; cached objects are never modified.
 */
import {
  NODE_NAME_FIELD, nodeSelectorMatches, termMatches, tolerated, type NodeSelectorTerm, type Taint, type Toleration,
} from '../../../../api/resources/core/node-placement.js';
import type { KubeObject } from '../../../../api/resources/types.js';

type Dict = Record<string, unknown>;


/** Tolerations Kubernetes adds to every daemon pod (network-unavailable only with hostNetwork). */
export function daemonTolerations(hostNetwork: boolean): Toleration[] {
  const t: Toleration[] = [
    { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute' },
    { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute' },
    { key: 'node.kubernetes.io/disk-pressure', operator: 'Exists', effect: 'NoSchedule' },
    { key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' },
    { key: 'node.kubernetes.io/pid-pressure', operator: 'Exists', effect: 'NoSchedule' },
    { key: 'node.kubernetes.io/unschedulable', operator: 'Exists', effect: 'NoSchedule' },
  ];
  if (hostNetwork) t.push({ key: 'node.kubernetes.io/network-unavailable', operator: 'Exists', effect: 'NoSchedule' });
  return t;
}

/** The template's tolerations plus the daemon ones it lacks (same key and effect counts as present). */
export function withDaemonTolerations(podSpec: Dict): Toleration[] {
  const own = (Array.isArray(podSpec.tolerations) ? podSpec.tolerations : []) as Toleration[];
  const out = [...own];
  for (const d of daemonTolerations(podSpec.hostNetwork === true)) {
    if (!own.some((t) => t.key === d.key && t.effect === d.effect)) out.push(d);
  }
  return out;
}

/** nodeName, nodeSelector and required node affinity of a pod spec against a node. */
export function placementMatches(podSpec: Dict, node: KubeObject): boolean {
  if (typeof podSpec.nodeName === 'string' && podSpec.nodeName && podSpec.nodeName !== node.metadata?.name) return false;
  if (!nodeSelectorMatches(podSpec.nodeSelector as Record<string, string> | undefined, node)) return false;
  const required = (((podSpec.affinity as Dict | undefined)?.nodeAffinity as Dict | undefined)?.requiredDuringSchedulingIgnoredDuringExecution) as { nodeSelectorTerms?: NodeSelectorTerm[] } | undefined;
  if (required && !(required.nodeSelectorTerms ?? []).some((t) => termMatches(t, node))) return false;
  return true;
}

export interface NodeVerdict { shouldRun: boolean; shouldContinueRunning: boolean }

export function judgeNode(template: Dict, node: KubeObject): NodeVerdict {
  const podSpec = (template.spec ?? {}) as Dict;
  if (!placementMatches(podSpec, node)) return { shouldRun: false, shouldContinueRunning: false };
  const tolerations = withDaemonTolerations(podSpec);
  const taints = (((node.spec ?? {}) as Dict).taints ?? []) as Taint[];
  let shouldRun = true; let shouldContinueRunning = true;
  for (const taint of taints) {
    if (taint.effect !== 'NoSchedule' && taint.effect !== 'NoExecute') continue;
    if (tolerated(tolerations, taint)) continue;
    shouldRun = false;
    if (taint.effect === 'NoExecute') shouldContinueRunning = false;
  }
  return { shouldRun, shouldContinueRunning };
}

/**
 * The pod's affinity with its required node terms replaced by one term pinning it to `node`
 * (the node already matched the template's terms; the scheduler then binds it there).
 */
export function pinnedAffinity(affinity: Dict | undefined, node: string): Dict {
  const out = structuredClone(affinity ?? {});
  const na = (out.nodeAffinity ?? {}) as Dict;
  na.requiredDuringSchedulingIgnoredDuringExecution = {
    nodeSelectorTerms: [{ matchFields: [{ key: NODE_NAME_FIELD, operator: 'In', values: [node] }] }],
  };
  out.nodeAffinity = na;
  return out;
}

/** The node a daemon pod is meant for: its nodeName, else the single name its affinity pins. */
export function targetNode(pod: KubeObject): string | undefined {
  const spec = (pod.spec ?? {}) as Dict;
  if (typeof spec.nodeName === 'string' && spec.nodeName) return spec.nodeName;
  const required = (((spec.affinity as Dict | undefined)?.nodeAffinity as Dict | undefined)?.requiredDuringSchedulingIgnoredDuringExecution) as { nodeSelectorTerms?: NodeSelectorTerm[] } | undefined;
  for (const term of required?.nodeSelectorTerms ?? []) {
    for (const f of term.matchFields ?? []) {
      if (f.key === NODE_NAME_FIELD && f.operator === 'In' && f.values?.length === 1) return f.values[0];
    }
  }
  return undefined;
}

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
 * Contract: pure functions of their arguments; cached objects are never modified.
 */
import type { KubeObject } from '../../../../api/resources/types.js';

type Dict = Record<string, unknown>;

export interface Toleration { key?: string; operator?: string; value?: string; effect?: string; tolerationSeconds?: number }
export interface Taint { key: string; value?: string; effect: string }
interface Requirement { key: string; operator: string; values?: string[] }
interface Term { matchExpressions?: Requirement[]; matchFields?: Requirement[] }

export const NAME_FIELD = 'metadata.name';

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

function tolerates(t: Toleration, taint: Taint): boolean {
  if (t.effect && t.effect !== taint.effect) return false;
  if (t.key && t.key !== taint.key) return false;
  const op = t.operator || 'Equal';
  if (op === 'Exists') return true;
  return op === 'Equal' && (t.value ?? '') === (taint.value ?? '');
}

function requirementHolds(r: Requirement, value: string | undefined): boolean {
  const values = r.values ?? [];
  switch (r.operator) {
    case 'In': return value !== undefined && values.includes(value);
    case 'NotIn': return value === undefined || !values.includes(value);
    case 'Exists': return value !== undefined;
    case 'DoesNotExist': return value === undefined;
    case 'Gt': case 'Lt': {
      const a = Number.parseInt(value ?? '', 10); const b = Number.parseInt(values[0] ?? '', 10);
      if (values.length !== 1 || Number.isNaN(a) || Number.isNaN(b)) return false;
      return r.operator === 'Gt' ? a > b : a < b;
    }
    default: return false;
  }
}

function termHolds(term: Term, node: KubeObject): boolean {
  const exprs = term.matchExpressions ?? []; const fields = term.matchFields ?? [];
  if (exprs.length === 0 && fields.length === 0) return false;
  const labels = node.metadata?.labels ?? {};
  if (!exprs.every((r) => requirementHolds(r, Object.hasOwn(labels, r.key) ? labels[r.key] : undefined))) return false;
  return fields.every((r) => r.key === NAME_FIELD && requirementHolds(r, node.metadata?.name ?? ''));
}

/** nodeName, nodeSelector and required node affinity of a pod spec against a node. */
export function placementMatches(podSpec: Dict, node: KubeObject): boolean {
  if (typeof podSpec.nodeName === 'string' && podSpec.nodeName && podSpec.nodeName !== node.metadata?.name) return false;
  const labels = node.metadata?.labels ?? {};
  for (const [k, v] of Object.entries((podSpec.nodeSelector ?? {}) as Record<string, string>)) if (labels[k] !== v) return false;
  const required = (((podSpec.affinity as Dict | undefined)?.nodeAffinity as Dict | undefined)?.requiredDuringSchedulingIgnoredDuringExecution) as { nodeSelectorTerms?: Term[] } | undefined;
  if (required && !(required.nodeSelectorTerms ?? []).some((t) => termHolds(t, node))) return false;
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
    if (tolerations.some((t) => tolerates(t, taint))) continue;
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
    nodeSelectorTerms: [{ matchFields: [{ key: NAME_FIELD, operator: 'In', values: [node] }] }],
  };
  out.nodeAffinity = na;
  return out;
}

/** The node a daemon pod is meant for: its nodeName, else the single name its affinity pins. */
export function targetNode(pod: KubeObject): string | undefined {
  const spec = (pod.spec ?? {}) as Dict;
  if (typeof spec.nodeName === 'string' && spec.nodeName) return spec.nodeName;
  const required = (((spec.affinity as Dict | undefined)?.nodeAffinity as Dict | undefined)?.requiredDuringSchedulingIgnoredDuringExecution) as { nodeSelectorTerms?: Term[] } | undefined;
  for (const term of required?.nodeSelectorTerms ?? []) {
    for (const f of term.matchFields ?? []) {
      if (f.key === NAME_FIELD && f.operator === 'In' && f.values?.length === 1) return f.values[0];
    }
  }
  return undefined;
}

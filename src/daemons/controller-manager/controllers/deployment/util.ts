/**
 * Deployment arithmetic and bookkeeping shared by the rollout strategies: annotations,
 * revisions, the pod-template hash, surge/unavailable fenceposts, replica counts and
 * conditions. Pure functions on plain objects (unit-tested without a server).
 */
import type { KubeObject } from '../../../../api/resources/types.js';
import { canonicalJson } from '../controller-utils.js';
import { metaTime } from '../../../../api/meta/time.js';

export const REVISION_ANNOTATION = 'deployment.kubernetes.io/revision';
export const REVISION_HISTORY_ANNOTATION = 'deployment.kubernetes.io/revision-history';
export const DESIRED_REPLICAS_ANNOTATION = 'deployment.kubernetes.io/desired-replicas';
export const MAX_REPLICAS_ANNOTATION = 'deployment.kubernetes.io/max-replicas';
export const ROLLBACK_TO_ANNOTATION = 'deprecated.deployment.rollback.to';
export const LAST_APPLIED_ANNOTATION = 'kubectl.kubernetes.io/last-applied-configuration';
export const POD_TEMPLATE_HASH_LABEL = 'pod-template-hash';
/** A progressDeadlineSeconds of MaxInt32 means "no deadline". */
export const MAX_INT32 = 2147483647;

/** Condition reasons, as Kubernetes spells them. */
export const REASONS = {
  newRSCreated: 'NewReplicaSetCreated',
  foundNewRS: 'FoundNewReplicaSet',
  rsUpdated: 'ReplicaSetUpdated',
  newRSAvailable: 'NewReplicaSetAvailable',
  timedOut: 'ProgressDeadlineExceeded',
  failedRSCreate: 'ReplicaSetCreateError',
  paused: 'DeploymentPaused',
  resumed: 'DeploymentResumed',
  minAvailable: 'MinimumReplicasAvailable',
  minUnavailable: 'MinimumReplicasUnavailable',
} as const;

export type Dict = Record<string, unknown>;

export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason?: string;
  message?: string;
  lastUpdateTime?: string;
  lastTransitionTime?: string;
}

export interface DeploymentStatus {
  observedGeneration?: number;
  replicas?: number;
  updatedReplicas?: number;
  readyReplicas?: number;
  availableReplicas?: number;
  unavailableReplicas?: number;
  collisionCount?: number;
  conditions?: Condition[];
}

export function specOf(o: KubeObject | undefined): Dict { return ((o?.spec ?? {}) as Dict); }
export function statusOf(o: KubeObject | undefined): Dict { return ((o?.status ?? {}) as Dict); }
const num = (v: unknown, dflt = 0): number => (typeof v === 'number' ? v : dflt);

/** spec.replicas (default 1). */
export function replicas(o: KubeObject | undefined): number { return num(specOf(o).replicas, 1); }
export function statusReplicas(o: KubeObject | undefined): number { return num(statusOf(o).replicas); }
export function availableReplicas(o: KubeObject | undefined): number { return num(statusOf(o).availableReplicas); }
export function readyReplicas(o: KubeObject | undefined): number { return num(statusOf(o).readyReplicas); }


// ------------------------------------------------------------------ surge and unavailability

export type IntOrString = number | string | undefined | null;

/**
 * An int, or a percentage of `total` rounded up (surge) or down (unavailability), as
 * Kubernetes' GetScaledValueFromIntOrPercent.
 */
export function scaledValue(v: IntOrString, total: number, roundUp: boolean): number {
  if (v === undefined || v === null) return 0;
  if (typeof v === 'number') return v;
  const m = /^(\d+)%$/.exec(v);
  if (!m) {
    if (/^\d+$/.test(v)) return Number(v);
    throw new Error(`invalid value for IntOrString: invalid type: string is not a percentage: ${JSON.stringify(v)}`);
  }
  const x = (Number(m[1]) * total) / 100;
  return roundUp ? Math.ceil(x) : Math.floor(x);
}

export function isRollingUpdate(d: KubeObject): boolean {
  const t = (specOf(d).strategy as Dict | undefined)?.type;
  return t === undefined || t === 'RollingUpdate';
}

function rollingParams(d: KubeObject): { maxSurge: IntOrString; maxUnavailable: IntOrString } {
  const ru = ((specOf(d).strategy as Dict | undefined)?.rollingUpdate ?? {}) as Dict;
  return { maxSurge: (ru.maxSurge ?? '25%') as IntOrString, maxUnavailable: (ru.maxUnavailable ?? '25%') as IntOrString };
}

/** Surge rounds up, unavailability down; both zero becomes unavailability 1 (a rollout must be able to move). */
export function resolveFenceposts(maxSurge: IntOrString, maxUnavailable: IntOrString, desired: number): { surge: number; unavailable: number } {
  const surge = scaledValue(maxSurge ?? 0, desired, true);
  let unavailable = scaledValue(maxUnavailable ?? 0, desired, false);
  if (surge === 0 && unavailable === 0) unavailable = 1;
  return { surge, unavailable };
}

export function maxSurge(d: KubeObject): number {
  if (!isRollingUpdate(d)) return 0;
  const p = rollingParams(d);
  return resolveFenceposts(p.maxSurge, p.maxUnavailable, replicas(d)).surge;
}

export function maxUnavailable(d: KubeObject): number {
  if (!isRollingUpdate(d) || replicas(d) === 0) return 0;
  const p = rollingParams(d);
  return Math.min(resolveFenceposts(p.maxSurge, p.maxUnavailable, replicas(d)).unavailable, replicas(d));
}

/** Replicas the new ReplicaSet may have now (Kubernetes' NewRSNewReplicas). */
export function newRSNewReplicas(d: KubeObject, allRSs: KubeObject[], newRS: KubeObject): number {
  if (!isRollingUpdate(d)) return replicas(d);
  const surge = scaledValue(rollingParams(d).maxSurge, replicas(d), true);
  const current = specReplicaSum(allRSs);
  const maxTotal = replicas(d) + surge;
  if (current >= maxTotal) return replicas(newRS);
  const up = Math.min(maxTotal - current, replicas(d) - replicas(newRS));
  return replicas(newRS) + up;
}

// ------------------------------------------------------------------ replica set lists

export const specReplicaSum = (rss: Array<KubeObject | undefined>): number => rss.reduce((s, r) => s + (r ? replicas(r) : 0), 0);
export const statusReplicaSum = (rss: Array<KubeObject | undefined>): number => rss.reduce((s, r) => s + (r ? statusReplicas(r) : 0), 0);
export const availableSum = (rss: Array<KubeObject | undefined>): number => rss.reduce((s, r) => s + (r ? availableReplicas(r) : 0), 0);
export const readySum = (rss: Array<KubeObject | undefined>): number => rss.reduce((s, r) => s + (r ? readyReplicas(r) : 0), 0);

export function activeReplicaSets(rss: Array<KubeObject | undefined>): KubeObject[] {
  return rss.filter((r): r is KubeObject => r !== undefined && replicas(r) > 0);
}

function created(o: KubeObject): number {
  const t = o.metadata?.creationTimestamp ? Date.parse(o.metadata.creationTimestamp) : 0;
  return Number.isNaN(t) ? 0 : t;
}

/** Oldest first; ties by name. */
export function byCreation(a: KubeObject, b: KubeObject): number {
  return created(a) - created(b) || (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? '');
}

/** Larger first; ties newer first (where to add replicas). */
export function bySizeNewer(a: KubeObject, b: KubeObject): number {
  return replicas(b) - replicas(a) || -byCreation(a, b);
}

/** Larger first; ties older first (where to remove replicas). */
export function bySizeOlder(a: KubeObject, b: KubeObject): number {
  return replicas(b) - replicas(a) || byCreation(a, b);
}

export function revisionOf(o: KubeObject | undefined): number {
  const v = o?.metadata?.annotations?.[REVISION_ANNOTATION];
  const n = v === undefined ? 0 : Number(v);
  return Number.isInteger(n) ? n : 0;
}

export function byRevision(a: KubeObject, b: KubeObject): number {
  return revisionOf(a) - revisionOf(b) || byCreation(a, b);
}

export function maxRevision(rss: KubeObject[]): number {
  return rss.reduce((m, r) => Math.max(m, revisionOf(r)), 0);
}

// ------------------------------------------------------------------ templates and hash

function withoutHashLabel(template: unknown): unknown {
  const t = structuredClone((template ?? {}) as Dict);
  const meta = (t.metadata ?? {}) as Dict;
  const labels = { ...((meta.labels ?? {}) as Record<string, string>) };
  delete labels[POD_TEMPLATE_HASH_LABEL];
  meta.labels = Object.keys(labels).length ? labels : undefined;
  delete meta.creationTimestamp;
  t.metadata = meta;
  return t;
}

/** Pod templates equal apart from the pod-template-hash label. */
export function equalIgnoreHash(a: unknown, b: unknown): boolean {
  return canonicalJson(withoutHashLabel(a)) === canonicalJson(withoutHashLabel(b));
}

const SAFE_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

/** FNV-1a (32 bit) of the template (and collision count), in Kubernetes' safe alphabet. */
export function podTemplateHash(template: unknown, collisionCount?: number): string {
  const bytes = Buffer.from(canonicalJson(withoutHashLabel(template)), 'utf8');
  let h = 0x811c9dc5;
  const feed = (b: number): void => { h ^= b; h = Math.imul(h, 0x01000193) >>> 0; };
  for (const b of bytes) feed(b);
  if (collisionCount !== undefined) {
    const c = Buffer.alloc(4);
    c.writeUInt32LE(collisionCount >>> 0);
    for (const b of c) feed(b);
  }
  return [...String(h >>> 0)].map((ch) => SAFE_ALPHABET[ch.charCodeAt(0) % SAFE_ALPHABET.length]).join('');
}

/** The new ReplicaSet of `rsList`: the oldest whose template equals the deployment's. */
export function findNewReplicaSet(d: KubeObject, rsList: KubeObject[]): KubeObject | undefined {
  return [...rsList].sort(byCreation).find((rs) => equalIgnoreHash(specOf(rs).template, specOf(d).template));
}

// ------------------------------------------------------------------ annotations

const SKIP_COPY = new Set([LAST_APPLIED_ANNOTATION, REVISION_ANNOTATION, REVISION_HISTORY_ANNOTATION, DESIRED_REPLICAS_ANNOTATION, MAX_REPLICAS_ANNOTATION, ROLLBACK_TO_ANNOTATION]);

function annotationsOf(o: KubeObject): Record<string, string> {
  const meta = (o.metadata ??= {});
  return (meta.annotations ??= {});
}

/** Copies the deployment's own annotations to the ReplicaSet; true when something changed. */
export function copyDeploymentAnnotations(d: KubeObject, rs: KubeObject): boolean {
  let changed = false;
  const target = annotationsOf(rs);
  for (const [k, v] of Object.entries(d.metadata?.annotations ?? {})) {
    if (SKIP_COPY.has(k) || target[k] === v) continue;
    target[k] = v;
    changed = true;
  }
  return changed;
}

export function setReplicasAnnotations(rs: KubeObject, desired: number, max: number): boolean {
  const a = annotationsOf(rs);
  let changed = false;
  if (a[DESIRED_REPLICAS_ANNOTATION] !== String(desired)) { a[DESIRED_REPLICAS_ANNOTATION] = String(desired); changed = true; }
  if (a[MAX_REPLICAS_ANNOTATION] !== String(max)) { a[MAX_REPLICAS_ANNOTATION] = String(max); changed = true; }
  return changed;
}

export function replicasAnnotationsNeedUpdate(rs: KubeObject, desired: number, max: number): boolean {
  const a = rs.metadata?.annotations ?? {};
  return a[DESIRED_REPLICAS_ANNOTATION] !== String(desired) || a[MAX_REPLICAS_ANNOTATION] !== String(max);
}

export function desiredReplicasAnnotation(rs: KubeObject): number | undefined {
  const v = rs.metadata?.annotations?.[DESIRED_REPLICAS_ANNOTATION];
  const n = v === undefined ? NaN : Number(v);
  return Number.isInteger(n) ? n : undefined;
}

export function maxReplicasAnnotation(rs: KubeObject): number | undefined {
  const v = rs.metadata?.annotations?.[MAX_REPLICAS_ANNOTATION];
  const n = v === undefined ? NaN : Number(v);
  return Number.isInteger(n) ? n : undefined;
}

/**
 * Gives `rs` the revision `newRevision` when that is higher than its own, keeping the
 * revisions it had before in revision-history (a rollback re-uses an old ReplicaSet). For a
 * ReplicaSet about to be created, also sets the desired/max replicas annotations.
 */
export function setNewReplicaSetAnnotations(d: KubeObject, rs: KubeObject, newRevision: number, exists: boolean): boolean {
  let changed = copyDeploymentAnnotations(d, rs);
  const a = annotationsOf(rs);
  const oldText = a[REVISION_ANNOTATION];
  const old = oldText === undefined || oldText === '' ? 0 : Number(oldText);
  if (!Number.isInteger(old)) return changed;
  if (old < newRevision) {
    a[REVISION_ANNOTATION] = String(newRevision);
    changed = true;
    if (oldText) {
      const hist = a[REVISION_HISTORY_ANNOTATION];
      a[REVISION_HISTORY_ANNOTATION] = hist ? `${hist},${oldText}` : oldText;
    }
  }
  if (!exists && setReplicasAnnotations(rs, replicas(d), replicas(d) + maxSurge(d))) changed = true;
  return changed;
}

// ------------------------------------------------------------------ conditions

export function getCondition(s: DeploymentStatus, type: string): Condition | undefined {
  return s.conditions?.find((c) => c.type === type);
}

export function newCondition(type: string, status: Condition['status'], reason: string, message: string, now = Date.now()): Condition {
  const t = metaTime(now);
  return { type, status, lastUpdateTime: t, lastTransitionTime: t, reason, message };
}

/** Sets a condition; unchanged when status and reason are the same; keeps the transition time while the status holds. */
export function setCondition(s: DeploymentStatus, c: Condition): void {
  const cur = getCondition(s, c.type);
  if (cur && cur.status === c.status && cur.reason === c.reason) return;
  const next = { ...c };
  if (cur && cur.status === c.status) next.lastTransitionTime = cur.lastTransitionTime;
  s.conditions = [...(s.conditions ?? []).filter((x) => x.type !== c.type), next];
}

export function removeCondition(s: DeploymentStatus, type: string): void {
  if (!s.conditions) return;
  s.conditions = s.conditions.filter((c) => c.type !== type);
}

export function hasProgressDeadline(d: KubeObject): boolean {
  const p = specOf(d).progressDeadlineSeconds;
  return typeof p === 'number' && p !== MAX_INT32;
}

export function deploymentStatus(d: KubeObject): DeploymentStatus { return statusOf(d) as DeploymentStatus; }

/** Every replica updated and available, and the current generation observed. */
export function deploymentComplete(d: KubeObject, s: DeploymentStatus): boolean {
  const want = replicas(d);
  return (s.updatedReplicas ?? 0) === want && (s.replicas ?? 0) === want && (s.availableReplicas ?? 0) === want && (s.observedGeneration ?? 0) >= (d.metadata?.generation ?? 0);
}

/** Status as compared for "did anything change" (zeros and absent fields are the same). */
export function canonicalStatus(s: DeploymentStatus): string {
  const z = (v: number | undefined): number => v ?? 0;
  return canonicalJson({
    observedGeneration: z(s.observedGeneration), replicas: z(s.replicas), updatedReplicas: z(s.updatedReplicas),
    readyReplicas: z(s.readyReplicas), availableReplicas: z(s.availableReplicas), unavailableReplicas: z(s.unavailableReplicas),
    collisionCount: s.collisionCount, conditions: s.conditions ?? [],
  });
}

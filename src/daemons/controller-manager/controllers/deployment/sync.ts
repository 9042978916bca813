/**
 * Finding or creating the new ReplicaSet (with revision bookkeeping), scaling ReplicaSets,
 * and proportional scaling when the deployment's replicas change mid-rollout.
 */
import { isApiError } from '../../../../api/meta/status.js';
import type { KubeObject } from '../../../../api/resources/types.js';
import { controllerRefOf, newControllerRef } from '../controller-utils.js';
import type { DeploymentSync } from './context.js';
import {
  POD_TEMPLATE_HASH_LABEL, REASONS, REVISION_ANNOTATION, activeReplicaSets, byCreation, bySizeNewer, bySizeOlder,
  desiredReplicasAnnotation, equalIgnoreHash, findNewReplicaSet, getCondition, hasProgressDeadline, isRollingUpdate,
  maxReplicasAnnotation, maxRevision, maxSurge, newCondition, newRSNewReplicas, podTemplateHash, replicas,
  replicasAnnotationsNeedUpdate, setCondition, setNewReplicaSetAnnotations, setReplicasAnnotations, specOf, specReplicaSum,
  statusOf, type Dict,
} from './util.js';

/** The new ReplicaSet (created when asked and missing) and all the others. */
export async function getAllReplicaSetsAndSyncRevision(s: DeploymentSync, createIfMissing: boolean): Promise<{ newRS: KubeObject | undefined; oldRSs: KubeObject[] }> {
  const existing = findNewReplicaSet(s.d, s.rsList);
  const oldRSs = s.rsList.filter((rs) => rs.metadata?.uid !== existing?.metadata?.uid);
  const newRS = await getNewReplicaSet(s, existing, oldRSs, createIfMissing);
  return { newRS, oldRSs: s.rsList.filter((rs) => rs.metadata?.uid !== newRS?.metadata?.uid) };
}

async function getNewReplicaSet(s: DeploymentSync, existing: KubeObject | undefined, oldRSs: KubeObject[], createIfMissing: boolean): Promise<KubeObject | undefined> {
  const newRevision = maxRevision(oldRSs) + 1;
  if (existing) {
    const copy = structuredClone(existing);
    const annotationsChanged = setNewReplicaSetAnnotations(s.d, copy, newRevision, true);
    const minReady = specOf(s.d).minReadySeconds ?? 0;
    if (annotationsChanged || (specOf(copy).minReadySeconds ?? 0) !== minReady) {
      (copy.spec as Dict).minReadySeconds = minReady;
      return s.updateRS(copy);
    }
    let needsUpdate = await s.setRevision(copy.metadata?.annotations?.[REVISION_ANNOTATION] ?? String(newRevision));
    if (hasProgressDeadline(s.d) && !getCondition(s.status, 'Progressing')) {
      setCondition(s.status, newCondition('Progressing', 'True', REASONS.foundNewRS, `Found new replica set "${copy.metadata?.name}"`));
      needsUpdate = true;
    }
    if (needsUpdate) await s.writeStatus();
    return copy;
  }
  if (!createIfMissing) return undefined;

  const collisionCount = statusOf(s.d).collisionCount as number | undefined;
  const template = structuredClone((specOf(s.d).template ?? {}) as Dict);
  const hash = podTemplateHash(template, collisionCount);
  const tmeta = (template.metadata ??= {}) as Dict;
  tmeta.labels = { ...((tmeta.labels ?? {}) as Record<string, string>), [POD_TEMPLATE_HASH_LABEL]: hash };
  const selector = structuredClone((specOf(s.d).selector ?? {}) as Dict);
  selector.matchLabels = { ...((selector.matchLabels ?? {}) as Record<string, string>), [POD_TEMPLATE_HASH_LABEL]: hash };
  const name = `${s.name}-${hash}`;
  const rs: KubeObject = {
    apiVersion: 'apps/v1', kind: 'ReplicaSet',
    metadata: { name, namespace: s.namespace, labels: { ...(tmeta.labels as Record<string, string>) }, ownerReferences: [newControllerRef(s.d, 'apps/v1', 'Deployment')] },
    spec: { replicas: 0, minReadySeconds: specOf(s.d).minReadySeconds ?? 0, selector, template },
  };
  const count = newRSNewReplicas(s.d, [...oldRSs, rs], rs);
  (rs.spec as Dict).replicas = count;
  setNewReplicaSetAnnotations(s.d, rs, newRevision, false);

  let created: KubeObject;
  let alreadyExisted = false;
  try {
    created = await s.createRS(rs);
  } catch (e) {
    if (isApiError(e) && e.code === 409 && e.reason === 'AlreadyExists') {
      const found = await s.client.get({ group: 'apps', version: 'v1', resource: 'replicasets', namespace: s.namespace }, name);
      if (controllerRefOf(found)?.uid === s.d.metadata?.uid && equalIgnoreHash(specOf(found).template, specOf(s.d).template)) {
        created = found;
        alreadyExisted = true;
      } else {
        // A hash collision with someone else's ReplicaSet: bump collisionCount and try a new name next sync.
        s.status.collisionCount = (collisionCount ?? 0) + 1;
        await s.writeStatus();
        throw e;
      }
    } else {
      if (hasProgressDeadline(s.d)) {
        setCondition(s.status, newCondition('Progressing', 'False', REASONS.failedRSCreate, `Failed to create new replica set "${name}": ${(e as Error).message}`));
        await s.writeStatus().catch(() => undefined);
      }
      throw e;
    }
  }
  if (!alreadyExisted && count > 0) {
    s.log.info({ deployment: `${s.namespace}/${s.name}`, replicaSet: name, replicas: count }, 'scaled up the new replica set');
    s.events.event(s.d, 'Normal', 'ScalingReplicaSet', `Scaled up replica set ${name} from 0 to ${count}`);
  }
  let needsUpdate = await s.setRevision(String(newRevision));
  if (!alreadyExisted && hasProgressDeadline(s.d)) {
    setCondition(s.status, newCondition('Progressing', 'True', REASONS.newRSCreated, `Created new replica set "${name}"`));
    needsUpdate = true;
  }
  if (needsUpdate) await s.writeStatus();
  return created;
}

/** Sets a ReplicaSet's replicas (and the desired/max annotations); returns it as stored. */
export async function scaleReplicaSet(s: DeploymentSync, rs: KubeObject, newScale: number, operation: string): Promise<KubeObject> {
  const desired = replicas(s.d);
  const max = desired + maxSurge(s.d);
  const sizeChanged = replicas(rs) !== newScale;
  if (!sizeChanged && !replicasAnnotationsNeedUpdate(rs, desired, max)) return rs;
  const copy = structuredClone(rs);
  (copy.spec as Dict).replicas = newScale;
  setReplicasAnnotations(copy, desired, max);
  const updated = await s.updateRS(copy);
  if (sizeChanged) {
    s.log.info({ deployment: `${s.namespace}/${s.name}`, replicaSet: rs.metadata?.name, from: replicas(rs), to: newScale }, 'scaled a replica set');
    s.events.event(s.d, 'Normal', 'ScalingReplicaSet', `Scaled ${operation} replica set ${rs.metadata?.name} from ${replicas(rs)} to ${newScale}`);
  }
  return updated;
}

/** Scales when the size differs; returns whether it did and the stored ReplicaSet. */
export async function scaleAndRecord(s: DeploymentSync, rs: KubeObject, newScale: number): Promise<{ scaled: boolean; rs: KubeObject }> {
  if (replicas(rs) === newScale) return { scaled: false, rs };
  const op = replicas(rs) < newScale ? 'up' : 'down';
  return { scaled: true, rs: await scaleReplicaSet(s, rs, newScale, op) };
}

/** The only active ReplicaSet, or the newest when none is active; undefined with several active. */
function findActiveOrLatest(newRS: KubeObject | undefined, oldRSs: KubeObject[]): KubeObject | undefined {
  if (!newRS && oldRSs.length === 0) return undefined;
  const sortedOld = [...oldRSs].sort((a, b) => -byCreation(a, b));
  const active = activeReplicaSets([...sortedOld, newRS]);
  if (active.length === 0) return newRS ?? sortedOld[0];
  return active.length === 1 ? active[0] : undefined;
}

function isSaturated(d: KubeObject, rs: KubeObject | undefined): boolean {
  if (!rs) return false;
  return desiredReplicasAnnotation(rs) === replicas(d) && replicas(rs) === replicas(d) && ((statusOf(rs).availableReplicas as number | undefined) ?? 0) === replicas(d);
}

/** A ReplicaSet's share of a size change, from its size relative to the max-replicas it was sized for. */
export function replicaSetProportion(rs: KubeObject, d: KubeObject, toAdd: number, added: number): number {
  if (replicas(rs) === 0 || toAdd === 0 || toAdd === added) return 0;
  let fraction: number;
  if (replicas(d) === 0) {
    fraction = -replicas(rs);
  } else {
    const deploymentReplicas = replicas(d) + maxSurge(d);
    const annotated = maxReplicasAnnotation(rs) ?? ((statusOf(d).replicas as number | undefined) ?? 0);
    const size = annotated === 0 ? replicas(rs) : (replicas(rs) * deploymentReplicas) / annotated;
    fraction = Math.sign(size) * Math.round(Math.abs(size)) - replicas(rs);
  }
  const allowed = toAdd - added;
  return toAdd > 0 ? Math.min(fraction, allowed) : Math.max(fraction, allowed);
}

/** New sizes for proportional scaling (exported for unit tests). */
export function proportionalSizes(d: KubeObject, active: KubeObject[]): Map<KubeObject, number> {
  const allowed = replicas(d) > 0 ? replicas(d) + maxSurge(d) : 0;
  const toAdd = allowed - specReplicaSum(active);
  const sorted = [...active].sort(toAdd > 0 ? bySizeNewer : bySizeOlder);
  const sizes = new Map<KubeObject, number>();
  let added = 0;
  for (const rs of sorted) {
    if (toAdd !== 0) {
      const p = replicaSetProportion(rs, d, toAdd, added);
      sizes.set(rs, replicas(rs) + p);
      added += p;
    } else {
      sizes.set(rs, replicas(rs));
    }
  }
  if (sorted.length && toAdd !== 0) {
    const first = sorted[0];
    sizes.set(first, Math.max(0, (sizes.get(first) ?? 0) + toAdd - added));
  }
  return sizes;
}

/** Scaling for a changed spec.replicas (also run while paused). */
export async function scale(s: DeploymentSync, newRS: KubeObject | undefined, oldRSs: KubeObject[]): Promise<void> {
  const only = findActiveOrLatest(newRS, oldRSs);
  if (only) {
    if (replicas(only) !== replicas(s.d)) await scaleAndRecord(s, only, replicas(s.d));
    return;
  }
  if (isSaturated(s.d, newRS)) {
    for (const old of activeReplicaSets(oldRSs)) await scaleAndRecord(s, old, 0);
    return;
  }
  if (!isRollingUpdate(s.d)) return;
  const active = activeReplicaSets([...oldRSs, newRS]);
  const sizes = proportionalSizes(s.d, active);
  const toAdd = (replicas(s.d) > 0 ? replicas(s.d) + maxSurge(s.d) : 0) - specReplicaSum(active);
  const op = toAdd > 0 ? 'up' : 'down';
  for (const [rs, size] of sizes) await scaleReplicaSet(s, rs, size, op);
}

/** Scaling event: an active ReplicaSet was sized for another spec.replicas. */
export function isScalingEvent(d: KubeObject, allRSs: Array<KubeObject | undefined>): boolean {
  return activeReplicaSets(allRSs).some((rs) => {
    const want = desiredReplicasAnnotation(rs);
    return want !== undefined && want !== replicas(d);
  });
}

/**
 * Rollout progress: the Progressing condition (created / found / updated / available /
 * deadline exceeded / paused / resumed), ReplicaFailure carried over from ReplicaSets, and
 * the requeue that notices a missed progressDeadlineSeconds without waiting for a resync.
 */
import type { KubeObject } from '../../../../api/resources/types.js';
import type { DeploymentSync } from './context.js';
import { calculateStatus, sameStatus } from './status.js';
import {
  REASONS, deploymentComplete, deploymentStatus, getCondition, hasProgressDeadline, newCondition, removeCondition,
  setCondition, specOf, statusOf, type Condition, type DeploymentStatus,
} from './util.js';

/** Some progress since the stored status: more updated, fewer old, more ready or available. */
export function deploymentProgressing(d: KubeObject, next: DeploymentStatus): boolean {
  const cur = deploymentStatus(d);
  const oldOld = (cur.replicas ?? 0) - (cur.updatedReplicas ?? 0);
  const newOld = (next.replicas ?? 0) - (next.updatedReplicas ?? 0);
  return (next.updatedReplicas ?? 0) > (cur.updatedReplicas ?? 0) || newOld < oldOld
    || (next.readyReplicas ?? 0) > (cur.readyReplicas ?? 0) || (next.availableReplicas ?? 0) > (cur.availableReplicas ?? 0);
}

export function deploymentTimedOut(d: KubeObject, next: DeploymentStatus, now = Date.now()): boolean {
  if (!hasProgressDeadline(d)) return false;
  const c = getCondition(next, 'Progressing');
  if (!c || c.reason === REASONS.newRSAvailable) return false;
  if (c.reason === REASONS.timedOut) return true;
  const from = c.lastUpdateTime ? Date.parse(c.lastUpdateTime) : NaN;
  if (Number.isNaN(from)) return false;
  return from + Number(specOf(d).progressDeadlineSeconds) * 1000 < now;
}

function replicaFailure(allRSs: Array<KubeObject | undefined>, newRS: KubeObject | undefined): Condition | undefined {
  const ordered = [newRS, ...allRSs.filter((r) => r !== newRS)];
  for (const rs of ordered) {
    const c = ((statusOf(rs).conditions ?? []) as Condition[]).find((x) => x.type === 'ReplicaFailure' && x.status === 'True');
    if (c) return { type: 'ReplicaFailure', status: 'True', reason: c.reason ?? '', message: c.message ?? '', lastUpdateTime: c.lastTransitionTime, lastTransitionTime: c.lastTransitionTime };
  }
  return undefined;
}

/** Status plus progress conditions; writes when changed, else schedules a deadline check. */
export async function syncRolloutStatus(s: DeploymentSync, allRSs: Array<KubeObject | undefined>, newRS: KubeObject | undefined): Promise<void> {
  const d = s.d;
  const next = calculateStatus(d, allRSs, newRS);
  if (!hasProgressDeadline(d)) removeCondition(next, 'Progressing');
  const cur = getCondition(deploymentStatus(d), 'Progressing');
  const complete = next.replicas === next.updatedReplicas && cur?.reason === REASONS.newRSAvailable;
  if (hasProgressDeadline(d) && !complete) {
    const rsName = newRS?.metadata?.name;
    if (deploymentComplete(d, next)) {
      const msg = rsName ? `ReplicaSet "${rsName}" has successfully progressed.` : `Deployment "${s.name}" has successfully progressed.`;
      setCondition(next, newCondition('Progressing', 'True', REASONS.newRSAvailable, msg));
    } else if (deploymentProgressing(d, next)) {
      const msg = rsName ? `ReplicaSet "${rsName}" is progressing.` : `Deployment "${s.name}" is progressing.`;
      const c = newCondition('Progressing', 'True', REASONS.rsUpdated, msg);
      // Progress refreshes lastUpdateTime even when the reason stays the same.
      if (cur) {
        if (cur.status === 'True') c.lastTransitionTime = cur.lastTransitionTime;
        removeCondition(next, 'Progressing');
      }
      setCondition(next, c);
    } else if (deploymentTimedOut(d, next)) {
      const msg = rsName ? `ReplicaSet "${rsName}" has timed out progressing.` : `Deployment "${s.name}" has timed out progressing.`;
      setCondition(next, newCondition('Progressing', 'False', REASONS.timedOut, msg));
    }
  }
  const failure = replicaFailure(allRSs, newRS);
  if (failure) setCondition(next, failure);
  else removeCondition(next, 'ReplicaFailure');
  if (sameStatus(deploymentStatus(d), next)) {
    requeueStuckDeployment(s, next);
    return;
  }
  await s.writeStatus(next);
}

/** Without visible progress, look again when the deadline would pass. */
function requeueStuckDeployment(s: DeploymentSync, next: DeploymentStatus): void {
  const cur = getCondition(deploymentStatus(s.d), 'Progressing');
  if (!hasProgressDeadline(s.d) || !cur) return;
  if (deploymentComplete(s.d, next) || cur.reason === REASONS.timedOut) return;
  const from = cur.lastUpdateTime ? Date.parse(cur.lastUpdateTime) : Date.now();
  const after = from + Number(specOf(s.d).progressDeadlineSeconds) * 1000 - Date.now();
  if (after < 1000) s.requeue.rateLimited();
  else s.requeue.after(after + 1000);
}

/** Progressing=Unknown DeploymentPaused / DeploymentResumed when spec.paused flips (never over a timeout). */
export async function checkPausedConditions(s: DeploymentSync): Promise<void> {
  if (!hasProgressDeadline(s.d)) return;
  const cond = getCondition(s.status, 'Progressing');
  if (cond?.reason === REASONS.timedOut) return;
  const pausedExists = cond?.reason === REASONS.paused;
  const paused = specOf(s.d).paused === true;
  if (paused && !pausedExists) setCondition(s.status, newCondition('Progressing', 'Unknown', REASONS.paused, 'Deployment is paused'));
  else if (!paused && pausedExists) setCondition(s.status, newCondition('Progressing', 'Unknown', REASONS.resumed, 'Deployment is resumed'));
  else return;
  await s.writeStatus();
}

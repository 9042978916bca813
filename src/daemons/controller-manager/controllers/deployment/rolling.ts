/**
 * The RollingUpdate strategy: grow the new ReplicaSet within maxSurge, shrink old ones
 * within maxUnavailable (unhealthy replicas first), one step per sync.
 */
import type { KubeObject } from '../../../../api/resources/types.js';
import type { DeploymentSync } from './context.js';
import { cleanupDeployment } from './history.js';
import { syncRolloutStatus } from './progress.js';
import { getAllReplicaSetsAndSyncRevision, scaleAndRecord } from './sync.js';
import {
  activeReplicaSets, availableReplicas, availableSum, byCreation, deploymentComplete, deploymentStatus,
  maxUnavailable, newRSNewReplicas, replicas, specReplicaSum,
} from './util.js';

export async function rolloutRolling(s: DeploymentSync): Promise<void> {
  const { newRS, oldRSs } = await getAllReplicaSetsAndSyncRevision(s, true);
  if (!newRS) throw new Error('no new replica set');
  let allRSs = [...oldRSs, newRS];
  const up = await reconcileNewReplicaSet(s, allRSs, newRS);
  if (up.scaled) {
    await syncRolloutStatus(s, [...oldRSs, up.rs], up.rs);
    return;
  }
  const down = await reconcileOldReplicaSets(s, allRSs, activeReplicaSets(oldRSs), newRS);
  if (down.scaled) {
    allRSs = [...down.oldRSs, newRS];
    await syncRolloutStatus(s, allRSs, newRS);
    return;
  }
  if (deploymentComplete(s.d, deploymentStatus(s.d))) await cleanupDeployment(s, oldRSs);
  await syncRolloutStatus(s, allRSs, newRS);
}

async function reconcileNewReplicaSet(s: DeploymentSync, allRSs: KubeObject[], newRS: KubeObject): Promise<{ scaled: boolean; rs: KubeObject }> {
  const want = replicas(s.d);
  if (replicas(newRS) === want) return { scaled: false, rs: newRS };
  if (replicas(newRS) > want) return scaleAndRecord(s, newRS, want);
  return scaleAndRecord(s, newRS, newRSNewReplicas(s.d, allRSs, newRS));
}

/** How far old ReplicaSets may shrink now (exported for unit tests). */
export function maxScaledDown(d: KubeObject, allRSs: KubeObject[], newRS: KubeObject): number {
  const minAvailable = replicas(d) - maxUnavailable(d);
  const newUnavailable = replicas(newRS) - availableReplicas(newRS);
  return specReplicaSum(allRSs) - minAvailable - newUnavailable;
}

async function reconcileOldReplicaSets(s: DeploymentSync, allRSs: KubeObject[], oldRSs: KubeObject[], newRS: KubeObject): Promise<{ scaled: boolean; oldRSs: KubeObject[] }> {
  if (specReplicaSum(oldRSs) === 0) return { scaled: false, oldRSs };
  const budget = maxScaledDown(s.d, allRSs, newRS);
  if (budget <= 0) return { scaled: false, oldRSs };
  const cleaned = await cleanupUnhealthyReplicas(s, oldRSs, budget);
  const scaledDown = await scaleDownOldReplicaSets(s, [...cleaned.oldRSs, newRS], cleaned.oldRSs);
  return { scaled: cleaned.count + scaledDown > 0, oldRSs: cleaned.oldRSs };
}

/** Removes replicas that are not available from old ReplicaSets, oldest first. */
async function cleanupUnhealthyReplicas(s: DeploymentSync, oldRSs: KubeObject[], maxCleanup: number): Promise<{ oldRSs: KubeObject[]; count: number }> {
  const sorted = [...oldRSs].sort(byCreation);
  let total = 0;
  for (let i = 0; i < sorted.length; i++) {
    if (total >= maxCleanup) break;
    const rs = sorted[i];
    const unhealthy = replicas(rs) - availableReplicas(rs);
    if (replicas(rs) === 0 || unhealthy <= 0) continue;
    const n = Math.min(maxCleanup - total, unhealthy);
    sorted[i] = (await scaleAndRecord(s, rs, replicas(rs) - n)).rs;
    total += n;
  }
  return { oldRSs: sorted, count: total };
}

/** Shrinks old ReplicaSets, oldest first, while availability stays at least replicas - maxUnavailable. */
async function scaleDownOldReplicaSets(s: DeploymentSync, allRSs: KubeObject[], oldRSs: KubeObject[]): Promise<number> {
  const minAvailable = replicas(s.d) - maxUnavailable(s.d);
  const available = availableSum(allRSs);
  if (available <= minAvailable) return 0;
  const target = available - minAvailable;
  let total = 0;
  for (const rs of [...oldRSs].sort(byCreation)) {
    if (total >= target) break;
    if (replicas(rs) === 0) continue;
    const n = Math.min(replicas(rs), target - total);
    await scaleAndRecord(s, rs, replicas(rs) - n);
    total += n;
  }
  return total;
}

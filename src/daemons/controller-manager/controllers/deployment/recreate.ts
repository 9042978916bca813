/**
 * The Recreate strategy: scale every old ReplicaSet to zero, wait until no old pod is left
 * running, then create or scale up the new ReplicaSet.
 */
import type { KubeObject } from '../../../../api/resources/types.js';
import { podPhase } from '../controller-utils.js';
import type { DeploymentSync } from './context.js';
import { cleanupDeployment } from './history.js';
import { syncRolloutStatus } from './progress.js';
import { getAllReplicaSetsAndSyncRevision, scaleAndRecord } from './sync.js';
import { activeReplicaSets, deploymentComplete, deploymentStatus, replicas, statusReplicaSum } from './util.js';

/** Old pods still around (any phase but Succeeded/Failed counts). */
export function oldPodsRunning(newRS: KubeObject | undefined, oldRSs: KubeObject[], podMap: Map<string, KubeObject[]>): boolean {
  if (statusReplicaSum(oldRSs) > 0) return true;
  for (const [uid, pods] of podMap) {
    if (newRS && newRS.metadata?.uid === uid) continue;
    if (pods.some((p) => podPhase(p) !== 'Failed' && podPhase(p) !== 'Succeeded')) return true;
  }
  return false;
}

export async function rolloutRecreate(s: DeploymentSync): Promise<void> {
  let { newRS, oldRSs } = await getAllReplicaSetsAndSyncRevision(s, false);
  let scaledDown = false;
  for (const rs of activeReplicaSets(oldRSs)) {
    const r = await scaleAndRecord(s, rs, 0);
    scaledDown ||= r.scaled;
  }
  oldRSs = s.rsList.filter((rs) => rs.metadata?.uid !== newRS?.metadata?.uid);
  if (scaledDown || oldPodsRunning(newRS, oldRSs, s.podMap)) {
    await syncRolloutStatus(s, [...oldRSs, newRS], newRS);
    return;
  }
  if (!newRS) ({ newRS, oldRSs } = await getAllReplicaSetsAndSyncRevision(s, true));
  if (newRS) newRS = (await scaleAndRecord(s, newRS, replicas(s.d))).rs;
  if (deploymentComplete(s.d, deploymentStatus(s.d))) await cleanupDeployment(s, oldRSs);
  await syncRolloutStatus(s, [...oldRSs, newRS], newRS);
}

/**
 * The deployment status computed from its ReplicaSets, and the Available condition.
 */
import type { KubeObject } from '../../../../api/resources/types.js';
import type { DeploymentSync } from './context.js';
import {
  REASONS, availableSum, canonicalStatus, deploymentStatus, maxUnavailable, newCondition, readySum, replicas,
  setCondition, specReplicaSum, statusReplicaSum, type DeploymentStatus,
} from './util.js';

export function calculateStatus(d: KubeObject, allRSs: Array<KubeObject | undefined>, newRS: KubeObject | undefined, now = Date.now()): DeploymentStatus {
  const available = availableSum(allRSs);
  const total = specReplicaSum(allRSs);
  const old = deploymentStatus(d);
  const status: DeploymentStatus = {
    observedGeneration: d.metadata?.generation ?? 0,
    replicas: statusReplicaSum(allRSs),
    updatedReplicas: statusReplicaSum([newRS]),
    readyReplicas: readySum(allRSs),
    availableReplicas: available,
    unavailableReplicas: Math.max(0, total - available),
  };
  if (old.collisionCount !== undefined) status.collisionCount = old.collisionCount;
  if (old.conditions) status.conditions = old.conditions.map((c) => ({ ...c }));
  if (available >= replicas(d) - maxUnavailable(d)) {
    setCondition(status, newCondition('Available', 'True', REASONS.minAvailable, 'Deployment has minimum availability.', now));
  } else {
    setCondition(status, newCondition('Available', 'False', REASONS.minUnavailable, 'Deployment does not have minimum availability.', now));
  }
  return status;
}

export function sameStatus(a: DeploymentStatus, b: DeploymentStatus): boolean {
  return canonicalStatus(a) === canonicalStatus(b);
}

/** Writes the computed status when it differs from the stored one. */
export async function syncDeploymentStatus(s: DeploymentSync, allRSs: Array<KubeObject | undefined>, newRS: KubeObject | undefined): Promise<void> {
  const status = calculateStatus(s.d, allRSs, newRS);
  if (sameStatus(deploymentStatus(s.d), status)) return;
  await s.writeStatus(status);
}

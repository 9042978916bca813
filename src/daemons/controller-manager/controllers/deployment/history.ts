/**
 * Revision history: old ReplicaSets beyond spec.revisionHistoryLimit are deleted, oldest
 * revision first, but only once they are scaled to zero and settled.
 */
import type { KubeObject } from '../../../../api/resources/types.js';
import type { DeploymentSync } from './context.js';
import { byRevision, replicas, specOf, statusOf } from './util.js';

/** The old ReplicaSets that may be deleted now (exported for unit tests). */
export function replicaSetsToCleanUp(d: KubeObject, oldRSs: KubeObject[]): KubeObject[] {
  const limit = specOf(d).revisionHistoryLimit;
  if (typeof limit !== 'number') return [];
  const alive = oldRSs.filter((rs) => !rs.metadata?.deletionTimestamp);
  const diff = alive.length - limit;
  if (diff <= 0) return [];
  return [...alive].sort(byRevision).slice(0, diff).filter((rs) =>
    ((statusOf(rs).replicas as number | undefined) ?? 0) === 0 && replicas(rs) === 0
    && (rs.metadata?.generation ?? 0) <= ((statusOf(rs).observedGeneration as number | undefined) ?? 0));
}

export async function cleanupDeployment(s: DeploymentSync, oldRSs: KubeObject[]): Promise<void> {
  for (const rs of replicaSetsToCleanUp(s.d, oldRSs)) {
    s.log.info({ deployment: `${s.namespace}/${s.name}`, replicaSet: rs.metadata?.name }, 'deleting old replica set beyond the revision history limit');
    await s.deleteRS(rs);
  }
}

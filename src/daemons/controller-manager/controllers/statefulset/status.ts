/**
 * A StatefulSet's status from its pods and revisions. Pure functions.
 *
 * Contract: replicas counts the set's pods that exist (condemned ones too); ready and
 * available count running pods with Ready True (available: for minReadySeconds); current and
 * updated count pods not being deleted by the revision label they carry. Once a rolling
 * update has every pod updated and ready, the update revision becomes the current one.
 */
import type { KubeObject } from '../../../../api/resources/types.js';
import { availability, isRunningAndReady, isTerminating, minReadySecondsOf, podRevision, setStatus, updateStrategyType } from './identity.js';

export interface SetStatus {
  observedGeneration: number;
  replicas: number;
  readyReplicas: number;
  currentReplicas: number;
  updatedReplicas: number;
  availableReplicas: number;
  currentRevision: string;
  updateRevision: string;
  collisionCount: number;
}

const FIELDS: Array<keyof SetStatus> = ['observedGeneration', 'replicas', 'readyReplicas', 'currentReplicas', 'updatedReplicas',
  'availableReplicas', 'currentRevision', 'updateRevision', 'collisionCount'];

export function computeStatus(set: KubeObject, pods: readonly KubeObject[], current: string, update: string, collisionCount: number, now: number): SetStatus {
  const minReady = minReadySecondsOf(set);
  const s: SetStatus = {
    observedGeneration: set.metadata?.generation ?? 0, replicas: 0, readyReplicas: 0, currentReplicas: 0, updatedReplicas: 0,
    availableReplicas: 0, currentRevision: current, updateRevision: update, collisionCount,
  };
  for (const p of pods) {
    s.replicas++;
    if (isRunningAndReady(p)) {
      s.readyReplicas++;
      if (availability(p, minReady, now).available) s.availableReplicas++;
    }
    if (isTerminating(p)) continue;
    if (podRevision(p) === current) s.currentReplicas++;
    if (podRevision(p) === update) s.updatedReplicas++;
  }
  // A finished rolling update: the update revision is now current.
  if (updateStrategyType(set) === 'RollingUpdate' && s.updatedReplicas === s.replicas && s.readyReplicas === s.replicas) {
    s.currentReplicas = s.updatedReplicas;
    s.currentRevision = update;
  }
  return s;
}

/** The status as written (the set's other status fields, e.g. conditions, kept). */
export function statusObject(set: KubeObject, s: SetStatus): Record<string, unknown> {
  return { ...setStatus(set), ...s };
}

export function statusUnchanged(set: KubeObject, s: SetStatus): boolean {
  const old = setStatus(set);
  return FIELDS.every((k) => (old[k] ?? (typeof s[k] === 'string' ? '' : 0)) === s[k]);
}

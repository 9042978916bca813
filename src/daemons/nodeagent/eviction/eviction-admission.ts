/**
 * Admission under node pressure, as Kubernetes' eviction manager admits pods: with no pressure
 * every pod; critical pods always; under memory pressure alone, pods that are not BestEffort
 * (and BestEffort pods tolerating the memory-pressure taint); under disk or PID pressure none.
 * A refused pod fails with reason Evicted and "The node had condition: [...]. ".
 */
import type { AdmissionResult } from '../admission.js';
import type { Container, Pod } from '../pod-types.js';
import { SYSTEM_CRITICAL_PRIORITY } from './rank.js';
import type { PressureCondition } from './eviction-manager.js';

const ORDER: readonly PressureCondition[] = ['MemoryPressure', 'DiskPressure', 'PIDPressure'];

function hasResources(c: Container): boolean {
  const r = c.resources ?? {};
  return Object.keys(r.requests ?? {}).length > 0 || Object.keys(r.limits ?? {}).length > 0;
}

export function isBestEffort(pod: Pod): boolean {
  return ![...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])].some(hasResources);
}

function toleratesMemoryPressure(pod: Pod): boolean {
  return (pod.spec?.tolerations ?? []).some((t) => {
    const key = t['key'];
    const op = t['operator'] ?? 'Equal';
    const effect = t['effect'];
    const keyOk = key === 'node.kubernetes.io/memory-pressure' || (op === 'Exists' && (key === undefined || key === ''));
    return keyOk && (effect === undefined || effect === '' || effect === 'NoSchedule');
  });
}

export function admitUnderPressure(pod: Pod, conditions: ReadonlySet<PressureCondition>): AdmissionResult {
  if (conditions.size === 0) return { admit: true };
  if ((pod.spec?.priority ?? 0) >= SYSTEM_CRITICAL_PRIORITY) return { admit: true };
  const onlyMemory = conditions.size === 1 && conditions.has('MemoryPressure');
  if (onlyMemory && (!isBestEffort(pod) || toleratesMemoryPressure(pod))) return { admit: true };
  const list = ORDER.filter((c) => conditions.has(c));
  return { admit: false, reason: 'Evicted', message: `The node had condition: [${list.join(' ')}]. ` };
}

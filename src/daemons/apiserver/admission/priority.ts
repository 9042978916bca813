/**
 * Priority: a pod's `priority` comes from its `priorityClassName`. This server serves no
 * PriorityClass objects, so the two built-in classes are the only names (system-cluster-critical
 * 2000000000, system-node-critical 2000001000); a pod naming no class gets 0 and another name is
 * refused. A pod may not set `priority` or `preemptionPolicy` to anything else itself;
 * `preemptionPolicy` is PreemptLowerPriority, the policy of every built-in class.
 */
import { errors } from '../../../api/meta/status.js';
import type { AdmissionPlugin } from './types.js';
import { isPod } from './types.js';

export const SYSTEM_PRIORITY_CLASSES: Readonly<Record<string, number>> = {
  'system-cluster-critical': 2_000_000_000,
  'system-node-critical': 2_000_001_000,
};

const PREEMPT = 'PreemptLowerPriority';

export function priority(): AdmissionPlugin {
  return {
    name: 'Priority',
    handles: (op, def, sub) => op === 'CREATE' && isPod(def) && sub === '',
    admit(a) {
      const spec = a.object?.spec as Record<string, unknown> | undefined;
      if (typeof spec !== 'object' || spec === null) return;
      const q = { group: '', resource: 'pods', name: a.name };
      const cls = typeof spec.priorityClassName === 'string' ? spec.priorityClassName : '';
      const value = cls === '' ? 0 : SYSTEM_PRIORITY_CLASSES[cls];
      if (value === undefined) throw errors.admissionForbidden(q, `no PriorityClass with name ${cls} was found`);
      if (spec.priority !== undefined && spec.priority !== null && spec.priority !== value) {
        throw errors.admissionForbidden(q, `the integer value of priority (${String(spec.priority)}) must not be provided in pod spec; priority admission controller computed ${value} from the given PriorityClass name`);
      }
      if (spec.preemptionPolicy !== undefined && spec.preemptionPolicy !== null && spec.preemptionPolicy !== PREEMPT) {
        throw errors.admissionForbidden(q, `the string value of PreemptionPolicy (${String(spec.preemptionPolicy)}) must not be provided in pod spec; priority admission controller computed ${PREEMPT} from the given PriorityClass name`);
      }
      spec.priority = value;
      spec.preemptionPolicy = PREEMPT;
    },
  };
}

/**
 * LimitPodHardAntiAffinityTopology: a pod's required anti-affinity may only use the
 * kubernetes.io/hostname topology key (another key could keep a whole zone free of pods).
 */
import { errors } from '../../../api/meta/status.js';
import { isPod, type AdmissionPlugin } from './types.js';
import { podSpec } from './pod-shape.js';

const HOSTNAME = 'kubernetes.io/hostname';

export function limitPodHardAntiAffinityTopology(): AdmissionPlugin {
  return {
    name: 'LimitPodHardAntiAffinityTopology',
    handles: (op, def, sub) => (op === 'CREATE' || op === 'UPDATE') && isPod(def) && sub === '',
    validate(a) {
      const terms = podSpec(a.object).affinity?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution ?? [];
      for (const term of terms) {
        if (term.topologyKey !== HOSTNAME) {
          throw errors.admissionForbidden({ resource: 'pods', name: a.object?.metadata?.name ?? a.name },
            `affinity.PodAntiAffinity.RequiredDuringScheduling has TopologyKey ${term.topologyKey ?? ''} but only key ${HOSTNAME} is allowed`);
        }
      }
    },
  };
}

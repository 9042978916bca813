/**
 * DefaultTolerationSeconds: a pod that does not tolerate the NoExecute taints of a not-ready or
 * unreachable node itself tolerates them for 300 s, so its node's controller evicts it five
 * minutes after the node is lost, not at once.
 */
import { defaultTolerations } from '../../../api/resources/core/pod-spec.js';
import type { AdmissionPlugin } from './types.js';
import { isPod } from './types.js';

export function defaultTolerationSeconds(): AdmissionPlugin {
  return {
    name: 'DefaultTolerationSeconds',
    handles: (op, def, sub) => (op === 'CREATE' || op === 'UPDATE') && isPod(def) && sub === '',
    admit(a) {
      const spec = a.object?.spec;
      if (typeof spec === 'object' && spec !== null && !Array.isArray(spec)) defaultTolerations(spec as Record<string, unknown>);
    },
  };
}

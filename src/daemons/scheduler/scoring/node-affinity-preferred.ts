/**
 * Preferred node affinity: each preferredDuringSchedulingIgnoredDuringExecution term the node
 * matches adds its weight; the sums are scaled so the best node gets 100. Pods without
 * preferences score the same everywhere. Weighted 2, as in Kubernetes' default profile.
 */
import { termMatches } from '../../../api/resources/core/node-placement.js';
import { MAX_NODE_SCORE, type Score } from './score.js';

export const nodeAffinityPreferred: Score = {
  name: 'NodeAffinityPreferred',
  weight: 2,
  score(pod, nodes) {
    const terms = pod.pod.spec?.affinity?.nodeAffinity?.preferredDuringSchedulingIgnoredDuringExecution ?? [];
    if (terms.length === 0) return nodes.map(() => 0);
    const raw = nodes.map((n) => {
      if (!n.node) return 0;
      let sum = 0;
      for (const t of terms) if (t.weight > 0 && termMatches(t.preference, n.node)) sum += t.weight;
      return sum;
    });
    const max = Math.max(0, ...raw);
    return max === 0 ? raw : raw.map((v) => Math.floor((v * MAX_NODE_SCORE) / max));
  },
};

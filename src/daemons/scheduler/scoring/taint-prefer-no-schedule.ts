/**
 * PreferNoSchedule taints: nodes with fewer such taints the pod does not tolerate score
 * higher (100 for none, 0 for the node with the most). Only tolerations with effect
 * PreferNoSchedule or no effect count, as in Kubernetes.
 */
import { toleratesTaint } from '../../../api/resources/core/node-placement.js';
import { MAX_NODE_SCORE, type Score } from './score.js';

export const taintPreferNoSchedule: Score = {
  name: 'TaintToleration',
  weight: 1,
  score(pod, nodes) {
    const tolerations = (pod.pod.spec?.tolerations ?? []).filter((t) => !t.effect || t.effect === 'PreferNoSchedule');
    const counts = nodes.map((n) => {
      let c = 0;
      for (const taint of n.node?.spec?.taints ?? []) {
        if (taint.effect === 'PreferNoSchedule' && !tolerations.some((t) => toleratesTaint(t, taint))) c++;
      }
      return c;
    });
    const max = Math.max(0, ...counts);
    return max === 0 ? counts.map(() => MAX_NODE_SCORE) : counts.map((c) => Math.floor((MAX_NODE_SCORE * (max - c)) / max));
  },
};

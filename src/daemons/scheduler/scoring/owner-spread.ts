/**
 * Owner spread: pods of one controller (same controller ownerReference uid) go to the nodes
 * holding fewest of them: score = 100 * (max - count) / max over the candidate nodes, so the
 * emptiest nodes get 100. A pod without a controller scores the same everywhere.
 * Weighted 2, as Kubernetes weights its default topology spreading.
 */
import { MAX_NODE_SCORE, type Score } from './score.js';

export const ownerSpread: Score = {
  name: 'OwnerSpread',
  weight: 2,
  score(pod, nodes) {
    if (!pod.ownerUid) return nodes.map(() => 0);
    const counts = nodes.map((n) => n.ownerCounts.get(pod.ownerUid) ?? 0);
    const max = Math.max(0, ...counts);
    if (max === 0) return counts.map(() => MAX_NODE_SCORE);
    return counts.map((c) => Math.floor((MAX_NODE_SCORE * (max - c)) / max));
  },
};

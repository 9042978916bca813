/**
 * Balanced allocation: favours nodes whose cpu and memory would be used in similar
 * proportions after placing the pod. With the requested fractions f (capped at 1), the score
 * is (1 - standard deviation of f) * 100; for two resources the deviation is |f1 - f2| / 2.
 * Requests count as requested (no non-zero defaults), as Kubernetes does here.
 */
import { CPU, MEMORY } from '../resources.js';
import { MAX_NODE_SCORE, type Score } from './score.js';

const RESOURCES = [CPU, MEMORY];

export function balancedScore(fractions: readonly number[]): number {
  if (fractions.length === 0) return MAX_NODE_SCORE;
  const mean = fractions.reduce((a, b) => a + b, 0) / fractions.length;
  const variance = fractions.reduce((a, f) => a + (f - mean) ** 2, 0) / fractions.length;
  return Math.floor((1 - Math.sqrt(variance)) * MAX_NODE_SCORE);
}

export const balancedAllocation: Score = {
  name: 'BalancedAllocation',
  weight: 1,
  score(pod, nodes) {
    return nodes.map((n) => {
      const fractions: number[] = [];
      for (const r of RESOURCES) {
        const alloc = n.allocatable[r] ?? 0;
        if (alloc <= 0) continue;
        fractions.push(Math.min(1, ((n.requested[r] ?? 0) + (pod.requests[r] ?? 0)) / alloc));
      }
      return balancedScore(fractions);
    });
  },
};

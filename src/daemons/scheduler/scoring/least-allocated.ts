/**
 * Least allocated: favours nodes with more cpu and memory left after placing the pod,
 * (allocatable - requested) * 100 / allocatable per resource, averaged with equal weights.
 * Requests count with the non-zero defaults (100m cpu, 200Mi memory per container).
 */
import { CPU, MEMORY } from '../resources.js';
import { MAX_NODE_SCORE, type Score } from './score.js';

const RESOURCES = [CPU, MEMORY];

export function leastAllocatedScore(allocatable: number, requested: number): number {
  if (allocatable <= 0 || requested > allocatable) return 0;
  return Math.floor(((allocatable - requested) * MAX_NODE_SCORE) / allocatable);
}

export const leastAllocated: Score = {
  name: 'LeastAllocated',
  weight: 1,
  score(pod, nodes) {
    return nodes.map((n) => {
      let sum = 0;
      for (const r of RESOURCES) sum += leastAllocatedScore(n.allocatable[r] ?? 0, (n.nonZeroRequested[r] ?? 0) + (pod.nonZero[r] ?? 0));
      return Math.floor(sum / RESOURCES.length);
    });
  },
};

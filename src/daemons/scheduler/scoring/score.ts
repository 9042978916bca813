/**
 * A score ranks the nodes that passed the filters: one number in [0, 100] per node (higher is
 * better), computed over all candidate nodes at once so that scores relative to the others
 * (spreading) need no second pass. Scores are pure functions of the pod and node infos.
 */
import type { NodeInfo, PodInfo } from '../node-info.js';

export const MAX_NODE_SCORE = 100;

export interface Score {
  readonly name: string;
  readonly weight: number;
  score(pod: PodInfo, nodes: readonly NodeInfo[]): number[];
}

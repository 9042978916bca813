/**
 * One scheduling decision, as pure functions: run the filters over every node, score the
 * nodes that fit, pick the best (ties broken at random). When nothing fits, the result
 * carries the Kubernetes summary of why: "0/3 nodes are available: 1 node(s) had untolerated
 * taint {k: v}, 2 Insufficient cpu." (each "count reason" once, sorted as strings).
 */
import { DEFAULT_FILTERS, type Filter } from './filters/index.js';
import type { NodeInfo, PodInfo } from './node-info.js';
import { DEFAULT_SCORES, type Score } from './scoring/index.js';

export const NO_NODES_MESSAGE = 'no nodes available to schedule pods';

export interface Plugins {
  filters: readonly Filter[];
  scores: readonly Score[];
  /** Uniform in [0, 1); replaceable for deterministic tests. */
  random: () => number;
}

export const DEFAULT_PLUGINS: Plugins = { filters: DEFAULT_FILTERS, scores: DEFAULT_SCORES, random: Math.random };

export type ScheduleResult =
  | { ok: true; node: string; feasible: number; score: number }
  | { ok: false; message: string; reasons: Map<string, number> };

/** The reasons the first rejecting filter gives for this node (empty: the node fits). */
export function nodeRejections(pod: PodInfo, node: NodeInfo, filters: readonly Filter[]): readonly string[] {
  for (const f of filters) {
    const r = f.filter(pod, node);
    if (r.length) return r;
  }
  return [];
}

export function fitErrorMessage(total: number, reasons: ReadonlyMap<string, number>): string {
  if (total === 0) return NO_NODES_MESSAGE;
  const parts = [...reasons].map(([reason, n]) => `${n} ${reason}`).sort();
  return `0/${total} nodes are available${parts.length ? `: ${parts.join(', ')}` : ''}.`;
}

/** Summed weighted scores per node. */
export function scoreNodes(pod: PodInfo, nodes: readonly NodeInfo[], scores: readonly Score[]): number[] {
  const total = nodes.map(() => 0);
  for (const s of scores) {
    const v = s.score(pod, nodes);
    for (let i = 0; i < nodes.length; i++) total[i] = (total[i] ?? 0) + (v[i] ?? 0) * s.weight;
  }
  return total;
}

/** Index of the highest score; among equal best scores each is equally likely. */
export function selectHost(scores: readonly number[], random: () => number): number {
  let best = -1, bestScore = -Infinity, ties = 0;
  for (let i = 0; i < scores.length; i++) {
    const s = scores[i] as number;
    if (s > bestScore) { best = i; bestScore = s; ties = 1; }
    else if (s === bestScore) {
      ties++;
      if (random() * ties < 1) best = i; // reservoir sampling over the ties
    }
  }
  return best;
}

export function schedulePod(pod: PodInfo, nodes: readonly NodeInfo[], plugins: Plugins = DEFAULT_PLUGINS): ScheduleResult {
  const feasible: NodeInfo[] = [];
  const reasons = new Map<string, number>();
  for (const n of nodes) {
    const r = nodeRejections(pod, n, plugins.filters);
    if (r.length === 0) { feasible.push(n); continue; }
    for (const reason of new Set(r)) reasons.set(reason, (reasons.get(reason) ?? 0) + 1);
  }
  if (feasible.length === 0) return { ok: false, message: fitErrorMessage(nodes.length, reasons), reasons };
  if (feasible.length === 1) return { ok: true, node: (feasible[0] as NodeInfo).name, feasible: 1, score: 0 };
  const scores = scoreNodes(pod, feasible, plugins.scores);
  const i = selectHost(scores, plugins.random);
  return { ok: true, node: (feasible[i] as NodeInfo).name, feasible: feasible.length, score: scores[i] ?? 0 };
}

/**
 * A filter decides whether a pod may run on a node. It returns the reasons it may not (the
 * Kubernetes wording, counted per reason in the FailedScheduling summary); an empty list
 * means the node fits. Filters are pure: they read the pod and node info and change nothing.
 */
import type { NodeInfo, PodInfo } from '../node-info.js';

export interface Filter {
  readonly name: string;
  filter(pod: PodInfo, node: NodeInfo): readonly string[];
}


/** The shared "fits" answer (no allocation per node). */
export const FITS: readonly string[] = Object.freeze([]);

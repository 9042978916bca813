/**
 * Zones and their disruption states. A node's zone is its region and zone labels
 * (topology.kubernetes.io/*, falling back to the failure-domain.beta.kubernetes.io/* ones);
 * unlabeled nodes share the zone "". Per zone, from the Ready conditions of its nodes:
 *  - FullDisruption: no node is Ready;
 *  - PartialDisruption: more than 2 nodes are not Ready and they are at least
 *    --unhealthy-zone-threshold of the zone;
 *  - Normal otherwise.
 * Eviction rate per state: Normal --node-eviction-rate; PartialDisruption
 * --secondary-node-eviction-rate in clusters larger than --large-cluster-size-threshold, else 0;
 * FullDisruption --node-eviction-rate — unless every zone is fully disrupted, when the controller
 * blames itself (or the network) rather than the nodes and stops evicting altogether.
 */
import type { KubeObject } from '../../../../api/resources/types.js';
import type { NodeCondition } from './node-conditions.js';

export type ZoneState = 'Initial' | 'Normal' | 'PartialDisruption' | 'FullDisruption';

/** Nodes with this label do not count in their zone's state. */
export const LABEL_EXCLUDE_DISRUPTION = 'node.kubernetes.io/exclude-disruption';

export function zoneKey(node: KubeObject): string {
  const l = node.metadata?.labels ?? {};
  const region = l['topology.kubernetes.io/region'] || l['failure-domain.beta.kubernetes.io/region'] || '';
  const zone = l['topology.kubernetes.io/zone'] || l['failure-domain.beta.kubernetes.io/zone'] || '';
  if (!region && !zone) return '';
  return `${region}:\u0000:${zone}`;
}

export function excludedFromDisruption(node: KubeObject): boolean {
  return Object.hasOwn(node.metadata?.labels ?? {}, LABEL_EXCLUDE_DISRUPTION);
}

/** The number of not-Ready nodes and the zone's state. */
export function computeZoneState(ready: ReadonlyArray<NodeCondition | undefined>, unhealthyThreshold: number): { notReady: number; state: ZoneState } {
  let readyNodes = 0;
  let notReady = 0;
  for (const c of ready) if (c?.status === 'True') readyNodes++; else notReady++;
  if (readyNodes === 0 && notReady > 0) return { notReady, state: 'FullDisruption' };
  if (notReady > 2 && notReady / (notReady + readyNodes) >= unhealthyThreshold) return { notReady, state: 'PartialDisruption' };
  return { notReady, state: 'Normal' };
}

export interface EvictionRates {
  /** --node-eviction-rate */
  healthy: number;
  /** --secondary-node-eviction-rate */
  secondary: number;
  /** --large-cluster-size-threshold */
  largeClusterThreshold: number;
}

/** Nodes per second a zone in `state` with `zoneSize` nodes may lose. */
export function zoneEvictionRate(state: ZoneState, zoneSize: number, r: EvictionRates): number {
  if (state === 'PartialDisruption') return zoneSize > r.largeClusterThreshold ? r.secondary : 0;
  return r.healthy;
}

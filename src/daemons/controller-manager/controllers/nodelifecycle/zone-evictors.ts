/**
 * The zones' states and their rate-limited queues (Kubernetes' zoneStates with
 * zonePodEvictor / zoneNoExecuteTainter, and handleDisruption's rate decisions).
 *
 * Contract: every method is synchronous, so none interleaves with a queue's `try` between its
 * awaits. A zone is forgotten (its state; its queue stays) when a pass finds no node in it, and
 * starts again from Initial with a fresh queue when a node shows up in it.
 */
import type { KubeObject } from '../../../../api/resources/types.js';
import type { Clock } from '../../deps.js';
import type { NodeCondition } from './node-conditions.js';
import { RateLimitedTimedQueue } from './rate-limited-queue.js';
import { computeZoneState, zoneEvictionRate, zoneKey, type EvictionRates, type ZoneState } from './zones.js';

/** What a pass's zone update means for the nodes: entering or leaving "every zone is down". */
export type DisruptionChange = 'entered-full' | 'left-full' | 'none';

export class ZoneEvictors {
  private readonly states = new Map<string, ZoneState>();
  private readonly queues = new Map<string, RateLimitedTimedQueue>();

  constructor(private readonly rates: EvictionRates, private readonly unhealthyThreshold: number, private readonly clock: Clock) {}

  addZone(node: KubeObject): void {
    const zone = zoneKey(node);
    if (this.states.has(zone)) return;
    this.states.set(zone, 'Initial');
    this.queues.set(zone, new RateLimitedTimedQueue(this.rates.healthy, this.clock));
  }

  queueFor(node: KubeObject): RateLimitedTimedQueue {
    const zone = zoneKey(node);
    let q = this.queues.get(zone);
    if (!q) this.queues.set(zone, q = new RateLimitedTimedQueue(this.rates.healthy, this.clock));
    return q;
  }

  allQueues(): RateLimitedTimedQueue[] { return [...this.queues.values()]; }

  /**
   * Takes in this pass's Ready conditions per zone and sets each zone's eviction rate; says
   * which zones changed state.
   */
  update(zoneReady: ReadonlyMap<string, ReadonlyArray<NodeCondition | undefined>>): { change: DisruptionChange; changed: Array<[string, ZoneState]> } {
    const next = new Map<string, ZoneState>();
    let allAreFull = true;
    for (const [zone, ready] of zoneReady) {
      const { state } = computeZoneState(ready, this.unhealthyThreshold);
      if (state !== 'FullDisruption') allAreFull = false;
      next.set(zone, state);
      if (!this.states.has(zone)) this.states.set(zone, 'Initial');
    }
    for (const zone of [...this.states.keys()]) if (!zoneReady.has(zone)) this.states.delete(zone);
    const allWereFull = [...this.states.values()].every((s) => s === 'FullDisruption');
    const changed: Array<[string, ZoneState]> = [];
    if (allAreFull && allWereFull) return { change: 'none', changed };
    if (allAreFull) {
      // Every node silent at once: more likely our side (or the network) than the nodes.
      for (const zone of this.states.keys()) {
        this.queues.get(zone)?.swapLimiter(0);
        this.states.set(zone, 'FullDisruption');
        changed.push([zone, 'FullDisruption']);
      }
      return { change: 'entered-full', changed };
    }
    for (const [zone, state] of this.states) {
      const to = next.get(zone) ?? state;
      if (to === state && !allWereFull) continue;
      if (to !== 'Initial') this.queues.get(zone)?.swapLimiter(zoneEvictionRate(to, zoneReady.get(zone)?.length ?? 0, this.rates));
      this.states.set(zone, to);
      if (to !== state) changed.push([zone, to]);
    }
    return { change: allWereFull ? 'left-full' : 'none', changed };
  }
}

/**
 * One informer per resource (and namespace and selectors) per process. Controllers ask the
 * factory for informers while they are built; `start` then runs every informer not yet
 * running, and `waitForCacheSync` waits for all of them.
 *
 * Each informer resyncs at its own random period in [minResyncPeriod, 2 x minResyncPeriod),
 * so that the resyncs of different resources do not line up.
 */
import { pino, type Logger } from 'pino';
import { realClock, type Clock } from './clock.js';
import { SharedIndexInformer } from './informer.js';
import { listerWatcherFor } from './reflector.js';
import type { ResourceRef, RestClient } from './rest-client.js';

export interface InformerKey extends ResourceRef {
  labelSelector?: string;
  fieldSelector?: string;
}

export interface SharedInformerFactoryOptions {
  client: RestClient;
  /** ms; 0 disables resync. @default 12 hours (the controller manager's --min-resync-period) */
  minResyncPeriodMs?: number;
  clock?: Clock;
  log?: Logger;
  /** Picks the resync period; tests make it deterministic. */
  random?: () => number;
}

export class SharedInformerFactory {
  private readonly informers = new Map<string, SharedIndexInformer>();
  private readonly running = new Map<string, Promise<void>>();

  constructor(private readonly o: SharedInformerFactoryOptions) {}

  private resyncPeriod(): number {
    const min = this.o.minResyncPeriodMs ?? 12 * 3600_000;
    return min > 0 ? Math.floor(min * (1 + (this.o.random ?? Math.random)())) : 0;
  }

  /** The shared informer for this key (created on first use). */
  informerFor(key: InformerKey): SharedIndexInformer {
    const id = JSON.stringify([key.group, key.version, key.resource, key.namespace ?? '', key.labelSelector ?? '', key.fieldSelector ?? '']);
    let inf = this.informers.get(id);
    if (!inf) {
      const { labelSelector, fieldSelector, ...ref } = key;
      inf = new SharedIndexInformer({
        lw: listerWatcherFor(this.o.client, ref, { ...(labelSelector ? { labelSelector } : {}), ...(fieldSelector ? { fieldSelector } : {}) }),
        ref, resyncPeriodMs: this.resyncPeriod(), clock: this.o.clock ?? realClock,
        log: (this.o.log ?? pino({ level: 'silent' })).child({ informer: `${key.resource}${key.group ? '.' + key.group : ''}` }),
      });
      this.informers.set(id, inf);
    }
    return inf;
  }

  /** Starts the informers not yet running; they stop when the signal aborts. */
  start(signal: AbortSignal): void {
    for (const [id, inf] of this.informers) {
      if (this.running.has(id)) continue;
      this.running.set(id, inf.run(signal));
    }
  }

  /** True when every started informer synced; false when the signal aborted first. */
  async waitForCacheSync(signal?: AbortSignal): Promise<boolean> {
    const all = await Promise.all([...this.informers.values()].map((i) => i.waitForSync(signal)));
    return all.every(Boolean);
  }

  /** Resolves when every running informer has stopped. */
  async stopped(): Promise<void> {
    await Promise.all(this.running.values());
  }
}

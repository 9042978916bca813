/**
 * Events about objects (what `kubectl describe` lists), written as core/v1 Events.
 *
 * Contract: `event()` never blocks and never throws: writes happen in the background, at
 * most MAX_PENDING at a time (more are dropped with a debug log); repeats of the same
 * (object, type, reason, message) within AGGREGATE_MS bump `count` and `lastTimestamp` on
 * the existing Event instead of creating another. `flush()` waits for writes in flight.
 * Spam filter (as client-go's): each involved object may cause SPAM_BURST events, then one
 * more per SPAM_REFILL_MS; the rest are dropped. Without it a 1000-replica scale-up spends
 * as many requests on SuccessfulCreate events as on the pods themselves.
 */
import type { Logger } from 'pino';
import { isApiError } from '../../api/meta/status.js';
import type { KubeObject } from '../../api/resources/types.js';
import type { RestClient } from './deps.js';
import { metaTime } from '../../api/meta/time.js';

export type EventType = 'Normal' | 'Warning';

export interface EventRecorder {
  event(obj: KubeObject, type: EventType, reason: string, message: string): void;
  flush(): Promise<void>;
}

const MAX_PENDING = 100;
const AGGREGATE_MS = 10 * 60 * 1000;
const SPAM_BURST = 25;
const SPAM_REFILL_MS = 5 * 60 * 1000;
const SPAM_MAX_OBJECTS = 4096;

export const noopRecorder: EventRecorder = { event: () => undefined, flush: async () => undefined };


export function newEventRecorder(client: RestClient, component: string, log: Logger): EventRecorder {
  const pending = new Set<Promise<void>>();
  const seen = new Map<string, { name: string; namespace: string; count: number; at: number }>();
  const buckets = new Map<string, { tokens: number; at: number }>();

  /** Takes one token of the object's bucket; false when the object has used up its events. */
  function allowed(obj: KubeObject, now: number): boolean {
    const key = obj.metadata?.uid ?? `${obj.kind}/${obj.metadata?.namespace}/${obj.metadata?.name}`;
    let b = buckets.get(key);
    if (!b) {
      if (buckets.size >= SPAM_MAX_OBJECTS) for (const [k, v] of buckets) if (v.tokens >= SPAM_BURST - 1 || now - v.at > SPAM_REFILL_MS * SPAM_BURST) buckets.delete(k);
      b = { tokens: SPAM_BURST, at: now };
      buckets.set(key, b);
    }
    b.tokens = Math.min(SPAM_BURST, b.tokens + (now - b.at) / SPAM_REFILL_MS);
    b.at = now;
    if (b.tokens < 1) return false;
    b.tokens -= 1;
    return true;
  }

  async function write(obj: KubeObject, type: EventType, reason: string, message: string): Promise<void> {
    const namespace = obj.metadata?.namespace || 'default';
    const ref = { group: '', version: 'v1', resource: 'events', namespace };
    const now = Date.now();
    const key = [obj.metadata?.uid, type, reason, message].join('\u0000');
    const prev = seen.get(key);
    if (prev && now - prev.at < AGGREGATE_MS) {
      prev.count++;
      prev.at = now;
      try {
        await client.patch(ref, prev.name, 'merge', { count: prev.count, lastTimestamp: metaTime(now) });
        return;
      } catch (e) {
        if (!(isApiError(e) && e.code === 404)) throw e;
      }
    }
    for (const [k, v] of seen) if (now - v.at >= AGGREGATE_MS) seen.delete(k);
    const name = `${obj.metadata?.name ?? 'object'}.${(BigInt(now) * 1_000_000n + BigInt(Math.floor(Math.random() * 1e6))).toString(16)}`;
    await client.create(ref, {
      apiVersion: 'v1', kind: 'Event', metadata: { name, namespace },
      involvedObject: {
        apiVersion: obj.apiVersion, kind: obj.kind, namespace: obj.metadata?.namespace, name: obj.metadata?.name,
        uid: obj.metadata?.uid, resourceVersion: obj.metadata?.resourceVersion,
      },
      reason, message, type, source: { component }, reportingComponent: component, reportingInstance: component,
      firstTimestamp: metaTime(now), lastTimestamp: metaTime(now), count: 1,
    });
    seen.set(key, { name, namespace, count: 1, at: now });
  }

  return {
    event(obj, type, reason, message) {
      if (!allowed(obj, Date.now())) { log.debug({ reason, object: obj.metadata?.name }, 'event spam filter: dropping one'); return; }
      if (pending.size >= MAX_PENDING) { log.debug({ reason }, 'too many events in flight: dropping one'); return; }
      const p = write(obj, type, reason, message).catch((e: unknown) => {
        log.debug({ err: (e as Error).message, reason }, 'could not record an event');
      }).finally(() => pending.delete(p));
      pending.add(p);
    },
    async flush() { await Promise.allSettled([...pending]); },
  };
}

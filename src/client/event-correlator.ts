/**
 * Kubernetes' event correlator (client-go tools/record), for any component that records
 * core/v1 Events:
 *   1. aggregation: events of one source and object with the same type and reason but more
 *      than `maxEvents` different messages within `aggregateIntervalMs` become one event whose
 *      message is "(combined from similar events): <latest message>";
 *   2. deduplication: an event identical to one already written (same source, object,
 *      fieldPath, type, reason, message) is a PATCH of that event's count and lastTimestamp,
 *      not a new Event (a FailedMount every 2 s is one Event whose count grows);
 *   3. spam filter: a token bucket per source and object, `spamBurst` events and then one per
 *      `spamRefillMs`; what is over it is dropped (the dedup state still counts it, as
 *      client-go's does, so the next patch carries the true count).
 * The caches are bounded (least recently used entries go first).
 * Contract: `correlate` is synchronous and never throws; the caller writes what it decides.
 */
import { realClock, type Clock } from './clock.js';

export interface CorrelatedEvent {
  readonly type: string;
  readonly reason: string;
  readonly message: string;
  readonly involvedObject: { kind?: string; namespace?: string; name?: string; uid?: string; apiVersion?: string; fieldPath?: string };
  readonly source: { component?: string; host?: string };
  readonly reportingComponent?: string;
  readonly reportingInstance?: string;
}

export type Correlation =
  | { readonly action: 'skip' }
  /** Write a new Event named `name` (the message may be the combined one). */
  | { readonly action: 'create'; readonly name: string; readonly message: string; readonly firstTimestamp: number }
  /** Patch Event `name`: count, lastTimestamp (and message, unchanged for a duplicate). */
  | { readonly action: 'patch'; readonly name: string; readonly message: string; readonly count: number; readonly firstTimestamp: number };

export interface EventCorrelatorOptions {
  readonly clock?: Clock;
  /** Names a new Event about the object (e.g. `<object>.<hex time>`). */
  readonly newName: (ev: CorrelatedEvent) => string;
  readonly spamBurst?: number;
  readonly spamRefillMs?: number;
  readonly maxEvents?: number;
  readonly aggregateIntervalMs?: number;
  readonly maxKeys?: number;
}

export const COMBINED_PREFIX = '(combined from similar events): ';

/** A Map used as an LRU: get refreshes, set evicts the oldest past `max`. */
class Lru<V> {
  private readonly m = new Map<string, V>();
  constructor(private readonly max: number) {}
  get(k: string): V | undefined {
    const v = this.m.get(k);
    if (v !== undefined) { this.m.delete(k); this.m.set(k, v); }
    return v;
  }
  set(k: string, v: V): void {
    this.m.delete(k);
    this.m.set(k, v);
    if (this.m.size > this.max) this.m.delete(this.m.keys().next().value as string);
  }
  delete(k: string): void { this.m.delete(k); }
}

const objectKey = (e: CorrelatedEvent): string[] => [
  e.source.component ?? '', e.source.host ?? '', e.involvedObject.kind ?? '', e.involvedObject.namespace ?? '',
  e.involvedObject.name ?? '', e.involvedObject.uid ?? '', e.involvedObject.apiVersion ?? '',
];

export class EventCorrelator {
  private readonly clock: Clock;
  private readonly burst: number;
  private readonly refillMs: number;
  private readonly maxEvents: number;
  private readonly intervalMs: number;
  private readonly spam: Lru<{ tokens: number; at: number }>;
  private readonly aggregates: Lru<{ messages: Set<string>; last: number }>;
  private readonly seen: Lru<{ name: string; count: number; firstTimestamp: number }>;

  constructor(private readonly o: EventCorrelatorOptions) {
    this.clock = o.clock ?? realClock;
    this.burst = o.spamBurst ?? 25;
    this.refillMs = o.spamRefillMs ?? 5 * 60_000;
    this.maxEvents = o.maxEvents ?? 10;
    this.intervalMs = o.aggregateIntervalMs ?? 10 * 60_000;
    const max = o.maxKeys ?? 4096;
    this.spam = new Lru(max);
    this.aggregates = new Lru(max);
    this.seen = new Lru(max);
  }

  correlate(ev: CorrelatedEvent): Correlation {
    const now = this.clock.now();
    // 1. Aggregation by (source, object, type, reason, reporter); the message is the local key.
    const aggKey = [...objectKey(ev), ev.type, ev.reason, ev.reportingComponent ?? '', ev.reportingInstance ?? ''].join('\u0000');
    let agg = this.aggregates.get(aggKey);
    if (!agg || now - agg.last > this.intervalMs) agg = { messages: new Set(), last: now };
    agg.messages.add(ev.message);
    agg.last = now;
    this.aggregates.set(aggKey, agg);
    let key: string;
    let message = ev.message;
    if (agg.messages.size < this.maxEvents) {
      key = [...objectKey(ev), ev.involvedObject.fieldPath ?? '', ev.type, ev.reason, ev.message].join('\u0000');
    } else {
      // Keep the set bounded: the oldest message makes room.
      const first = agg.messages.values().next().value as string;
      if (agg.messages.size > this.maxEvents) agg.messages.delete(first);
      key = aggKey;
      message = COMBINED_PREFIX + ev.message;
    }
    // 2. Deduplication: a repeat patches the Event written before.
    const prev = this.seen.get(key);
    const result: Correlation = prev
      ? { action: 'patch', name: prev.name, message, count: prev.count + 1, firstTimestamp: prev.firstTimestamp }
      : { action: 'create', name: this.o.newName(ev), message, firstTimestamp: now };
    this.seen.set(key, { name: result.name, count: prev ? prev.count + 1 : 1, firstTimestamp: result.firstTimestamp });
    // 3. Spam filter per source and object.
    if (!this.take(objectKey(ev).join('\u0000'), now)) return { action: 'skip' };
    return result;
  }

  private take(key: string, now: number): boolean {
    let b = this.spam.get(key);
    if (!b) b = { tokens: this.burst, at: now };
    b.tokens = Math.min(this.burst, b.tokens + (now - b.at) / this.refillMs);
    b.at = now;
    this.spam.set(key, b);
    if (b.tokens < 1) return false;
    b.tokens -= 1;
    return true;
  }
}

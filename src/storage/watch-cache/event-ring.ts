/**
 * The watch cache's history: recent batches in revision order, so watchers can resume from a
 * revision without touching the backend.
 *
 * Sizing (why not a fixed 100): Kubernetes sizes its history dynamically since v1.19 to keep
 * at least 75 s of events (the 60 s bookmark period plus margin), because a fixed 100 events is
 * a fraction of a second of history on a busy resource and lagging clients then fall into a
 * 410 → relist loop. Here: the ring always keeps at least `minEvents` (the configured
 * --default-watch-cache-size / --watch-cache-sizes value), keeps every batch younger than
 * `window` (75 s) and drops older ones beyond that, and never holds more than `maxEvents`
 * (102 400 as Kubernetes' upper bound, or minEvents if larger) so memory stays bounded.
 *
 * Invariant: every batch with revision >= startRevision() is in the ring.
 *
 * A batch may hold several consecutive revisions (the embedded store's group commit makes one
 * batch of every write it syncs together), so a start revision can fall inside a batch: since()
 * cuts that batch at the start, as a watch delivers only what comes after its resourceVersion.
 */
import type { WatchBatch } from '../interface.js';

interface Entry { readonly batch: WatchBatch; readonly at: number; }

export interface EventRingOptions {
  readonly minEvents: number;
  readonly maxEvents: number;
  readonly windowMs: number;
  readonly now: () => number;
}

export class EventRing {
  private entries: Entry[] = [];
  private head = 0;
  private eventCount = 0;
  /** All events with revision >= start are held. */
  private start: number;

  constructor(private readonly opts: EventRingOptions, fromRevision: number) {
    this.start = fromRevision;
  }

  /** The oldest revision a watch may start from. */
  startRevision(): number { return this.start; }

  get length(): number { return this.eventCount; }

  /** Forget everything: history now begins at fromRevision. */
  reset(fromRevision: number): void {
    this.entries = [];
    this.head = 0;
    this.eventCount = 0;
    this.start = fromRevision;
  }

  push(batch: WatchBatch): void {
    this.entries.push({ batch, at: this.opts.now() });
    this.eventCount += batch.events.length;
    this.trim();
  }

  /** Drops batches that are both beyond the minimum count and older than the window, or beyond the maximum. */
  trim(): void {
    const now = this.opts.now();
    while (this.head < this.entries.length) {
      const e = this.entries[this.head]!;
      const n = e.batch.events.length;
      const overMax = this.eventCount > this.opts.maxEvents;
      const expendable = this.eventCount - n >= this.opts.minEvents && now - e.at > this.opts.windowMs;
      if (!overMax && !expendable) break;
      this.head++;
      this.eventCount -= n;
      this.start = e.batch.revision + 1;
    }
    // Compact the backing array once the dead prefix dominates (amortized O(1) per push).
    if (this.head > 1024 && this.head * 2 > this.entries.length) {
      this.entries = this.entries.slice(this.head);
      this.head = 0;
    }
  }

  /**
   * The events with revision >= fromRevision (which must be >= startRevision()), as batches:
   * the ring's own objects, except the first when it began before fromRevision.
   */
  since(fromRevision: number): WatchBatch[] {
    // Binary search on revision: batches are in increasing revision order.
    let lo = this.head;
    let hi = this.entries.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.entries[mid]!.batch.revision < fromRevision) lo = mid + 1; else hi = mid;
    }
    const out: WatchBatch[] = [];
    for (let i = lo; i < this.entries.length; i++) out.push(this.entries[i]!.batch);
    const first = out.length > 0 ? eventsAfter(out[0]!, fromRevision - 1) : undefined;
    if (first === null) out.shift(); else if (first) out[0] = first;
    return out;
  }
}

/**
 * The part of `batch` after `revision`: the batch itself when it began after it, else a copy
 * with the events of later revisions (null when none is: a batch split among caches keeps the
 * revision of the whole). Each event's revision is its kv.modRevision (a delete's too).
 */
export function eventsAfter(batch: WatchBatch, revision: number): WatchBatch | null {
  const events = batch.events;
  if (events.length === 0 || events[0]!.kv.modRevision > revision) return batch;
  const later = events.filter((e) => e.kv.modRevision > revision);
  return later.length === 0 ? null : { events: later, revision: batch.revision };
}

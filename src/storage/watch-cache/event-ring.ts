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

  /** Batches with revision >= fromRevision (fromRevision must be >= startRevision()). */
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
    return out;
  }
}

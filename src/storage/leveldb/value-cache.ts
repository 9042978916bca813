/**
 * The current values of recently written keys, so an update or delete can produce prevKv
 * without reading LevelDB. Two tiers: `pending` holds values of decided-but-not-yet-durable
 * writes (never evicted: the store cannot serve them yet), `recent` holds committed values in
 * least-recently-used order within a byte budget. Entries carry their modRevision; a lookup only
 * answers for the exact revision the caller's index says is current.
 */
export class ValueCache {
  private readonly pending = new Map<string, { rev: number; value: Buffer }>();
  private readonly recent = new Map<string, { rev: number; value: Buffer }>();
  private recentBytes = 0;
  /**
   * A live iterator over `recent` in insertion (LRU) order, kept across evictions. A fresh
   * `keys().next()` per eviction would rescan every slot deleted at the front of the Map's
   * table (V8 compacts them only on rehash): ~25 µs per write once the cache is full.
   */
  private evictOrder: Iterator<string> | undefined;

  constructor(private readonly budgetBytes: number) {}

  /** The value of `key` at revision `rev`, when cached. */
  get(key: string, rev: number): Buffer | undefined {
    const p = this.pending.get(key);
    if (p && p.rev === rev) return p.value;
    const r = this.recent.get(key);
    if (!r || r.rev !== rev) return undefined;
    // Refresh its position in the LRU order.
    this.recent.delete(key);
    this.recent.set(key, r);
    return r.value;
  }

  /** A PUT was decided (not yet durable). */
  decided(key: string, rev: number, value: Buffer): void {
    this.pending.set(key, { rev, value });
  }

  /** A PUT became durable: it moves to the LRU tier. */
  committed(key: string, rev: number): void {
    const p = this.pending.get(key);
    if (!p || p.rev !== rev) return;
    this.pending.delete(key);
    if (this.budgetBytes <= 0 || p.value.length > this.budgetBytes / 8) return;
    this.dropRecent(key);
    this.recent.set(key, p);
    this.recentBytes += p.value.length;
    while (this.recentBytes > this.budgetBytes) {
      let oldest = this.evictOrder?.next();
      if (!oldest || oldest.done) {
        // A finished iterator stays finished: start a new one at the (current) oldest entry.
        this.evictOrder = this.recent.keys();
        oldest = this.evictOrder.next();
        if (oldest.done) break;
      }
      this.dropRecent(oldest.value);
    }
  }

  /** The key was deleted (decided): forget it in both tiers. */
  deleted(key: string): void {
    this.pending.delete(key);
    this.dropRecent(key);
  }

  private dropRecent(key: string): void {
    const r = this.recent.get(key);
    if (!r) return;
    this.recent.delete(key);
    this.recentBytes -= r.value.length;
  }
}

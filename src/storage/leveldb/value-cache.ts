/**
 * The current values of recently written keys, so an update or delete can produce prevKv
 * without reading LevelDB. One map holds, per key, the value of its newest decided write:
 * pending (decided, not yet durable: never evicted, the store cannot serve it yet) or durable
 * (counted against the byte budget, evicted least recently used first). Entries carry their
 * modRevision; a lookup only answers for the exact revision the caller asks for.
 *
 * One map (not a pending and a durable tier) keeps a create at two map operations on the write
 * path and one when it commits.
 */
interface Entry {
  readonly rev: number;
  readonly value: Buffer;
  durable: boolean;
}

export class ValueCache {
  /** In insertion order, which is least recently used first (a read hit re-inserts). */
  private readonly entries = new Map<string, Entry>();
  /** Bytes of durable values. */
  private bytes = 0;
  /**
   * A live iterator over `entries` in insertion (LRU) order, kept across evictions. A fresh
   * `keys().next()` per eviction would rescan every slot deleted at the front of the Map's
   * table (V8 compacts them only on rehash): ~25 µs per write once the cache is full.
   */
  private evictOrder: Iterator<[string, Entry]> | undefined;

  constructor(private readonly budgetBytes: number) {}

  /** The value of `key` at revision `rev`, when cached. */
  get(key: string, rev: number): Buffer | undefined {
    const e = this.entries.get(key);
    if (!e || e.rev !== rev) return undefined;
    if (e.durable) {
      // Refresh its position in the LRU order.
      this.entries.delete(key);
      this.entries.set(key, e);
    }
    return e.value;
  }

  /** A PUT was decided (not yet durable); it replaces the key's earlier value. */
  decided(key: string, rev: number, value: Buffer): void {
    this.drop(key);
    this.entries.set(key, { rev, value, durable: false });
  }

  /** A PUT became durable: it now counts against the budget and may be evicted. */
  committed(key: string, rev: number): void {
    const e = this.entries.get(key);
    if (!e || e.rev !== rev || e.durable) return;
    if (this.budgetBytes <= 0 || e.value.length > this.budgetBytes / 8) {
      this.entries.delete(key);
      return;
    }
    e.durable = true;
    this.bytes += e.value.length;
    // Bounded: each step drops a durable entry or advances past a pending one; a second pass
    // from the start happens at most once per call (the budget then holds only this entry).
    let restarts = 0;
    while (this.bytes > this.budgetBytes) {
      let next = this.evictOrder?.next();
      if (!next || next.done) {
        // A finished iterator stays finished: start a new one at the (current) oldest entry.
        if (restarts++ > 1) break;
        this.evictOrder = this.entries.entries();
        next = this.evictOrder.next();
        if (next.done) break;
      }
      const [k, old] = next.value;
      if (old.durable && this.entries.get(k) === old) {
        this.entries.delete(k);
        this.bytes -= old.value.length;
      }
    }
  }

  /** The key was deleted (decided): forget it. */
  deleted(key: string): void {
    this.drop(key);
  }

  private drop(key: string): void {
    const e = this.entries.get(key);
    if (!e) return;
    this.entries.delete(key);
    if (e.durable) this.bytes -= e.value.length;
  }
}

/**
 * A small answer cache (the node agent's webhook authenticator and authorizer, the components'
 * delegated authentication and authorization): entries expire
 * after their own TTL, the oldest entry goes when the cache is full, and concurrent lookups of
 * one key share a single in-flight computation (so a burst of requests with one token makes
 * one TokenReview). Failed computations are not cached. Single-threaded (event loop) use only.
 */
export class TtlCache<V> {
  private readonly entries = new Map<string, { value: V; expires: number }>();
  private readonly inflight = new Map<string, Promise<V>>();

  constructor(private readonly maxEntries = 4096, private readonly now: () => number = Date.now) {}

  /** The cached value, else `compute()`, cached for `ttlMs(value)` (0 or less: not cached). */
  async get(key: string, compute: () => Promise<V>, ttlMs: (v: V) => number): Promise<V> {
    const hit = this.entries.get(key);
    if (hit) {
      if (hit.expires > this.now()) return hit.value;
      this.entries.delete(key);
    }
    const running = this.inflight.get(key);
    if (running) return running;
    const p = compute().then((value) => {
      const ttl = ttlMs(value);
      if (ttl > 0) {
        if (this.entries.size >= this.maxEntries) {
          const oldest = this.entries.keys().next();
          if (!oldest.done) this.entries.delete(oldest.value);
        }
        this.entries.set(key, { value, expires: this.now() + ttl });
      }
      return value;
    }).finally(() => { this.inflight.delete(key); });
    this.inflight.set(key, p);
    return p;
  }

  get size(): number { return this.entries.size; }
}

/**
 * Leases for keys with a time to live (events, --event-ttl).
 *
 * One lease per key would mean one lease grant per write and thousands of live leases in
 * etcd. Like kube-apiserver's lease manager, a granted lease is shared by every write with
 * the same TTL for a short reuse window: the lease is granted for ttl + window seconds and
 * reused while it still has at least ttl seconds left, so a key lives between ttl and
 * ttl + window seconds. The window is 5 % of the TTL, at least 1 s and at most 60 s.
 *
 * Concurrent writes with one TTL share one in-flight grant. Leases are never kept alive:
 * expiry is their purpose.
 */
import type { LeaseClient } from 'etcd3';

const MAX_REUSE_SECONDS = 60;
const REUSE_FRACTION = 0.05;

interface Bucket {
  readonly id: string;
  /** Local clock time (ms) after which etcd may have dropped the lease. */
  readonly expiresAtMs: number;
}

export class LeaseManager {
  private readonly buckets = new Map<number, Bucket>();
  private readonly pending = new Map<number, Promise<Bucket>>();

  constructor(
    private readonly client: LeaseClient,
    private readonly callOptions: () => { deadline: number },
    private readonly now: () => number = Date.now,
  ) {}

  /** The lease id to attach to a write with this TTL (seconds, > 0). */
  async leaseFor(ttlSeconds: number): Promise<string> {
    const ttl = Math.max(1, Math.ceil(ttlSeconds));
    const b = this.buckets.get(ttl);
    if (b && b.expiresAtMs - this.now() >= ttl * 1000) return b.id;
    let p = this.pending.get(ttl);
    if (!p) {
      p = this.grant(ttl).finally(() => this.pending.delete(ttl));
      this.pending.set(ttl, p);
    }
    return (await p).id;
  }

  /** Forgets a lease etcd no longer knows (revoked or expired early), so the next write gets a new one. */
  forget(leaseId: string): void {
    for (const [ttl, b] of this.buckets) if (b.id === leaseId) this.buckets.delete(ttl);
  }

  private async grant(ttl: number): Promise<Bucket> {
    const reuse = Math.min(MAX_REUSE_SECONDS, Math.max(1, Math.ceil(ttl * REUSE_FRACTION)));
    const startedAt = this.now();
    const res = await this.client.leaseGrant({ TTL: ttl + reuse }, this.callOptions());
    if (res.error) throw new Error(`lease grant failed: ${res.error}`);
    // Count from before the request so the local expiry is never later than etcd's.
    const bucket: Bucket = { id: String(res.ID), expiresAtMs: startedAt + Number(res.TTL) * 1000 };
    this.buckets.set(ttl, bucket);
    this.prune();
    return bucket;
  }

  private prune(): void {
    const now = this.now();
    for (const [ttl, b] of this.buckets) if (b.expiresAtMs <= now) this.buckets.delete(ttl);
  }
}

/**
 * The per-node delay before a DaemonSet deletes (and so replaces) another failed pod: the
 * first failure goes at once, each further one within the window doubles the wait up to a cap.
 * A node quiet for twice the cap starts afresh. Kubernetes uses 1 s doubling to 15 min; both
 * are options so tests can shrink them.
 *
 * Contract: in memory only; a restarted controller forgets every delay.
 */
interface Entry { delayMs: number; lastMs: number }

export class FailedPodBackoff {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly initialMs: number, private readonly maxMs: number, private readonly now: () => number = Date.now) {}

  /**
   * 0 when the failed pod of `key` (DaemonSet key and node) may be deleted now, which starts
   * the next delay; else how long until it may.
   */
  take(key: string): number {
    const now = this.now();
    const e = this.entries.get(key);
    if (e && now - e.lastMs < e.delayMs) return e.delayMs - (now - e.lastMs);
    const fresh = !e || now - e.lastMs > 2 * this.maxMs;
    this.entries.set(key, { delayMs: fresh ? this.initialMs : Math.min(e.delayMs * 2, this.maxMs), lastMs: now });
    return 0;
  }

  /** Forgets every node of a DaemonSet (`prefix` is its key and a slash). */
  forget(prefix: string): void {
    for (const k of this.entries.keys()) if (k.startsWith(prefix)) this.entries.delete(k);
  }
}

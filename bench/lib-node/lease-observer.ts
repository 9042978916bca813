/**
 * Watches the node Leases in kube-node-lease the way the node-lifecycle controller judges
 * them: a node is healthy while the observer has seen its Lease's renewTime change within the
 * grace period (default 40 s, --node-monitor-grace-period), timed by the observer's own clock
 * when the change arrived. `scan` (called every second by `run`) records, per window, the
 * oldest such age seen and the nodes that went past the grace period ("would be NotReady").
 * Contract: `run` re-watches after a closed stream and relists after an error (bounded
 * backoff); it ends when the signal aborts.
 */
import type { KubeObject } from '../../src/api/resources/types.js';
import type { ResourceRef, RestClient } from '../../src/client/rest-client.js';
import { watchLoop } from './watch-loop.js';

const LEASES: ResourceRef = { group: 'coordination.k8s.io', version: 'v1', resource: 'leases', namespace: 'kube-node-lease' };

type LeaseLike = KubeObject & { spec?: { renewTime?: string } };

export interface WindowReport { leases: number; maxAgeMs: number; stale: string[]; events: number }

export class LeaseObserver {
  private readonly seen = new Map<string, { renewTime: string; at: number }>();
  private maxAgeMs = 0;
  private readonly stale = new Set<string>();
  private events = 0;
  relists = 0;

  constructor(private readonly client: RestClient, private readonly graceMs = 40_000) {}

  get count(): number { return this.seen.size; }

  /** How many of these nodes have had a renewal observed. */
  renewedCount(prefix: string): number {
    let n = 0;
    for (const k of this.seen.keys()) if (k.startsWith(prefix)) n++;
    return n;
  }

  private see(type: string, l: LeaseLike): void {
    const name = l.metadata?.name ?? '';
    if (!name) return;
    if (type === 'DELETED') { this.seen.delete(name); return; }
    const rt = l.spec?.renewTime ?? '';
    const prev = this.seen.get(name);
    if (!prev || prev.renewTime !== rt) this.seen.set(name, { renewTime: rt, at: performance.now() });
    this.events++;
  }

  scan(): void {
    const now = performance.now();
    for (const [name, s] of this.seen) {
      const age = now - s.at;
      if (age > this.maxAgeMs) this.maxAgeMs = age;
      if (age > this.graceMs) this.stale.add(name);
    }
  }

  /** The window so far, then starts a new one. */
  takeWindow(): WindowReport {
    this.scan();
    const r = { leases: this.seen.size, maxAgeMs: this.maxAgeMs, stale: [...this.stale], events: this.events };
    this.maxAgeMs = 0;
    this.stale.clear();
    this.events = 0;
    return r;
  }

  private async relist(): Promise<string> {
    const list = await this.client.list(LEASES, {});
    this.relists++;
    for (const l of list.items as LeaseLike[]) this.see('ADDED', l);
    return list.metadata?.resourceVersion ?? '';
  }

  /** Lists, then watches until the signal aborts; scans every second. */
  async run(signal: AbortSignal): Promise<{ done: Promise<void> }> {
    const ticker = setInterval(() => this.scan(), 1000);
    try {
      const w = await watchLoop(this.client, LEASES, () => this.relist(), (type, obj) => this.see(type, obj as LeaseLike), signal);
      return { done: w.done.finally(() => clearInterval(ticker)) };
    } catch (e) {
      clearInterval(ticker);
      throw e;
    }
  }
}

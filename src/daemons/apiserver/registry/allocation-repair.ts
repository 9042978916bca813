/**
 * The periodic repair of the ClusterIP and NodePort bitmaps (Kubernetes' ipallocator and
 * portallocator repair controllers), safe while several API servers share the store:
 *  1. read both bitmaps consistently (snapshot, with their resourceVersions);
 *  2. list the services consistently — after the snapshot, so every service created before it
 *     is seen;
 *  3. write `used ∪ recent leaks` to each bitmap with a compare-and-swap on the snapshot's
 *     resourceVersion. An allocation by any server between 1 and 3 changed the bitmap, so the
 *     write fails and the repair starts over: a repair never frees what a running create holds.
 * A bit set in the bitmap but used by no service is a leak (a create in flight elsewhere, or a
 * server killed between allocating and writing): it is kept for LEAK_REPAIRS repairs before it
 * is freed, as Kubernetes does, so a create in flight on another server keeps its value.
 * A service whose value is outside the range or held twice is logged.
 */
import type { Logger } from 'pino';
import type { KubeObject } from '../../../api/resources/types.js';
import type { ObjectStore } from '../../../storage/object-store-types.js';
import type { RangeSnapshot } from './bitmap-range.js';
import type { IpAllocator } from './ip-allocator.js';
import type { PortAllocator } from './port-allocator.js';
import { ServiceAllocation } from './service-allocation.js';

/** Repairs a leaked bit survives before it is freed (Kubernetes' numRepairsBeforeLeakCleanup). */
export const LEAK_REPAIRS = 3;
/** Kubernetes repairs every 3 minutes. */
export const DEFAULT_REPAIR_INTERVAL_MS = 180_000;
const MAX_ATTEMPTS = 10;

export interface RepairResult {
  /** Values held by two services (should never happen; logged). */
  duplicates: string[];
  /** Leaked bits freed by this repair. */
  freed: number;
  /** Compare-and-swap attempts it took. */
  attempts: number;
}

export interface AllocationRepairOptions {
  store: ObjectStore;
  ips: IpAllocator;
  nodePorts: PortAllocator;
  log: Logger;
  intervalMs?: number;
}

/** The offsets a range's new bitmap holds: what services use, plus leaks not yet old enough. */
function merged(snap: RangeSnapshot, used: Set<number>, leaks: Map<number, number>): { offsets: Set<number>; freed: number; leaks: Map<number, number> } {
  const offsets = new Set(used), next = new Map<number, number>();
  let freed = 0;
  for (const off of snap.offsets) {
    if (used.has(off)) continue;
    const seen = (leaks.get(off) ?? 0) + 1;
    if (seen < LEAK_REPAIRS) { offsets.add(off); next.set(off, seen); } else freed++;
  }
  return { offsets, freed, leaks: next };
}

export class AllocationRepair {
  private ipLeaks = new Map<number, number>();
  private portLeaks = new Map<number, number>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;

  constructor(private readonly o: AllocationRepairOptions) {}

  /** One repair (retried while other servers allocate meanwhile). */
  async runOnce(): Promise<RepairResult> {
    for (let attempt = 1; ; attempt++) {
      const ipSnap = await this.o.ips.snapshot();
      const portSnap = await this.o.nodePorts.snapshot();
      const { items } = await this.o.store.list({ resource: 'services', group: '', namespace: '' });
      const { usedIps, usedPorts, duplicates } = this.usedOffsets(items);
      const ip = merged(ipSnap, usedIps, this.ipLeaks), port = merged(portSnap, usedPorts, this.portLeaks);
      const ipOk = await this.o.ips.restore(ipSnap, ip.offsets);
      const portOk = ipOk && await this.o.nodePorts.restore(portSnap, port.offsets);
      if (ipOk && portOk) {
        this.ipLeaks = ip.leaks; this.portLeaks = port.leaks;
        if (duplicates.length) this.o.log.error({ duplicates }, 'services share a cluster IP or node port');
        return { duplicates, freed: ip.freed + port.freed, attempts: attempt };
      }
      if (attempt >= MAX_ATTEMPTS) throw new Error(`allocation repair: the bitmaps kept changing (${attempt} attempts)`);
      await new Promise((r) => setTimeout(r, 50 * attempt * Math.random()));
    }
  }

  private usedOffsets(items: KubeObject[]): { usedIps: Set<number>; usedPorts: Set<number>; duplicates: string[] } {
    const usedIps = new Set<number>(), usedPorts = new Set<number>(), duplicates: string[] = [];
    for (const s of items) {
      const { ips, nodePorts } = ServiceAllocation.usedBy([s]);
      for (const ip of ips) {
        const off = this.o.ips.offsetOf(ip);
        if (off === undefined) continue; // outside the range (the range was changed): not ours to hold
        if (usedIps.has(off)) duplicates.push(ip); else usedIps.add(off);
      }
      for (const p of nodePorts) {
        const off = this.o.nodePorts.offsetOf(p);
        if (off === undefined) continue;
        if (usedPorts.has(off)) duplicates.push(String(p)); else usedPorts.add(off);
      }
    }
    return { usedIps, usedPorts, duplicates };
  }

  start(): void {
    this.timer = setInterval(() => {
      if (this.running) return;
      this.running = this.runOnce()
        .catch((e: unknown) => this.o.log.warn({ err: e }, 'service allocation repair failed'))
        .finally(() => { this.running = undefined; });
    }, this.o.intervalMs ?? DEFAULT_REPAIR_INTERVAL_MS);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }
}

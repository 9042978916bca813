/** Service node ports from --service-node-port-range (persisted bitmap, see bitmap-range.ts). */
import type { ObjectStore } from '../../../storage/object-store-types.js';
import { BitmapRange, type RangeSnapshot } from './bitmap-range.js';

export class PortAllocator {
  private readonly range: BitmapRange;

  constructor(store: ObjectStore, readonly base: number, readonly size: number) {
    this.range = new BitmapRange(store, 'servicenodeports', `${base}-${base + size - 1}`, size);
  }

  contains(port: number): boolean { return Number.isInteger(port) && port >= this.base && port < this.base + this.size; }
  rangeText(): string { return `${this.base}-${this.base + this.size - 1}`; }

  async allocateNext(): Promise<number> { return this.base + await this.range.allocate(); }

  async allocate(port: number): Promise<void> {
    if (!this.contains(port)) throw new RangeError(String(port));
    await this.range.allocate(port - this.base);
  }

  async release(port: number): Promise<void> {
    if (this.contains(port)) await this.range.release(port - this.base);
  }

  offsetOf(port: number): number | undefined { return this.contains(port) ? port - this.base : undefined; }
  portAt(offset: number): number { return this.base + offset; }
  snapshot(): Promise<RangeSnapshot> { return this.range.snapshot(); }
  restore(snap: RangeSnapshot, offsets: Iterable<number>): Promise<boolean> { return this.range.restore(snap, offsets); }

  async reset(ports: Iterable<number>): Promise<void> {
    const offs: number[] = [];
    for (const p of ports) if (this.contains(p)) offs.push(p - this.base);
    await this.range.reset(offs);
  }
}

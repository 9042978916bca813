/**
 * A persisted allocation bitmap (Kubernetes' RangeAllocation): one object in the store whose
 * `data` is a base64 bitmap over a range of `size` items. Every change is a guaranteedUpdate
 * (compare-and-swap), so allocations are unique across API servers sharing the store.
 */
import { ApiError } from '../../../api/meta/status.js';
import type { KubeObject } from '../../../api/resources/types.js';
import { isStorageError, StorageError } from '../../../storage/errors.js';
import type { ObjectRef, ObjectStore } from '../../../storage/object-store-types.js';

export interface RangeSnapshot { readonly offsets: ReadonlySet<number>; readonly resourceVersion: string }

export class RangeFullError extends Error { override readonly name = 'RangeFullError'; }
export class AlreadyAllocatedError extends Error { override readonly name = 'AlreadyAllocatedError'; }

function getBit(b: Buffer, i: number): boolean { return (b[i >> 3]! & (1 << (i & 7))) !== 0; }
function setBit(b: Buffer, i: number, v: boolean): void {
  if (v) b[i >> 3] = b[i >> 3]! | (1 << (i & 7)); else b[i >> 3] = b[i >> 3]! & ~(1 << (i & 7));
}

/**
 * One bitmap object takes every allocation of every API server: under a burst of creates a
 * guaranteedUpdate can lose its bounded compare-and-swap race. Kubernetes retries without a
 * bound; we retry the whole update a few more times, with jitter, before giving up.
 */
const CONTENDED_ROUNDS = 8;

async function contended<T>(fn: () => Promise<T>): Promise<T> {
  for (let round = 1; ; round++) {
    try {
      return await fn();
    } catch (e) {
      if (!isStorageError(e, 'Conflict') || round >= CONTENDED_ROUNDS) throw e;
      await new Promise((r) => setTimeout(r, Math.random() * 20 * round));
    }
  }
}

export class BitmapRange {
  private readonly ref: ObjectRef;

  constructor(private readonly store: ObjectStore, name: string, private readonly rangeText: string, readonly size: number) {
    this.ref = { resource: 'ranges', group: '', namespace: '', name };
  }

  private bitmapOf(obj: KubeObject | undefined): Buffer {
    const b = Buffer.alloc(Math.ceil(this.size / 8));
    if (obj && obj.range === this.rangeText && typeof obj.data === 'string') Buffer.from(obj.data, 'base64').copy(b, 0, 0, b.length);
    return b;
  }

  private objectOf(cur: KubeObject | undefined, bitmap: Buffer): KubeObject {
    return { kind: 'RangeAllocation', apiVersion: 'v1', metadata: { ...(cur?.metadata ?? {}), name: this.ref.name }, range: this.rangeText, data: bitmap.toString('base64') };
  }

  /** Allocates offset `i` (or a random free one when undefined); returns the offset. */
  async allocate(i?: number): Promise<number> {
    let chosen = -1;
    await contended(() => this.store.guaranteedUpdate(this.ref, (cur) => {
      const b = this.bitmapOf(cur);
      if (i !== undefined) {
        if (getBit(b, i)) throw new AlreadyAllocatedError(String(i));
        chosen = i;
      } else {
        chosen = -1;
        const start = Math.floor(Math.random() * this.size);
        for (let k = 0; k < this.size; k++) {
          const j = (start + k) % this.size;
          if (!getBit(b, j)) { chosen = j; break; }
        }
        if (chosen < 0) throw new RangeFullError('range is full');
      }
      setBit(b, chosen, true);
      return this.objectOf(cur, b);
    }));
    return chosen;
  }

  async release(i: number): Promise<void> {
    await contended(() => this.store.guaranteedUpdate(this.ref, (cur) => {
      const b = this.bitmapOf(cur);
      setBit(b, i, false);
      return this.objectOf(cur, b);
    }));
  }

  async isAllocated(i: number): Promise<boolean> {
    try {
      return getBit(this.bitmapOf(await this.store.get(this.ref)), i);
    } catch (e) {
      if (e instanceof ApiError) throw e;
      return false;
    }
  }

  /**
   * The stored bitmap, read consistently (never from a cache): the allocated offsets and the
   * object's resourceVersion ('' when there is no bitmap yet), for a repair's compare-and-swap.
   */
  async snapshot(): Promise<RangeSnapshot> {
    let cur: KubeObject | undefined;
    try { cur = await this.store.get(this.ref); } catch (e) { if (!isStorageError(e, 'KeyNotFound')) throw e; }
    const b = this.bitmapOf(cur), offsets = new Set<number>();
    for (let i = 0; i < this.size; i++) if (getBit(b, i)) offsets.add(i);
    return { offsets, resourceVersion: cur?.metadata?.resourceVersion ?? '' };
  }

  /**
   * Writes exactly these offsets if the bitmap is still what `snap` read (compare-and-swap on
   * its resourceVersion); false when another server changed it meanwhile (repair again).
   */
  async restore(snap: RangeSnapshot, offsets: Iterable<number>): Promise<boolean> {
    const b = Buffer.alloc(Math.ceil(this.size / 8));
    for (const i of offsets) if (i >= 0 && i < this.size) setBit(b, i, true);
    try {
      await this.store.guaranteedUpdate(this.ref, (cur) => {
        if ((cur?.metadata?.resourceVersion ?? '') !== snap.resourceVersion) throw new StorageError('Conflict', 'the allocation bitmap changed during repair');
        return this.objectOf(cur, b);
      });
      return true;
    } catch (e) {
      if (isStorageError(e, 'Conflict')) return false;
      throw e;
    }
  }

  /** Replaces the bitmap with exactly these offsets (tests; a live cluster repairs with snapshot/restore). */
  async reset(offsets: Iterable<number>): Promise<void> {
    const b = Buffer.alloc(Math.ceil(this.size / 8));
    for (const i of offsets) if (i >= 0 && i < this.size) setBit(b, i, true);
    await this.store.guaranteedUpdate(this.ref, (cur) => this.objectOf(cur, b));
  }
}

/**
 * The watch cache's copy of the current objects: key → KeyValue, plus the keys in ascending
 * order (UTF-16 order equals byte order for the ASCII keys we store) for ranges and pagination.
 *
 * The order is kept in chunks of at most CHUNK_MAX sorted keys (a flat B-tree level): an
 * insert or delete costs two binary searches and a splice inside one chunk, so it stays
 * cheap at 100k+ keys, where one flat array would move half of it on every insert.
 */
import type { KeyValue } from '../interface.js';

const CHUNK_MAX = 512;

export class SortedStore {
  private readonly map = new Map<string, KeyValue>();
  private chunks: string[][] = [];

  get size(): number { return this.map.size; }

  get(key: string): KeyValue | undefined { return this.map.get(key); }

  put(kv: KeyValue): void {
    // One hash lookup: the size grows only when the key is new.
    const size = this.map.size;
    this.map.set(kv.key, kv);
    if (this.map.size !== size) this.insertKey(kv.key);
  }

  delete(key: string): void {
    if (!this.map.delete(key)) return;
    const c = this.chunkFor(key);
    const chunk = this.chunks[c];
    if (!chunk) return;
    const i = lowerBound(chunk, key);
    if (chunk[i] !== key) return;
    chunk.splice(i, 1);
    if (chunk.length === 0) this.chunks.splice(c, 1);
  }

  clear(): void {
    this.map.clear();
    this.chunks = [];
  }

  /** Values with start <= key < end (end '' = unbounded), at most `limit` (0 = all) after `after`. */
  range(start: string, end: string, after: string | undefined, limit: number): { kvs: KeyValue[]; more: boolean } {
    const from = after !== undefined && after >= start ? after : start;
    let c = this.chunkFor(from);
    let i = c < this.chunks.length ? lowerBound(this.chunks[c]!, from) : 0;
    const kvs: KeyValue[] = [];
    for (; c < this.chunks.length; c++, i = 0) {
      const chunk = this.chunks[c]!;
      for (; i < chunk.length; i++) {
        const k = chunk[i]!;
        if (k === after) continue;
        if (end !== '' && k >= end) return { kvs, more: false };
        if (limit > 0 && kvs.length === limit) return { kvs, more: true };
        kvs.push(this.map.get(k)!);
      }
    }
    return { kvs, more: false };
  }

  /** Number of keys with start <= key < end (end '' = unbounded). */
  count(start: string, end: string): number {
    return Math.max(0, (end === '' ? this.map.size : this.rank(end)) - this.rank(start));
  }

  /** Number of keys smaller than `key`. */
  private rank(key: string): number {
    let n = 0;
    for (const chunk of this.chunks) {
      if (chunk[chunk.length - 1]! < key) { n += chunk.length; continue; }
      return n + lowerBound(chunk, key);
    }
    return n;
  }

  private insertKey(key: string): void {
    if (this.chunks.length === 0) { this.chunks.push([key]); return; }
    const c = Math.min(this.chunkFor(key), this.chunks.length - 1);
    const chunk = this.chunks[c]!;
    chunk.splice(lowerBound(chunk, key), 0, key);
    if (chunk.length > CHUNK_MAX) this.chunks.splice(c + 1, 0, chunk.splice(CHUNK_MAX >>> 1));
  }

  /** Index of the first chunk whose last key is >= key (chunks.length when none). */
  private chunkFor(key: string): number {
    let lo = 0;
    let hi = this.chunks.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const chunk = this.chunks[mid]!;
      if (chunk[chunk.length - 1]! < key) lo = mid + 1; else hi = mid;
    }
    return lo;
  }
}

function lowerBound(arr: readonly string[], key: string): number {
  let lo = 0;
  let hi = arr.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (arr[mid]! < key) lo = mid + 1; else hi = mid;
  }
  return lo;
}

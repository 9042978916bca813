/**
 * Image garbage collection as Kubernetes' node agent does it: every period (5 minutes) the
 * image filesystem's usage is compared with --image-gc-high-threshold; above it, unused
 * images are removed, least recently used first, until usage is at --image-gc-low-threshold.
 * An image is "used" while a container (running or not) refers to it, and its last use is the
 * last time it was seen so; an image first seen less than --minimum-image-ttl-duration ago,
 * a pinned image, and the sandbox image are never removed. The eviction manager also calls
 * `freeSpace` under disk pressure.
 * Contract: `run` never throws; `freeSpace` returns the bytes freed (sizes the runtime reported).
 */
import type { Logger } from 'pino';
import { normalizeImageName } from '../runtime/image-name.js';
import type { ImageInfo, RuntimeBackend } from '../runtime/runtime.js';
import { abortableSleep } from '../../../util/abort.js';

export const IMAGE_GC_PERIOD_MS = 5 * 60_000;

export interface FsUsage { readonly capacity: number; readonly available: number }

export interface ImageGcOptions {
  readonly runtime: RuntimeBackend;
  /** The image filesystem's size and free bytes (statfs of the image store). */
  readonly imageFs: () => Promise<FsUsage | undefined>;
  readonly highThresholdPercent: number;
  readonly lowThresholdPercent: number;
  readonly minAgeMs: number;
  /** Images never removed (the sandbox image). */
  readonly keep?: readonly string[];
  readonly periodMs?: number;
  readonly log: Logger;
  readonly now?: () => number;
}

interface Record_ { firstDetected: number; lastUsed: number; size: number }

export class ImageGc {
  private readonly records = new Map<string, Record_>();
  /** Images removed so far (tests, metrics). */
  removed: string[] = [];

  constructor(private readonly o: ImageGcOptions) {}

  private now(): number { return this.o.now?.() ?? Date.now(); }

  private isKept(img: ImageInfo): boolean {
    if (img.pinned) return true;
    const keep = (this.o.keep ?? []).map(normalizeImageName);
    return img.repoTags.some((t) => keep.includes(normalizeImageName(t))) || (this.o.keep ?? []).includes(img.id);
  }

  /** Refreshes the records: new images get their first-seen time, used ones their last use. */
  async detect(): Promise<{ images: ImageInfo[]; inUse: Set<string> }> {
    const now = this.now();
    const images = await this.o.runtime.listImages();
    const containers = await this.o.runtime.listContainers();
    const inUse = new Set<string>();
    for (const c of containers) {
      for (const ref of [c.imageRef, c.image]) {
        if (!ref) continue;
        const img = images.find((i) => i.id === ref || i.repoDigests.includes(ref) || i.repoTags.includes(normalizeImageName(ref)));
        if (img) inUse.add(img.id);
      }
    }
    for (const img of images) {
      let r = this.records.get(img.id);
      if (!r) this.records.set(img.id, r = { firstDetected: now, lastUsed: 0, size: img.size });
      r.size = img.size;
      if (inUse.has(img.id)) r.lastUsed = now;
    }
    for (const id of [...this.records.keys()]) if (!images.some((i) => i.id === id)) this.records.delete(id);
    return { images, inUse };
  }

  /** Removes unused images, least recently used first, until `bytes` are freed; returns bytes freed. */
  async freeSpace(bytes: number): Promise<number> {
    const { images, inUse } = await this.detect();
    const now = this.now();
    const candidates = images
      .filter((i) => !inUse.has(i.id) && !this.isKept(i))
      .map((i) => ({ img: i, rec: this.records.get(i.id)! }))
      .filter((x) => now - x.rec.firstDetected >= this.o.minAgeMs)
      .sort((a, b) => a.rec.lastUsed - b.rec.lastUsed || a.rec.firstDetected - b.rec.firstDetected);
    let freed = 0;
    for (const { img } of candidates) {
      if (freed >= bytes) break;
      try {
        await this.o.runtime.removeImage(img.id);
        freed += img.size;
        this.removed.push(img.repoTags[0] ?? img.id);
        this.records.delete(img.id);
        this.o.log.info({ image: img.repoTags[0] ?? img.id, size: img.size }, 'image garbage collected');
      } catch (e) {
        this.o.log.warn({ image: img.id, err: (e as Error).message }, 'removing image failed');
      }
    }
    return freed;
  }

  /** One check: above the high threshold, free down to the low one. Returns bytes freed. */
  async garbageCollect(): Promise<number> {
    await this.detect();
    if (this.o.highThresholdPercent >= 100) return 0; // 100 turns collection off, as in Kubernetes
    const fs = await this.o.imageFs();
    if (!fs || fs.capacity <= 0) return 0;
    const usedPercent = ((fs.capacity - fs.available) * 100) / fs.capacity;
    if (usedPercent < this.o.highThresholdPercent) return 0;
    const toFree = (fs.capacity * (100 - this.o.lowThresholdPercent)) / 100 - fs.available;
    this.o.log.info({ usedPercent: Math.round(usedPercent), highThreshold: this.o.highThresholdPercent, toFreeBytes: Math.round(toFree) }, 'image filesystem above the high threshold');
    if (toFree <= 0) return 0;
    const freed = await this.freeSpace(toFree);
    if (freed < toFree) this.o.log.warn({ freedBytes: freed, wantedBytes: Math.round(toFree) }, 'image garbage collection freed less than wanted');
    return freed;
  }

  async run(signal: AbortSignal): Promise<void> {
    const period = this.o.periodMs ?? IMAGE_GC_PERIOD_MS;
    while (!signal.aborted) {
      try { await this.garbageCollect(); } catch (e) { this.o.log.warn({ err: (e as Error).message }, 'image garbage collection failed'); }
      await abortableSleep(period, signal);
    }
  }
}

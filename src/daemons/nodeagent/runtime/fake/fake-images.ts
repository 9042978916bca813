/**
 * The fake runtime's image store: names normalized the way containerd does (docker.io/library
 * for bare names, :latest when untagged), ids derived from the name, pulls scripted.
 * Default pull rule: everything pulls except names whose repository contains `does-not-exist`
 * or whose last path element starts with `missing`, so simulated nodes can run any pod while
 * tests can still provoke a failed pull.
 */
import { createHash } from 'node:crypto';
import type { ImageInfo } from '../runtime.js';
import { RuntimeError } from '../runtime-errors.js';
import { normalizeImageName } from '../image-name.js';

export { normalizeImageName };

export function defaultPullable(normalized: string): boolean {
  const repo = normalized.replace(/[:@].*$/, '');
  const last = repo.slice(repo.lastIndexOf('/') + 1);
  return !(repo.includes('does-not-exist') || last.startsWith('missing'));
}

export class FakeImageStore {
  private readonly byTag = new Map<string, ImageInfo>();

  constructor(initial: readonly string[], private readonly pullable: (normalized: string) => boolean = defaultPullable) {
    for (const i of initial) this.add(i);
  }

  add(image: string): ImageInfo {
    const tag = normalizeImageName(image);
    const existing = this.byTag.get(tag);
    if (existing) return existing;
    const id = `sha256:${createHash('sha256').update(tag).digest('hex')}`;
    const info: ImageInfo = { id, repoTags: [tag], repoDigests: [], size: 1024 * 1024, username: '', pinned: false };
    this.byTag.set(tag, info);
    return info;
  }

  get(image: string): ImageInfo | null {
    if (image.startsWith('sha256:')) {
      for (const i of this.byTag.values()) if (i.id === image) return i;
      return null;
    }
    return this.byTag.get(normalizeImageName(image)) ?? null;
  }

  pull(image: string): ImageInfo {
    const present = this.get(image);
    if (present) return present;
    const tag = normalizeImageName(image);
    if (!this.pullable(tag)) {
      throw new RuntimeError('NOT_FOUND', 'PullImage', `failed to pull image "${image}": ${tag}: not found`);
    }
    return this.add(tag);
  }

  list(filter?: string): ImageInfo[] {
    if (filter) {
      const one = this.get(filter);
      return one ? [one] : [];
    }
    return [...this.byTag.values()];
  }

  remove(image: string): void {
    const info = this.get(image);
    if (!info) return; // idempotent, as in CRI
    for (const t of info.repoTags) this.byTag.delete(t);
  }
}

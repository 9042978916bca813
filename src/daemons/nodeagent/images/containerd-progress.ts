/**
 * Pull progress of containerd, which CRI does not report: the bytes in its content store's
 * ingest directory (<root>/io.containerd.content.v1.content/ingest/<ref>/data grows as a blob
 * downloads) and the number of finished blobs. The root is found from CRI ImageFsInfo, whose
 * mountpoint is <root>/io.containerd.snapshotter.v1.<snapshotter>.
 */
import { readdir, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { RuntimeBackend } from '../runtime/runtime.js';
import type { ProgressProbe } from './pull-service.js';

export async function containerdContentDir(runtime: RuntimeBackend): Promise<string | undefined> {
  try {
    const fs = await runtime.imageFsInfo();
    const mp = fs.find((f) => /io\.containerd\.snapshotter\.v1\./.test(f.mountpoint))?.mountpoint;
    return mp ? join(dirname(mp), 'io.containerd.content.v1.content') : undefined;
  } catch { return undefined; }
}

/** "<ingest bytes>B in <n> downloads, <m> blobs": changes whenever a download moves. */
export function contentStoreProgress(contentDir: string): ProgressProbe {
  return async () => {
    let bytes = 0;
    let downloads = 0;
    let blobs = 0;
    try {
      for (const ref of await readdir(join(contentDir, 'ingest'))) {
        downloads++;
        try { bytes += (await stat(join(contentDir, 'ingest', ref, 'data'))).size; } catch { /* just finished */ }
      }
    } catch { /* no ingest yet */ }
    try { blobs = (await readdir(join(contentDir, 'blobs', 'sha256'))).length; } catch { /* none */ }
    return `${bytes}B in ${downloads} downloads, ${blobs} blobs`;
  };
}

/**
 * Pod directories left behind (Kubernetes' cleanupOrphanedPodDirs): a pod deleted while the
 * agent was down, or one whose teardown failed, keeps <root-dir>/pods/<uid> with its volumes —
 * mounts (tmpfs, nfs), CSI publications that keep the volume in use and attached. Once every pod
 * source delivered its pods, directories of pods no source and no worker knows are torn down
 * like a pod's (CSI unpublish/unstage, unmount, remove), at most once a minute.
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { CsiVolumes } from './csi-node.js';
import { tearDownPodDir } from './volumes.js';

const PERIOD_MS = 60_000;

export class OrphanPodDirs {
  private last = 0;
  private running = false;

  constructor(private readonly o: { rootDir: string; csi?: CsiVolumes; log: Logger; periodMs?: number }) {}

  /** Tears down the directories of unknown pods (throttled; never throws). */
  async clean(known: (uid: string) => boolean): Promise<string[]> {
    if (this.running || Date.now() - this.last < (this.o.periodMs ?? PERIOD_MS)) return [];
    this.running = true;
    this.last = Date.now();
    const removed: string[] = [];
    try {
      for (const uid of await readdir(join(this.o.rootDir, 'pods')).catch(() => [] as string[])) {
        if (known(uid)) continue;
        try {
          await tearDownPodDir(this.o.rootDir, uid, this.o.csi);
          removed.push(uid);
          this.o.log.info({ podUid: uid }, 'removed the volumes and directory of a pod no longer on this node');
        } catch (e) {
          this.o.log.warn({ podUid: uid, err: (e as Error).message }, 'orphaned pod directory not cleaned; trying again later');
        }
      }
    } finally {
      this.running = false;
    }
    return removed;
  }
}

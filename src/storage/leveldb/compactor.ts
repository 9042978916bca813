/**
 * Physical compaction of the LevelDB backend's history (see layout.ts for the rule): for each
 * key, delete every h/ and r/ entry below the compaction point C except the newest one below C
 * when it is a PUT. Runs in chunks with ordinary (unsynced) batches so it never blocks the event
 * loop for long; the caller records completion (m/compact-done) so an interrupted run resumes.
 * Entries below C are immutable (new writes are stamped above C), so a concurrent writer and
 * this walk never touch the same LevelDB keys.
 */
import type { Db } from './reads.js';
import { HISTORY_PREFIX, logKey, parseHistoryKey } from './layout.js';
import { prefixEnd } from '../interface.js';

const CHUNK = 2000;

export interface CompactStats {
  /** Log records removed. */
  removed: number;
}

export async function compactHistory(db: Db, compactRev: number, signal?: AbortSignal): Promise<CompactStats> {
  const stats: CompactStats = { removed: 0 };
  let curKey: string | undefined;
  // Entries of the current key below compactRev, in ascending revision order.
  let below: { rev: number; put: boolean }[] = [];
  let dels: { type: 'del'; key: string }[] = [];
  const settle = (): void => {
    if (curKey === undefined || below.length === 0) return;
    const last = below[below.length - 1]!;
    const drop = last.put ? below.slice(0, -1) : below;
    for (const e of drop) {
      dels.push({ type: 'del', key: HISTORY_PREFIX + curKey + '\u0000' + e.rev.toString(16).padStart(16, '0') });
      dels.push({ type: 'del', key: logKey(e.rev) });
      stats.removed++;
    }
  };
  const it = db.iterator({ gte: HISTORY_PREFIX, lt: prefixEnd(HISTORY_PREFIX) });
  try {
    for (;;) {
      if (signal?.aborted) return stats;
      const entries = await it.nextv(CHUNK);
      if (entries.length === 0) break;
      for (const [k, v] of entries) {
        const { key, rev } = parseHistoryKey(k);
        if (key !== curKey) {
          settle();
          curKey = key;
          below = [];
        }
        if (rev < compactRev) below.push({ rev, put: v[0] === 0x50 });
      }
      if (dels.length >= CHUNK) {
        await db.batch(dels);
        dels = [];
      }
    }
    settle();
    if (dels.length > 0 && !signal?.aborted) await db.batch(dels);
  } finally {
    await it.close();
  }
  return stats;
}

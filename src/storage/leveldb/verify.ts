/**
 * Offline consistency check of a LevelDB backend directory (the backend must be closed): the
 * current index, the per-key history and the revision log must agree (see layout.ts): every k/
 * pointer names its key's newest r/ record, and in a format 2 store no k/ record carries a value.
 * Used by the crash test after a kill -9, and usable as an fsck.
 */
import { ClassicLevel } from 'classic-level';
import { prefixEnd } from '../interface.js';
import {
  HISTORY_PREFIX, INDEX_PREFIX, LOG_PREFIX, META_COMPACT, META_FORMAT, META_REV, TTL_PREFIX, decodeIndexRecord,
  decodeLogRecord, decodeRev, parseHistoryKey, parseRevHex, parseTtlKey,
} from './layout.js';

export interface VerifyReport {
  readonly revision: number;
  readonly compactRevision: number;
  readonly keys: number;
  readonly logRecords: number;
  /** The layout format (layout.ts): 1 when m/format is absent. */
  readonly format: number;
  /** Human-readable inconsistencies; empty when the store is consistent. */
  readonly problems: string[];
}

const MAX_PROBLEMS = 50;

export async function verifyLevelStore(dir: string): Promise<VerifyReport> {
  const db = new ClassicLevel<string, Buffer>(dir, { keyEncoding: 'utf8', valueEncoding: 'buffer', createIfMissing: false });
  await db.open();
  try {
    return await verifyDb(db);
  } finally {
    await db.close();
  }
}

async function scan(db: ClassicLevel<string, Buffer>, prefix: string, each: (k: string, v: Buffer) => void): Promise<void> {
  const it = db.iterator({ gte: prefix, lt: prefixEnd(prefix) });
  try {
    for (;;) {
      const entries = await it.nextv(5000);
      if (entries.length === 0) return;
      for (const [k, v] of entries) each(k, v);
    }
  } finally {
    await it.close();
  }
}

async function verifyDb(db: ClassicLevel<string, Buffer>): Promise<VerifyReport> {
  const problems: string[] = [];
  const problem = (p: string): void => {
    if (problems.length < MAX_PROBLEMS) problems.push(p);
  };
  const [revB, compactB, formatB] = await db.getMany([META_REV, META_COMPACT, META_FORMAT]);
  const format = formatB === undefined ? 1 : Number(formatB.toString('latin1'));
  const revision = decodeRev(revB) || 1;
  const compactRevision = decodeRev(compactB);

  const log = new Map<number, ReturnType<typeof decodeLogRecord>>();
  await scan(db, LOG_PREFIX, (k, v) => log.set(parseRevHex(k.slice(LOG_PREFIX.length)), decodeLogRecord(v)));
  // Newest history entry per key, and a check that each history entry has its log record.
  const latest = new Map<string, { rev: number; put: boolean }>();
  let historyEntries = 0;
  await scan(db, HISTORY_PREFIX, (k, v) => {
    historyEntries++;
    const { key, rev } = parseHistoryKey(k);
    const put = v[0] === 0x50;
    const rec = log.get(rev);
    if (!rec) problem(`history ${key}@${rev} has no log record`);
    else if (rec.key !== key || (rec.type === 'PUT') !== put) problem(`history ${key}@${rev} disagrees with its log record (${rec.type} ${rec.key})`);
    if (rev > revision) problem(`history ${key}@${rev} is above the stored revision ${revision}`);
    latest.set(key, { rev, put });
  });
  if (historyEntries !== log.size) problem(`${log.size} log records but ${historyEntries} history entries`);
  for (const rev of log.keys()) if (rev > revision) problem(`log record ${rev} is above the stored revision ${revision}`);
  // History at and above the compaction point is complete: one log record per revision.
  let gaps = 0;
  for (let rev = Math.max(2, compactRevision); rev <= revision; rev++) if (!log.has(rev)) gaps++;
  if (gaps > 0) problem(`the revision log misses ${gaps} revisions between ${Math.max(2, compactRevision)} and ${revision}`);

  let keys = 0;
  const live = new Set<string>();
  await scan(db, INDEX_PREFIX, (k, v) => {
    keys++;
    const key = k.slice(INDEX_PREFIX.length);
    live.add(key);
    const r = decodeIndexRecord(v);
    const l = latest.get(key);
    if (!l || !l.put || l.rev !== r.modRevision) {
      problem(`index ${key}@${r.modRevision} but newest history is ${l ? `${l.put ? 'PUT' : 'DELETE'}@${l.rev}` : 'none'}`);
      return;
    }
    const rec = log.get(r.modRevision);
    if (!rec) return;
    if (rec.createRevision !== r.createRevision || rec.version !== r.version || (r.inline !== undefined && !rec.value.equals(r.inline))) {
      problem(`index ${key}@${r.modRevision} differs from its log record`);
    }
    if (r.inline !== undefined && format >= 2) problem(`index ${key} carries its value inline in a format ${format} store`);
    if (r.createRevision > r.modRevision || r.version < 1) problem(`index ${key} has create ${r.createRevision} / version ${r.version}`);
  });
  for (const [key, l] of latest) if (l.put && !live.has(key)) problem(`newest history of ${key} is PUT@${l.rev} but the index has no entry`);
  await scan(db, TTL_PREFIX, (k) => {
    const { key, deadlineMs } = parseTtlKey(k);
    if (!live.has(key)) problem(`ttl entry for missing key ${key} (deadline ${deadlineMs})`);
  });
  return { revision, compactRevision, keys, logRecords: log.size, format, problems };
}

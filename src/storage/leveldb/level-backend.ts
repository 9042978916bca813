/**
 * Opening the embedded LevelDB storage backend (the backend itself: level-store.ts; on-disk
 * layout: layout.ts). The process holds LevelDB's LOCK on the directory while it is open: a
 * second opener, in this process or another, gets StorageError 'Unavailable'.
 */
import { mkdir, realpath } from 'node:fs/promises';
import { ClassicLevel } from 'classic-level';
import { pino, type Logger } from 'pino';
import { StorageError } from '../errors.js';
import { META_COMPACT, META_COMPACT_DONE, META_REV, decodeRev } from './layout.js';
import { type Db, loadIndex } from './reads.js';
import { LevelBackend, type LevelBackendOptions, errorCode } from './level-store.js';

export { LevelBackend, type LevelBackendOptions, type LevelBackendStats } from './level-store.js';

/**
 * Directories open in this process. LevelDB's LOCK is an fcntl lock, which POSIX releases when the
 * process closes ANY descriptor of the file, and LevelDB opens and closes the LOCK file when it
 * refuses a second in-process open. So a second open in the same process must never reach LevelDB.
 */
const openDirs = new Set<string>();

export async function openLevelBackend(opts: LevelBackendOptions): Promise<LevelBackend> {
  const log = opts.log ?? pino({ level: 'silent' });
  await mkdir(opts.dir, { recursive: true });
  const real = await realpath(opts.dir);
  if (openDirs.has(real)) throw new StorageError('Unavailable', `data directory ${opts.dir} is locked by another process`);
  openDirs.add(real);
  try {
    const backend = await openAt(opts, log, () => openDirs.delete(real));
    return backend;
  } catch (err) {
    openDirs.delete(real);
    throw err;
  }
}

async function openAt(opts: LevelBackendOptions, log: Logger, release: () => void): Promise<LevelBackend> {
  const db: Db = new ClassicLevel<string, Buffer>(opts.dir, { keyEncoding: 'utf8', valueEncoding: 'buffer' });
  try {
    await db.open();
  } catch (err) {
    if (errorCode(err) === 'LEVEL_LOCKED' || errorCode((err as { cause?: unknown }).cause) === 'LEVEL_LOCKED') {
      throw new StorageError('Unavailable', `data directory ${opts.dir} is locked by another process`, {}, { cause: err });
    }
    throw new StorageError('Unavailable', `cannot open leveldb in ${opts.dir}: ${String(err)}`, {}, { cause: err });
  }
  try {
    const [rev, compact, compactDone] = await db.getMany([META_REV, META_COMPACT, META_COMPACT_DONE]);
    const index = await loadIndex(db);
    const backend = new LevelBackend(db, opts, log, index, decodeRev(rev) || 1, decodeRev(compact), release);
    if (decodeRev(compactDone) < decodeRev(compact)) backend.resumeCompaction();
    log.info({ dir: opts.dir, revision: backend.stats.revision, keys: index.size }, 'leveldb backend opened');
    return backend;
  } catch (err) {
    await db.close();
    throw err;
  }
}

/**
 * --exit-on-lock-contention: the agent holding --lock-file leaves when another process asks
 * for the lock. Kubernetes' node agent notices the other process opening the file (inotify);
 * Node cannot watch opens, so a contender asks by appending its pid to the file (see
 * acquireLockFile) and the holder, watching the file, sees a line that is not its own pid.
 * Contract: `onContended` runs at most once; the returned function stops watching.
 */
import { watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';

export function watchLockContention(path: string, onContended: () => void, pid = process.pid): () => void {
  let fired = false;
  let watcher: FSWatcher | undefined;
  const check = async (): Promise<void> => {
    if (fired) return;
    const text = await readFile(path, 'utf8').catch(() => '');
    const others = text.split('\n').map((l) => l.trim()).filter((l) => l && l !== String(pid));
    if (others.length === 0) return;
    fired = true;
    watcher?.close();
    onContended();
  };
  watcher = watch(path, { persistent: false }, () => { void check(); });
  watcher.on('error', () => undefined);
  return () => watcher?.close();
}

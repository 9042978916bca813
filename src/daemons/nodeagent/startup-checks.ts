/**
 * Start-up rules that run before anything else: --fail-swap-on (refuse when /proc/swaps lists
 * an active swap), --lock-file with --exit-on-lock-contention (one agent per lock file),
 * --oom-score-adj (written to /proc/self/oom_score_adj; EACCES/EPERM only warn, as in
 * sandboxes without CAP_SYS_RESOURCE); --max-open-files is safety/open-files.ts.
 */
import { appendFileSync, mkdirSync, openSync, closeSync, readFileSync, writeFileSync, unlinkSync, existsSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Logger } from 'pino';

export class StartupError extends Error {
  override readonly name = 'StartupError';
}

/** Active swap devices listed in a /proc/swaps text (first line is the header). */
export function activeSwaps(text: string): string[] {
  return text.split('\n').slice(1).map((l) => l.trim()).filter(Boolean).map((l) => l.split(/\s+/)[0] ?? '');
}

export function checkSwap(failSwapOn: boolean, swapsPath = '/proc/swaps'): void {
  if (!failSwapOn) return;
  let text = '';
  try { text = readFileSync(swapsPath, 'utf8'); } catch { return; }
  const swaps = activeSwaps(text);
  if (swaps.length) throw new StartupError(`running with swap on is not supported, please disable swap or set --fail-swap-on=false (active: ${swaps.join(', ')})`);
}

function pidAlive(pid: number): boolean {
  try { process.kill(pid, 0); return true; } catch (e) { return (e as NodeJS.ErrnoException).code === 'EPERM'; }
}

/** The holder's pid: the file's first line (contenders append theirs below it). */
function lockOwner(path: string): number {
  return Number(readFileSync(path, 'utf8').split('\n')[0]?.trim());
}

/**
 * acquireLockFile, but a lock held by a live process is asked for (our pid appended to the
 * file: a holder with --exit-on-lock-contention leaves, see safety/lock-contention.ts) and
 * waited for up to `waitMs` before the refusal.
 */
export async function takeLockFile(path: string, exitOnContention: boolean, waitMs: number): Promise<() => void> {
  const deadline = Date.now() + waitMs;
  let asked = false;
  for (;;) {
    try {
      return acquireLockFile(path, exitOnContention);
    } catch (e) {
      if (!(e instanceof StartupError) || !/is held by process/.test(e.message) || Date.now() >= deadline) throw e;
      if (!asked) { appendFileSync(path, `${process.pid}\n`); asked = true; }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/**
 * Takes the lock file: created exclusively with our pid inside; a file left by a dead process
 * is taken over. Returns the release function.
 */
export function acquireLockFile(path: string, exitOnContention: boolean): () => void {
  mkdirSync(dirname(path), { recursive: true });
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, 'wx');
      writeFileSync(fd, `${process.pid}\n`);
      closeSync(fd);
      return () => { try { if (lockOwner(path) === process.pid) unlinkSync(path); } catch { /* gone */ } };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw new StartupError(`--lock-file ${path}: ${(e as Error).message}`);
      const owner = lockOwner(path);
      if (Number.isInteger(owner) && owner > 0 && owner !== process.pid && pidAlive(owner)) {
        throw new StartupError(exitOnContention
          ? `--lock-file ${path} is held by process ${owner}; exiting (--exit-on-lock-contention)`
          : `--lock-file ${path} is held by process ${owner}`);
      }
      if (existsSync(path)) unlinkSync(path); // stale
    }
  }
  throw new StartupError(`--lock-file ${path}: could not be taken`);
}

export function applyOomScoreAdj(value: number, log: Logger, path = '/proc/self/oom_score_adj'): void {
  try {
    writeFileSync(path, String(value));
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EACCES' || code === 'EPERM' || code === 'ENOENT') log.warn({ value, err: (e as Error).message }, 'could not set --oom-score-adj (needs CAP_SYS_RESOURCE to lower it); continuing');
    else throw new StartupError(`--oom-score-adj: ${(e as Error).message}`);
  }
}

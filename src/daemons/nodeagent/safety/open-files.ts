/**
 * --max-open-files: Node has no setrlimit, so the limit of our own process is raised with
 * util-linux's prlimit(1) (root, or CAP_SYS_RESOURCE, may raise the hard limit too). Where
 * that is not possible the agent runs on with what it has and says so.
 */
import { spawnSync } from 'node:child_process';
import type { Logger } from 'pino';

export function raiseOpenFiles(wanted: number, current: () => number | undefined, log: Logger, pid = process.pid): number | undefined {
  const before = current();
  if (before !== undefined && before >= wanted) return before;
  const r = spawnSync('prlimit', ['--pid', String(pid), `--nofile=${wanted}:${wanted}`], { encoding: 'utf8', timeout: 5000 });
  const after = current();
  if (r.status !== 0 || (after !== undefined && after < wanted)) {
    log.warn({ wanted, current: after, err: (r.error?.message ?? r.stderr ?? '').trim() }, '--max-open-files: could not raise the open-files limit; continuing');
  } else {
    log.info({ limit: after }, 'open-files limit raised (--max-open-files)');
  }
  return after;
}

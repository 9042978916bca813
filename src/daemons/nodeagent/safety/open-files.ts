/**
 * --max-open-files: Node has no setrlimit, so the limit of our own process is raised with
 * util-linux's prlimit(1). Raising the hard limit needs CAP_SYS_RESOURCE; without it the soft
 * limit is still raised as far as the hard one allows. Like Kubernetes' node agent, a limit
 * that cannot be reached is logged and the agent runs on.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';

/** Soft and hard "Max open files" of a process, from /proc/<pid>/limits. */
export function openFileLimits(pid: number | 'self' = 'self'): { soft: number; hard: number } | undefined {
  let text: string;
  try { text = readFileSync(`/proc/${pid}/limits`, 'utf8'); } catch { return undefined; }
  const m = /^Max open files\s+(\S+)\s+(\S+)/m.exec(text);
  if (!m) return undefined;
  const n = (s: string | undefined): number => (s === 'unlimited' ? Infinity : Number(s));
  return { soft: n(m[1]), hard: n(m[2]) };
}

function prlimit(pid: number, spec: string): string | undefined {
  const r = spawnSync('prlimit', ['--pid', String(pid), `--nofile=${spec}`], { encoding: 'utf8', timeout: 5000 });
  return r.status === 0 ? undefined : (r.error?.message ?? r.stderr ?? `exit ${r.status}`).trim();
}

/** Returns the soft limit in force afterwards. */
export function raiseOpenFiles(wanted: number, log: Logger, pid: number = process.pid): number | undefined {
  const before = openFileLimits(pid);
  if (before && before.soft >= wanted) return before.soft;
  let err = prlimit(pid, `${wanted}:${wanted}`);
  if (err && before && before.soft < before.hard) err = prlimit(pid, `${Math.min(wanted, before.hard)}:`) ?? err;
  const after = openFileLimits(pid);
  if (!after || after.soft < wanted) log.warn({ wanted, soft: after?.soft, hard: after?.hard, err }, '--max-open-files: the open-files limit could not be raised that far (raising the hard limit needs CAP_SYS_RESOURCE); continuing');
  else log.info({ limit: after.soft }, 'open-files limit raised (--max-open-files)');
  return after?.soft;
}

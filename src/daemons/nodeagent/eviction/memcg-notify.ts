/**
 * --experimental-kernel-memcg-notification: on cgroup v1 the kernel signals when the root
 * memory cgroup's usage crosses a threshold (cgroup.event_control + an eventfd), so a memory
 * threshold is acted on at once instead of at the next poll. Node has no eventfd(2) without a
 * native addon, so a tiny helper does the registration and waiting: python3 (os.eventfd, 3.10+)
 * reading thresholds on stdin and writing a line per crossing. The threshold is re-armed every
 * 10 s as Kubernetes does (usage threshold = MemTotal - threshold + inactive file pages, since
 * the kernel compares raw usage while the signal is the working set).
 * Where the helper or a v1 memory cgroup is missing (cgroup v2 has no usage thresholds), the
 * manager keeps polling and a line in the log says so.
 * Contract: never throws; returns a stop function and a promise of the first registration
 * (resolved at once, or never, where notification is unavailable).
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import { amountOf, type Threshold } from './thresholds.js';

export const MEMCG_ROOT = '/sys/fs/cgroup/memory';

const HELPER = `
import os, select, sys
cg = sys.argv[1]
usage = os.open(cg + '/memory.usage_in_bytes', os.O_RDONLY)
ctl = os.open(cg + '/cgroup.event_control', os.O_WRONLY)
efd = None
inp = sys.stdin.fileno()
while True:
    r, _, _ = select.select([inp] + ([efd] if efd is not None else []), [], [])
    if inp in r:
        line = sys.stdin.readline()
        if not line:
            break
        if efd is not None:
            os.close(efd)
        efd = os.eventfd(0)
        os.write(ctl, ('%d %d %d' % (efd, usage, int(line))).encode())
        print('armed', flush=True)
    elif efd is not None and efd in r:
        os.eventfd_read(efd)
        print('crossed', flush=True)
`;

/** The raw usage at which the working set reaches the threshold, from the cgroup's files now. */
export function usageThreshold(t: Threshold, cgroup: string, meminfo = '/proc/meminfo'): number | undefined {
  try {
    const total = Number(/^MemTotal:\s+(\d+) kB/m.exec(readFileSync(meminfo, 'utf8'))?.[1]) * 1024;
    const inactive = Number(/^total_inactive_file (\d+)/m.exec(readFileSync(`${cgroup}/memory.stat`, 'utf8'))?.[1] ?? 0);
    if (!Number.isFinite(total)) return undefined;
    return Math.max(0, Math.floor(total - amountOf(t.value, total) + inactive));
  } catch { return undefined; }
}

export function memcgNotificationUnavailable(cgroup: string): string | undefined {
  if (!existsSync(`${cgroup}/cgroup.event_control`)) return 'no cgroup v1 memory controller (cgroup.event_control)';
  const py = spawnSync('python3', ['-c', 'import os; os.eventfd'], { stdio: 'ignore', timeout: 10_000 });
  if (py.status !== 0) return 'python3 with os.eventfd (3.10+) is not installed';
  return undefined;
}

/**
 * Watches `cgroup`'s memory usage against `threshold()` (raw usage bytes, re-read every
 * `rearmMs`); calls `onCross` when the kernel reports a crossing.
 */
export interface MemcgNotifier { readonly stop: () => void; readonly armed: Promise<void> }

export function startMemcgNotifier(threshold: () => number | undefined, onCross: () => void, log: Logger, cgroup = '/sys/fs/cgroup/memory', rearmMs = 10_000): MemcgNotifier {
  const why = memcgNotificationUnavailable(cgroup);
  if (why) {
    log.warn({ reason: why }, '--experimental-kernel-memcg-notification: kernel memcg notification unavailable; polling instead');
    return { stop: () => undefined, armed: new Promise(() => undefined) };
  }
  let onArmed: () => void = () => undefined;
  const armed = new Promise<void>((r) => { onArmed = r; });
  const child = spawn('python3', ['-c', HELPER, cgroup], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stopped = false;
  let last = -1;
  const arm = (): void => {
    const u = threshold();
    if (u === undefined || u === last || stopped) return;
    last = u;
    child.stdin.write(`${u}\n`);
  };
  child.stdout.setEncoding('utf8').on('data', (s: string) => {
    if (s.includes('armed')) onArmed();
    if (s.includes('crossed')) { log.info('memcg threshold crossed'); onCross(); }
  });
  child.stderr.setEncoding('utf8').on('data', (s: string) => log.warn({ err: s.trim() }, 'memcg notification helper'));
  child.on('exit', (code) => { if (!stopped) log.warn({ code }, 'memcg notification helper exited; polling only'); });
  child.on('error', (e) => log.warn({ err: e.message }, 'memcg notification helper failed; polling only'));
  arm();
  const timer = setInterval(arm, rearmMs);
  timer.unref();
  log.info('kernel memcg notification armed');
  return { stop: () => { stopped = true; clearInterval(timer); child.stdin.end(); child.kill(); }, armed };
}

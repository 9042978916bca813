/**
 * How a fake container behaves, decided from its image, command, env and annotations.
 *
 *   image `fake/exit:<N>`                 runs `run-ms` then exits with code N
 *   annotation fake.corectl.io/exit-code  same, for any image
 *   annotation fake.corectl.io/run-ms     how long it runs before exiting (default 50 ms)
 *   annotation fake.corectl.io/oom=true   exits 137 with reason OOMKilled after run-ms
 *   annotation fake.corectl.io/ignore-sigterm=true  stop waits the whole grace period, then 137
 *   annotation fake.corectl.io/exec-exit-code      every execSync exits with this code
 *                                                  (e.g. to fail exec probes)
 *   command/args `echo a b`               prints "a b" and exits 0
 *   env FAKE_STDOUT / FAKE_STDERR          text written to the log at start ("\n" separates lines)
 * Anything else runs until stopped. Exit reasons follow containerd: Completed for 0, Error
 * otherwise, OOMKilled when marked.
 */
import type { ExecSyncResult } from '../runtime.js';

export const FAKE_ANNOTATION_PREFIX = 'fake.corectl.io/';
const A = (k: string): string => FAKE_ANNOTATION_PREFIX + k;

export interface FakeBehaviour {
  /** undefined = runs until stopped. */
  readonly exitAfterMs?: number;
  readonly exitCode: number;
  readonly oom: boolean;
  readonly ignoreSigterm: boolean;
  readonly stdout: string;
  readonly stderr: string;
  readonly execExitCode?: number;
}

export interface FakeContainerView {
  readonly image: string;
  readonly command: readonly string[];
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
  readonly hostname: string;
}

function int(v: string | undefined): number | undefined {
  if (v === undefined || v.trim() === '') return undefined;
  const n = Number(v);
  return Number.isInteger(n) ? n : undefined;
}

export function behaviourOf(c: FakeContainerView, defaultRunMs: number): FakeBehaviour {
  const ann = c.annotations;
  const runMs = int(ann[A('run-ms')]) ?? defaultRunMs;
  const argv = [...c.command, ...c.args];
  let stdout = c.env['FAKE_STDOUT'] ?? '';
  if (stdout && !stdout.endsWith('\n')) stdout += '\n';
  let stderr = c.env['FAKE_STDERR'] ?? '';
  if (stderr && !stderr.endsWith('\n')) stderr += '\n';
  const base = { ignoreSigterm: ann[A('ignore-sigterm')] === 'true', execExitCode: int(ann[A('exec-exit-code')]) };
  if (ann[A('oom')] === 'true') return { ...base, exitAfterMs: runMs, exitCode: 137, oom: true, stdout, stderr };
  const annotated = int(ann[A('exit-code')]);
  if (annotated !== undefined) return { ...base, exitAfterMs: runMs, exitCode: annotated, oom: false, stdout, stderr };
  const m = /(?:^|\/)fake\/exit:(\d+)$/.exec(c.image);
  if (m) return { ...base, exitAfterMs: runMs, exitCode: Number(m[1]), oom: false, stdout, stderr };
  if (argv[0] === 'echo') return { ...base, exitAfterMs: 0, exitCode: 0, oom: false, stdout: stdout + argv.slice(1).join(' ') + '\n', stderr };
  return { ...base, exitCode: 0, oom: false, stdout, stderr };
}

const ok = (out: string, exitCode = 0): ExecSyncResult => ({ stdout: Buffer.from(out), stderr: Buffer.alloc(0), exitCode });

/** A scripted answer for ExecSync. */
export function fakeExec(c: FakeContainerView, b: FakeBehaviour, cmd: readonly string[]): ExecSyncResult {
  if (b.execExitCode !== undefined) return ok('', b.execExitCode);
  const [bin, ...rest] = cmd;
  const shell = bin === 'sh' && rest[0] === '-c' ? (rest[1] ?? '') : undefined;
  if (shell !== undefined) {
    const exit = /^\s*exit\s+(\d+)\s*$/.exec(shell);
    if (exit) return ok('', Number(exit[1]));
    return fakeExec(c, b, shell.trim().split(/\s+/));
  }
  switch (bin) {
    case 'true': return ok('');
    case 'false': return ok('', 1);
    case 'echo': return ok(rest.join(' ') + '\n');
    case 'hostname': return ok(c.hostname + '\n');
    case 'env': return ok(Object.entries(c.env).map(([k, v]) => `${k}=${v}\n`).join(''));
    case 'cat':
      if (rest[0] === '/etc/hostname') return ok(c.hostname + '\n');
      return { stdout: Buffer.alloc(0), stderr: Buffer.from(`cat: can't open '${rest[0] ?? ''}': No such file or directory\n`), exitCode: 1 };
    default:
      return { stdout: Buffer.alloc(0), stderr: Buffer.from(`sh: ${bin ?? ''}: not found\n`), exitCode: 127 };
  }
}

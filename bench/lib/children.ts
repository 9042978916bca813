/**
 * Child-process servers for benchmarks: a throwaway PKI (one CA for the serving certificate and an
 * admin client certificate), free loopback ports, spawning (pinned with taskset when available,
 * NODE_OPTIONS removed), waiting until a server answers over TLS+HTTP/2, and the CPU time a process
 * or thread has used (from /proc).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createCA, issueCert, writePemFile } from '../../src/util/pki.js';
import { openSessions, send, closeSessions, type TlsClient } from './h2-load.js';
import { freePort } from '../../src/util/free-port.js';
export { freePort };

export interface BenchPki {
  caFile: string;
  certFile: string;
  keyFile: string;
  /** Client TLS options: trusts the CA and authenticates as admin (system:masters). */
  client: Required<TlsClient>;
}

export async function makePki(dir: string): Promise<BenchPki> {
  const ca = await createCA({ commonName: 'corectl-bench-ca' });
  const serving = await issueCert({ ca, commonName: 'apiserver', dnsNames: ['localhost'], ips: ['127.0.0.1'], usages: 'server' });
  const admin = await issueCert({ ca, commonName: 'admin', organizations: ['system:masters'], usages: 'client' });
  const p = { caFile: join(dir, 'ca.crt'), certFile: join(dir, 'serving.crt'), keyFile: join(dir, 'serving.key') };
  await Promise.all([
    writePemFile(p.caFile, ca.certPem), writePemFile(p.certFile, serving.certPem), writePemFile(p.keyFile, serving.keyPem),
  ]);
  return { ...p, client: { ca: ca.certPem, cert: admin.certPem, key: admin.keyPem } };
}


let tasksetChecked: boolean | undefined;
/** True when `taskset` exists and the machine has at least two CPUs to split. */
export function canPin(cpus: number): boolean {
  tasksetChecked ??= spawnSync('taskset', ['-c', '0', 'true']).status === 0;
  return tasksetChecked && cpus >= 2;
}

/** Pins this process to one CPU (best effort). */
export function pinSelf(cpu: number): void {
  spawnSync('taskset', ['-cp', String(cpu), String(process.pid)], { stdio: 'ignore' });
}

export interface Child {
  proc: ChildProcess;
  stderrTail(): string;
  stop(): Promise<void>;
}

/**
 * Spawns `node args…`, optionally pinned to `cpu`, without NODE_OPTIONS in its environment.
 * `wrapper` (a command and its options, e.g. valgrind's) runs node instead.
 */
export function spawnNode(args: string[], cpu: number | undefined, wrapper: readonly string[] = []): Child {
  const env = { ...process.env };
  delete env['NODE_OPTIONS'];
  const command = [...(cpu === undefined ? [] : ['taskset', '-c', String(cpu)]), ...wrapper, process.execPath, ...args];
  const cmd = command[0]!;
  const argv = command.slice(1);
  const proc = spawn(cmd, argv, { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let tail = '';
  proc.stderr?.on('data', (d: Buffer) => { tail = (tail + d.toString()).slice(-4000); });
  return {
    proc,
    stderrTail: () => tail,
    async stop(): Promise<void> {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      const exited = new Promise<void>((r) => proc.once('exit', () => r()));
      proc.kill('SIGTERM');
      const t = setTimeout(() => proc.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(t);
    },
  };
}

/** Polls `path` over TLS+HTTP/2 until it answers 200, the child exits, or the deadline passes. */
export async function waitReady(url: string, tls: TlsClient, path: string, child: Child, deadlineMs = 30_000): Promise<void> {
  const end = Date.now() + deadlineMs;
  let wait = 50;
  for (;;) {
    if (child.proc.exitCode !== null) throw new Error(`server exited (${child.proc.exitCode}): ${child.stderrTail()}`);
    try {
      const [s] = await openSessions(url, tls, 1);
      try {
        if ((await send(s!, { path }, 2000)).status === 200) return;
      } finally {
        closeSessions([s!]);
      }
    } catch { /* not up yet */ }
    if (Date.now() > end) throw new Error(`server at ${url} not ready in time: ${child.stderrTail()}`);
    await new Promise((r) => setTimeout(r, wait));
    wait = Math.min(wait * 2, 500);
  }
}

/** Spawns `node args…` (pinned to `cpu` when given) and waits until `url` answers 200 on `readyPath`; stops it when it never does. */
export async function spawnReady(args: string[], cpu: number | undefined, url: string, tls: TlsClient, readyPath: string): Promise<Child> {
  const child = spawnNode(args, cpu);
  try {
    await waitReady(url, tls, readyPath, child);
  } catch (e) {
    await child.stop();
    throw e;
  }
  return child;
}

/**
 * A process's (or, with `tid`, one thread's) name and CPU seconds so far, from
 * /proc/<pid>[/task/<tid>]/stat; undefined where there is no such file (not Linux, gone).
 */
export function procStat(pid: number | 'self', tid?: string): { name: string; user: number; sys: number } | undefined {
  let f: string;
  try {
    f = readFileSync(tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The fields after the parenthesised name; utime and stime are fields 14 and 15, in ticks (CLK_TCK 100).
  const rest = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return { name: f.slice(f.indexOf('(') + 1, f.lastIndexOf(')')), user: Number(rest[11]) / 100, sys: Number(rest[12]) / 100 };
}

/**
 * Bench helpers: a throw-away PKI with coreconfig files, and `corectl <daemon>` child processes
 * run from the same compiled tree as the calling bench file (so `dist/` and `dist-NAME/` both
 * work). Children get an environment without NODE_OPTIONS so a loader or inspector set for the
 * parent does not leak into them.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createCA, issueCert, writePemFile } from '../../src/util/pki.js';
import { freePort } from '../../src/util/free-port.js';
import { procStat } from '../lib/children.js';
export { freePort };


export interface BenchPki {
  caFile: string;
  servingCertFile: string;
  servingKeyFile: string;
  /** Writes a coreconfig for `user` (a client certificate in system:masters) pointing at `server`. */
  coreconfig(user: string, server: string): Promise<string>;
}

export async function createBenchPki(dir: string): Promise<BenchPki> {
  const ca = await createCA({ commonName: 'corectl-bench-ca' });
  const serving = await issueCert({ ca, commonName: 'apiserver', dnsNames: ['localhost', 'kubernetes'], ips: ['127.0.0.1'], usages: 'server' });
  const f = { caFile: join(dir, 'ca.crt'), servingCertFile: join(dir, 'apiserver.crt'), servingKeyFile: join(dir, 'apiserver.key') };
  await Promise.all([writePemFile(f.caFile, ca.certPem), writePemFile(f.servingCertFile, serving.certPem), writePemFile(f.servingKeyFile, serving.keyPem)]);
  const b64 = (s: string): string => Buffer.from(s).toString('base64');
  return {
    ...f,
    async coreconfig(user, server) {
      const pair = await issueCert({ ca, commonName: user, organizations: ['system:masters'], usages: 'client' });
      const path = join(dir, `${user.replace(/[^a-z0-9-]/gi, '_')}.coreconfig`);
      await writeFile(path, [
        'apiVersion: v1', 'kind: Config', 'current-context: bench',
        'clusters:', '- name: bench', '  cluster:', `    server: ${server}`, `    certificate-authority-data: ${b64(ca.certPem)}`,
        'users:', `- name: ${user}`, '  user:', `    client-certificate-data: ${b64(pair.certPem)}`, `    client-key-data: ${b64(pair.keyPem)}`,
        'contexts:', '- name: bench', '  context:', '    cluster: bench', `    user: ${user}`, '',
      ].join('\n'), { mode: 0o600 });
      return path;
    },
  };
}

export interface Daemon {
  name: string;
  child: ChildProcess;
  /** Last few kB of stderr (for failure reports). */
  stderr(): string;
  stop(): Promise<void>;
}

/** Spawns `corectl <daemon> args...` from the compiled `cli.js` at `cliFile`. */
export function spawnDaemon(cliFile: string, daemon: string, args: string[], opts: { verbose?: boolean; nodeArgs?: string[] } = {}): Daemon {
  const env = { ...process.env };
  delete env['NODE_OPTIONS'];
  const child = spawn(process.execPath, [
    ...(opts.nodeArgs ?? []), '--input-type=module', '-e',
    `import(${JSON.stringify('file://' + cliFile)}).then(async (m) => { process.exitCode = await m.main(process.argv); });`,
    'corectl', daemon, ...args,
  ], { stdio: ['ignore', opts.verbose ? 'inherit' : 'ignore', 'pipe'], env });
  let err = '';
  child.stderr?.on('data', (d: Buffer) => {
    if (opts.verbose) process.stderr.write(d);
    err = (err + d.toString()).slice(-4000);
  });
  const exited = new Promise<void>((r) => { if (child.exitCode !== null) r(); else child.once('exit', () => r()); });
  return {
    name: daemon, child, stderr: () => err,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(t);
    },
  };
}

/** Plain-HTTP GET on loopback; resolves the status code. */
export function httpStatus(port: number, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, timeout: 2000 }, (res) => { res.resume(); resolve(res.statusCode ?? 0); });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

/** Polls `check` (backing off to 250 ms) until it returns a value, the daemon exits, or the deadline. */
export async function until<T>(what: string, check: () => Promise<T | undefined>, deadlineMs: number, daemons: Daemon[] = []): Promise<T> {
  const end = Date.now() + deadlineMs;
  let wait = 20;
  for (;;) {
    for (const d of daemons) {
      if (d.child.exitCode !== null) throw new Error(`${d.name} exited (${d.child.exitCode}) before ${what}\n${d.stderr()}`);
    }
    try {
      const v = await check();
      if (v !== undefined) return v;
    } catch { /* not yet */ }
    if (Date.now() > end) throw new Error(`${what} not reached within ${deadlineMs} ms`);
    await new Promise((r) => setTimeout(r, wait));
    wait = Math.min(wait * 2, 250);
  }
}

/** CPU seconds (user + system) a process has used so far, from /proc (Linux); undefined elsewhere. */
export async function cpuSeconds(pid: number | undefined): Promise<number | undefined> {
  const t = pid === undefined ? undefined : procStat(pid);
  return t && Number.isFinite(t.user + t.sys) ? t.user + t.sys : undefined;
}

/**
 * Starts `corectl server` as users run it: a real child process (from the compiled src/cli.js),
 * with its stdout progress lines captured. (Not a test file itself.)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../src/util/free-port.js';
export { freePort };

const cli = fileURLToPath(new URL('../../src/cli.js', import.meta.url));


export interface Running {
  child: ChildProcess;
  lines: string[];
  stderr: () => string;
  waitFor(re: RegExp, ms?: number): Promise<string>;
  stop(): Promise<number | null>;
}

export function startServer(args: string[]): Running {
  // Servers of tests that run at once (as root, each with its service proxy) must not share
  // the default nftables table: each gets its own unless the test names one.
  const table = args.some((a) => a.includes('--nft-table=')) ? [] : [`--proxy-arg=--nft-table=corectl-proxy-t${randomBytes(4).toString('hex')}`];
  const child = spawn(process.execPath, [
    '--input-type=module', '-e',
    `const m = await import(${JSON.stringify('file://' + cli)}); process.exitCode = await m.main(process.argv);`,
    'corectl', 'server', ...args, ...table,
  ], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NODE_OPTIONS: '' } });
  const lines: string[] = [];
  let buf = '';
  let err = '';
  const waiters: Array<() => void> = [];
  child.stdout?.on('data', (d: Buffer) => {
    buf += d.toString();
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) { lines.push(buf.slice(0, nl)); buf = buf.slice(nl + 1); }
    for (const w of waiters.splice(0)) w();
  });
  child.stderr?.on('data', (d: Buffer) => { err = (err + d.toString()).slice(-8000); });
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => { for (const w of waiters.splice(0)) w(); r(code); }));
  return {
    child, lines, stderr: () => err,
    async waitFor(re: RegExp, ms = 30_000): Promise<string> {
      const end = Date.now() + ms;
      for (;;) {
        const hit = lines.find((l) => re.test(l));
        if (hit) return hit;
        if (child.exitCode !== null) throw new Error(`server exited (${child.exitCode}) before ${re}:\n${lines.join('\n')}\n${err}`);
        if (Date.now() > end) throw new Error(`no line ${re} within ${ms} ms:\n${lines.join('\n')}\n${err.slice(-3000)}`);
        await new Promise<void>((r) => { const tm = setTimeout(r, 500); waiters.push(() => { clearTimeout(tm); r(); }); });
      }
    },
    async stop(): Promise<number | null> {
      if (child.exitCode !== null) return child.exitCode;
      child.kill('SIGTERM');
      const kill = setTimeout(() => child.kill('SIGKILL'), 30_000);
      const code = await exited;
      clearTimeout(kill);
      return code;
    },
  };
}


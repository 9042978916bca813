/**
 * Runs one kubectl binary against a test API server's coreconfig, with its own discovery cache
 * directory (so versions never share one), and gives back the exit code and both outputs.
 */
import { execFile } from 'node:child_process';
import type { Test } from 'tap';

export interface KubectlRun { code: number; stdout: string; stderr: string }

/** Standard input for the run, or that and extra environment variables. */
export type KubectlInput = string | { input?: string; env?: Record<string, string> };

export interface KubectlRunner {
  /** The binary's file name, e.g. kubectl.1.33 (for test names). */
  readonly ver: string;
  run(args: string[], input?: KubectlInput): Promise<KubectlRun>;
  /** Runs and asserts exit code 0 (stderr in the message when not); resolves stdout. */
  ok(t: Test, args: string[], input?: KubectlInput): Promise<string>;
  /** `ok` with `-o json`, parsed. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json(t: Test, args: string[]): Promise<any>;
}

export function kubectlRunner(bin: string, kubeconfig: string, cacheDir: string): KubectlRunner {
  const ver = bin.split('/').pop()!;
  const run = (args: string[], given?: KubectlInput): Promise<KubectlRun> => new Promise((resolve) => {
    const { input, env } = typeof given === 'string' ? { input: given, env: undefined } : given ?? {};
    const child = execFile(bin, [`--kubeconfig=${kubeconfig}`, `--cache-dir=${cacheDir}`, ...args], { timeout: 30_000, ...(env ? { env: { ...process.env, ...env } } : {}) }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout: String(stdout), stderr: String(stderr) });
    });
    if (input !== undefined) child.stdin!.end(input);
  });
  const ok = async (t: Test, args: string[], input?: KubectlInput): Promise<string> => {
    const r = await run(args, input);
    t.equal(r.code, 0, `${ver} ${args.join(' ')}${r.code ? `: ${r.stderr}` : ''}`);
    return r.stdout;
  };
  return { ver, run, ok, json: async (t, args) => JSON.parse(await ok(t, [...args, '-o', 'json'])) };
}

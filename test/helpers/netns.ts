/**
 * A private network namespace for tests that program nftables, so that they never touch the
 * host's ruleset. Needs root and the `ip` and `nft` commands; `netnsSkipReason()` says why not.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';

export function netnsSkipReason(): string | undefined {
  if (process.getuid?.() !== 0) return 'needs root (network namespaces and nftables)';
  for (const cmd of [['ip', '-V'], ['nft', '--version']]) {
    try { execFileSync(cmd[0] as string, cmd.slice(1), { stdio: 'ignore' }); } catch { return `needs the ${cmd[0]} command`; }
  }
  return undefined;
}

export interface NetNs {
  readonly name: string;
  /** argv prefix running a command inside the namespace. */
  readonly exec: readonly string[];
  /** Runs a command inside; returns stdout. */
  run(...argv: string[]): string;
  remove(): void;
}

export function createNetns(prefix = 'cpx'): NetNs {
  const name = `${prefix}-${randomBytes(4).toString('hex')}`;
  execFileSync('ip', ['netns', 'add', name]);
  execFileSync('ip', ['netns', 'exec', name, 'ip', 'link', 'set', 'lo', 'up']);
  const exec = ['ip', 'netns', 'exec', name];
  return {
    name, exec,
    run: (...argv) => execFileSync('ip', ['netns', 'exec', name, ...argv], { encoding: 'utf8' }),
    remove: () => { try { execFileSync('ip', ['netns', 'del', name]); } catch { /* already gone */ } },
  };
}

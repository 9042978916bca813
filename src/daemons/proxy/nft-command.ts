/**
 * Running Debian's `nft` command: a script through `nft -f -` (one atomic transaction), JSON
 * listings of our table, and deleting it. `command` is the argv prefix, ['nft'] by default;
 * tests use ['ip', 'netns', 'exec', <ns>, 'nft'] to keep off the host's ruleset.
 */
import { spawn } from 'node:child_process';
import type { NftFamily } from './nft-rules.js';
import type { KernelObjects } from './nft-transaction.js';

export class NftError extends Error {}

export class NftCommand {
  constructor(readonly command: readonly string[] = ['nft']) {}

  /** Runs nft with `args`, `input` on stdin; resolves to stdout, rejects with stderr. */
  run(args: readonly string[], input?: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const [cmd, ...pre] = this.command;
      const child = spawn(cmd as string, [...pre, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      child.stdout.on('data', (b: Buffer) => out.push(b));
      child.stderr.on('data', (b: Buffer) => err.push(b));
      child.on('error', (e) => reject(new NftError(`${cmd}: ${e.message}`)));
      child.on('close', (code) => {
        if (code === 0) resolve(Buffer.concat(out).toString('utf8'));
        else reject(new NftError(`nft ${args.join(' ')} exited ${code}: ${Buffer.concat(err).toString('utf8').trim().split('\n').slice(0, 6).join(' | ')}`));
      });
      child.stdin.on('error', () => { /* the close handler reports */ });
      child.stdin.end(input ?? '');
    });
  }

  /** Applies a script as one transaction. */
  async apply(script: string): Promise<void> {
    await this.run(['-f', '-'], script);
  }

  /** Names of the chains and sets in `<family> <table>`; empty when the table is absent. */
  async objects(table: string, family: NftFamily = 'ip'): Promise<KernelObjects> {
    const chains = new Set<string>();
    const sets = new Set<string>();
    const exists = await this.hasTable(table, family);
    if (!exists) return { chains, sets };
    const listing = JSON.parse(await this.run(['-j', '-t', 'list', 'chains', family])) as { nftables?: Array<Record<string, { table?: string; name?: string }>> };
    for (const item of listing.nftables ?? []) if (item['chain']?.table === table && item['chain'].name) chains.add(item['chain'].name);
    const sl = JSON.parse(await this.run(['-j', '-t', 'list', 'sets', family])) as { nftables?: Array<Record<string, { table?: string; name?: string }>> };
    for (const item of sl.nftables ?? []) if (item['set']?.table === table && item['set'].name) sets.add(item['set'].name);
    return { chains, sets };
  }

  async hasTable(table: string, family: NftFamily = 'ip'): Promise<boolean> {
    const l = JSON.parse(await this.run(['-j', 'list', 'tables', family])) as { nftables?: Array<Record<string, { name?: string }>> };
    return (l.nftables ?? []).some((i) => i['table']?.name === table);
  }

  /** Deletes `<family> <table>` if it exists; true when there was one. */
  async deleteTable(table: string, family: NftFamily = 'ip'): Promise<boolean> {
    if (!(await this.hasTable(table, family))) return false;
    await this.run(['delete', 'table', family, table]);
    return true;
  }
}

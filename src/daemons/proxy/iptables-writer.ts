/**
 * The iptables mode's rule writer: every sync is one `iptables-restore --noflush` of all our
 * chains in the nat and filter tables (iptables-rules.ts); full syncs also make sure the jumps
 * from the built-in chains into ours are there. Those jump rules are the only things of ours
 * outside our own chains; `cleanup` removes them and every CPX- chain. `command` is the argv
 * prefix (tests run it in a network namespace). With `family: 'ip6'` the same through
 * ip6tables-save, ip6tables-restore and ip6tables.
 */
import { spawn } from 'node:child_process';
import { CHAIN_PREFIX, JUMPS, iptablesState, restoreInput } from './iptables-rules.js';
import type { NftOptions } from './nft-rules.js';
import type { RuleWriter, SyncCounts } from './rule-writer.js';
import { buildServicePorts, type EndpointSliceObject, type ServiceObject } from './service-model.js';

function exec(argv: readonly string[], input?: string): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0] as string, argv.slice(1), { stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? 1, out: Buffer.concat(out).toString(), err: Buffer.concat(err).toString() }));
    child.stdin.on('error', () => { /* reported by close */ });
    child.stdin.end(input ?? '');
  });
}

export class IptablesWriter implements RuleWriter {
  private synced = false;

  /** The command names of the family: iptables, or ip6tables. */
  private readonly bin: string;

  constructor(private readonly rules: Omit<NftOptions, 'table'>, private readonly nodeName: string, private readonly command: readonly string[] = []) {
    this.bin = rules.family === 'ip6' ? 'ip6tables' : 'iptables';
  }

  get hasApplied(): boolean { return this.synced; }

  reset(): void { this.synced = false; }

  private async run(argv: readonly string[], input?: string): Promise<string> {
    const r = await exec([...this.command, ...argv], input);
    if (r.code !== 0) throw new Error(`${argv.join(' ')} exited ${r.code}: ${r.err.trim().split('\n').slice(0, 4).join(' | ')}`);
    return r.out;
  }

  /** Names of our chains per table, from iptables-save. */
  async ourChains(): Promise<{ nat: string[]; filter: string[] }> {
    const chains = async (table: string): Promise<string[]> =>
      (await this.run([`${this.bin}-save`, '-t', table])).split('\n').filter((l) => l.startsWith(`:${CHAIN_PREFIX}`)).map((l) => l.slice(1).split(' ')[0] as string);
    return { nat: await chains('nat'), filter: await chains('filter') };
  }

  async sync(services: readonly ServiceObject[], slices: readonly EndpointSliceObject[], full: boolean): Promise<SyncCounts> {
    const ports = buildServicePorts(services, slices, this.nodeName, this.rules.family === 'ip6' ? 6 : 4);
    const state = iptablesState(ports, this.rules);
    await this.run([`${this.bin}-restore`, '--noflush', '-w', '5'], restoreInput(state, await this.ourChains()));
    if (full || !this.synced) await this.ensureJumps();
    this.synced = true;
    return { ports: ports.length, udpPorts: ports.filter((p) => p.protocol === 'udp'), endpoints: [...state.tables.nat.keys()].filter((c) => c.startsWith('CPX-SEP-')).length };
  }

  private async ensureJumps(): Promise<void> {
    for (const [table, chain, spec] of JUMPS) {
      const check = await exec([...this.command, this.bin, '-w', '5', '-t', table, '-C', chain, ...spec]);
      if (check.code !== 0) await this.run([this.bin, '-w', '5', '-t', table, '-I', chain, '1', ...spec]);
    }
  }

  /** Removes the jumps and every chain of ours; true when there was anything. */
  async cleanup(): Promise<boolean> {
    let any = false;
    for (const [table, chain, spec] of JUMPS) {
      while ((await exec([...this.command, this.bin, '-w', '5', '-t', table, '-D', chain, ...spec])).code === 0) any = true;
    }
    const ours = await this.ourChains();
    if (ours.nat.length + ours.filter.length > 0) {
      any = true;
      await this.run([`${this.bin}-restore`, '--noflush', '-w', '5'], restoreInput({ tables: { nat: new Map(), filter: new Map() } }, ours));
    }
    return any;
  }
}

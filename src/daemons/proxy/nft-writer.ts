/**
 * The nftables rule writer: builds the wanted state (rebuilding only the Services that, or
 * whose EndpointSlices, changed) and applies it as one `nft -f -` transaction, full or carrying
 * only the differences from the state last applied.
 */
import type { NftCommand } from './nft-command.js';
import { mergeFragments, portsFragment, type NftOptions, type NftState } from './nft-rules.js';
import { isNoop, transactionScript } from './nft-transaction.js';
import type { RuleWriter, SyncCounts } from './rule-writer.js';
import { servicePortsOf, slicesByService, type EndpointSliceObject, type ServiceObject, type ServicePort } from './service-model.js';

/** One Service's rules, kept while neither it nor its EndpointSlices change. */
interface CachedService {
  svc: ServiceObject;
  slices: readonly EndpointSliceObject[];
  ports: number;
  udp: readonly ServicePort[];
  fragment: NftState;
}

function sameRefs<T>(a: readonly T[], b: readonly T[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

export class NftWriter implements RuleWriter {
  private applied: NftState | undefined;
  /** Informer objects are never modified in place, so identity tells a change. */
  private cache = new Map<string, CachedService>();

  constructor(private readonly nft: NftCommand, private readonly rules: NftOptions, private readonly nodeName: string) {}

  get hasApplied(): boolean { return this.applied !== undefined; }

  reset(): void { this.applied = undefined; }

  async sync(services: readonly ServiceObject[], slices: readonly EndpointSliceObject[], full: boolean): Promise<SyncCounts> {
    const { want, ports, udpPorts } = this.wanted(services, slices);
    const family = this.rules.family ?? 'ip';
    const kernel = full ? await this.nft.objects(this.rules.table, family) : undefined;
    const script = transactionScript(this.rules.table, want, full ? undefined : this.applied, kernel, family);
    if (full || !isNoop(script)) await this.nft.apply(script);
    this.applied = want;
    return { ports, udpPorts, endpoints: [...want.chains.keys()].filter((c) => c.startsWith('sep_')).length };
  }

  private wanted(services: readonly ServiceObject[], allSlices: readonly EndpointSliceObject[]): { want: NftState; ports: number; udpPorts: ServicePort[] } {
    const family = this.rules.family === 'ip6' ? 6 : 4;
    const byService = slicesByService(allSlices, family);
    const next = new Map<string, CachedService>();
    let ports = 0;
    const udpPorts: ServicePort[] = [];
    for (const svc of services) {
      const key = `${svc.metadata?.namespace ?? ''}/${svc.metadata?.name ?? ''}`;
      const slices = byService.get(key) ?? [];
      slices.sort((a, b) => ((a.metadata?.name ?? '') < (b.metadata?.name ?? '') ? -1 : 1));
      let c = this.cache.get(key);
      if (!c || c.svc !== svc || !sameRefs(c.slices, slices)) {
        const list = servicePortsOf(svc, slices, this.nodeName, family);
        c = { svc, slices, ports: list.length, udp: list.filter((p) => p.protocol === 'udp'), fragment: portsFragment(list, this.rules) };
      }
      next.set(key, c);
      ports += c.ports;
      if (c.udp.length > 0) udpPorts.push(...c.udp);
    }
    this.cache = next;
    return { want: mergeFragments([...next.values()].map((c) => c.fragment), this.rules), ports, udpPorts };
  }
}

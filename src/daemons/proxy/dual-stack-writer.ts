/**
 * Both IP families in one sync loop, as kube-proxy's dual-stack meta-proxier: an IPv4 rule writer
 * and an IPv6 one of the same mode (nftables: tables `ip <name>` and `ip6 <name>`; iptables:
 * iptables and ip6tables). The IPv6 writer only starts once the cluster has a Service with an
 * IPv6 ClusterIP (an IPv6 or dual-stack service range), so an IPv4-only host gets nothing IPv6
 * from us; rules it left earlier are found at the first sync and kept in step (emptied).
 */
import type { NftCommand } from './nft-command.js';
import type { NftOptions } from './nft-rules.js';
import { NftWriter } from './nft-writer.js';
import type { RuleWriter, SyncCounts } from './rule-writer.js';
import { clusterIpOf, type EndpointSliceObject, type ServiceObject } from './service-model.js';

export class DualStackWriter implements RuleWriter {
  /** True once an IPv6 Service was seen (or rules of ours were already there). */
  ipv6Active = false;
  private checkedKernel = false;

  /** `v6Exists` tells whether the IPv6 writer's rules are in the kernel (a failure: no). */
  constructor(private readonly v4: RuleWriter, private readonly v6: RuleWriter, private readonly v6Exists: () => Promise<boolean>) {}

  get hasApplied(): boolean { return this.v4.hasApplied && (!this.ipv6Active || this.v6.hasApplied); }

  reset(): void {
    this.v4.reset();
    this.v6.reset();
  }

  async sync(services: readonly ServiceObject[], slices: readonly EndpointSliceObject[], full: boolean): Promise<SyncCounts> {
    if (!this.checkedKernel) {
      this.ipv6Active ||= await this.v6Exists().catch(() => false);
      this.checkedKernel = true;
    }
    if (!this.ipv6Active && services.some((s) => clusterIpOf(s, 6) !== undefined)) this.ipv6Active = true;
    const c4 = await this.v4.sync(services, slices, full);
    if (!this.ipv6Active) return c4;
    const c6 = await this.v6.sync(services, slices, full || !this.v6.hasApplied);
    return { ports: c4.ports + c6.ports, endpoints: c4.endpoints + c6.endpoints, udpPorts: [...c4.udpPorts, ...c6.udpPorts] };
  }
}

/** The nftables mode for both families: tables `ip <rules4.table>` and `ip6 <rules6.table>`. */
export function dualStackNft(nft: NftCommand, rules4: NftOptions, rules6: NftOptions, nodeName: string): DualStackWriter {
  return new DualStackWriter(
    new NftWriter(nft, { ...rules4, family: 'ip' }, nodeName),
    new NftWriter(nft, { ...rules6, family: 'ip6' }, nodeName),
    () => nft.hasTable(rules6.table, 'ip6'),
  );
}

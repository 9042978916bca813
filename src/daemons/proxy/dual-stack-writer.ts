/**
 * The nftables mode for both IP families, as kube-proxy's dual-stack proxier: an IPv4 writer
 * (table `ip <name>`) and an IPv6 one (table `ip6 <name>`, same layout) in one sync loop. The
 * IPv6 table is only created once the cluster has a Service with an IPv6 ClusterIP (an IPv6 or
 * dual-stack service range); until then an IPv4-only host gets nothing but its `ip` table.
 * Once created it is kept in step, emptied of Services like the IPv4 one, and removed with it.
 */
import type { NftCommand } from './nft-command.js';
import type { NftOptions } from './nft-rules.js';
import { NftWriter } from './nft-writer.js';
import type { RuleWriter, SyncCounts } from './rule-writer.js';
import { clusterIpOf, type EndpointSliceObject, type ServiceObject } from './service-model.js';

export class DualStackNftWriter implements RuleWriter {
  private readonly v4: NftWriter;
  private readonly v6: NftWriter;
  /** True once an IPv6 Service was seen (or the table was already there). */
  ipv6Active = false;
  private checkedKernel = false;

  constructor(private readonly nft: NftCommand, rules4: NftOptions, private readonly rules6: NftOptions, nodeName: string) {
    this.v4 = new NftWriter(nft, { ...rules4, family: 'ip' }, nodeName);
    this.v6 = new NftWriter(nft, { ...rules6, family: 'ip6' }, nodeName);
  }

  get hasApplied(): boolean { return this.v4.hasApplied && (!this.ipv6Active || this.v6.hasApplied); }

  reset(): void {
    this.v4.reset();
    this.v6.reset();
  }

  async sync(services: readonly ServiceObject[], slices: readonly EndpointSliceObject[], full: boolean): Promise<SyncCounts> {
    // A table left by an earlier run is kept in step (and emptied) even with no IPv6 Service now.
    if (!this.checkedKernel) {
      this.ipv6Active ||= await this.nft.hasTable(this.rules6.table, 'ip6').catch(() => false);
      this.checkedKernel = true;
    }
    if (!this.ipv6Active && services.some((s) => clusterIpOf(s, 6) !== undefined)) this.ipv6Active = true;
    const c4 = await this.v4.sync(services, slices, full);
    if (!this.ipv6Active) return c4;
    const c6 = await this.v6.sync(services, slices, full || !this.v6.hasApplied);
    return { ports: c4.ports + c6.ports, endpoints: c4.endpoints + c6.endpoints, udpPorts: [...c4.udpPorts, ...c6.udpPorts] };
  }
}

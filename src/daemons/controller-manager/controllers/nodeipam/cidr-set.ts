/**
 * The pod CIDR blocks of one cluster CIDR (Kubernetes' cidrset): the cluster CIDR cut into
 * blocks of the node mask size, numbered from its network address, with a record of the used
 * ones.
 *
 * Worked example: cluster 10.244.0.0/16, node mask 24 → 256 blocks; block i is 10.244.i.0/24.
 * Occupying 10.244.1.0/24 marks block 1; occupying a CIDR larger than a block (the service
 * range 10.244.0.0/20, say) marks every block it covers (0..15); one smaller than a block
 * (10.244.3.128/25) marks the block that contains it (3).
 *
 * Contract: `allocateNext` hands out the first free block at or after the one following the
 * last block handed out, wrapping around (Kubernetes' round robin: a block just released is
 * not the next one handed out unless the search wraps to it); `occupy` and `release` are
 * idempotent and fail, changing nothing, for a CIDR outside the cluster CIDR. All arithmetic is
 * on bigint so IPv4 and IPv6 share one path.
 */
import { formatCidr, parseCidr, type Cidr, type IpBytes } from '../../../../util/ip.js';

/** Kubernetes' limit for IPv6: 16 bits between the cluster and node prefixes (a 65536-bit map). */
const MAX_IPV6_SUBNET_DIFF = 16;

export const ERR_NO_CIDRS_REMAINING = 'CIDR allocation failed; there are no remaining CIDRs left to allocate in the accepted range';
export const ERR_SUBNET_TOO_BIG = 'New CIDR set failed; the node CIDR size is too big';

/** A CIDR as a bigint network address plus its prefix in an address of `bits` bits. */
export interface BigCidr {
  readonly bits: 32 | 128;
  readonly base: bigint;
  readonly prefix: number;
}

function toBig(ip: IpBytes): bigint {
  return ip.reduce((acc, b) => (acc << 8n) | BigInt(b), 0n);
}

function toBytes(v: bigint, bits: 32 | 128): IpBytes {
  const out: number[] = [];
  for (let shift = bits - 8; shift >= 0; shift -= 8) out.push(Number((v >> BigInt(shift)) & 0xffn));
  return out;
}

function mask(bits: number, prefix: number): bigint {
  const all = (1n << BigInt(bits)) - 1n;
  return all ^ ((1n << BigInt(bits - prefix)) - 1n);
}

/** Parses CIDR text as Go's net.ParseCIDR does (host bits cleared); undefined when invalid. */
export function parseBigCidr(text: string): BigCidr | undefined {
  const c = parseCidr(text.trim());
  if (!c) return undefined;
  return { bits: c.ip.length === 4 ? 32 : 128, base: toBig(c.ip), prefix: c.prefix };
}

export function formatBigCidr(c: BigCidr): string {
  const cidr: Cidr = { ip: toBytes(c.base, c.bits), prefix: c.prefix };
  return formatCidr(cidr);
}

/** Whether the two CIDRs share an address (one contains the other's network address). */
export function cidrsOverlap(a: BigCidr, b: BigCidr): boolean {
  if (a.bits !== b.bits) return false;
  const contains = (outer: BigCidr, inner: BigCidr): boolean => (inner.base & mask(outer.bits, outer.prefix)) === outer.base;
  return contains(a, b) || contains(b, a);
}

export class CidrSet {
  /** Number of node blocks in the cluster CIDR. */
  readonly maxCidrs: number;
  private readonly used = new Set<number>();
  private nextCandidate = 0;

  /** Throws ERR_SUBNET_TOO_BIG for an IPv6 cluster more than 16 bits wider than its blocks. */
  constructor(readonly cluster: BigCidr, readonly nodeMaskSize: number) {
    if (cluster.bits === 128 && nodeMaskSize - cluster.prefix > MAX_IPV6_SUBNET_DIFF) throw new Error(ERR_SUBNET_TOO_BIG);
    this.maxCidrs = 2 ** (nodeMaskSize - cluster.prefix);
  }

  get allocatedCount(): number { return this.used.size; }

  /** Marks and returns the next free block; throws ERR_NO_CIDRS_REMAINING when all are used. */
  allocateNext(): BigCidr {
    if (this.used.size >= this.maxCidrs) throw new Error(ERR_NO_CIDRS_REMAINING);
    let candidate = this.nextCandidate;
    while (this.used.has(candidate)) candidate = (candidate + 1) % this.maxCidrs;
    this.nextCandidate = (candidate + 1) % this.maxCidrs;
    this.used.add(candidate);
    return this.block(candidate);
  }

  /** Marks every block the CIDR covers as used. */
  occupy(cidr: BigCidr): void {
    const [begin, end] = this.indices(cidr);
    for (let i = begin; i <= end; i++) this.used.add(i);
  }

  /** Marks every block the CIDR covers as free. */
  release(cidr: BigCidr): void {
    const [begin, end] = this.indices(cidr);
    for (let i = begin; i <= end; i++) this.used.delete(i);
  }

  private block(index: number): BigCidr {
    const shift = BigInt(this.cluster.bits - this.nodeMaskSize);
    return { bits: this.cluster.bits, base: this.cluster.base | (BigInt(index) << shift), prefix: this.nodeMaskSize };
  }

  private indexOf(ip: bigint): number {
    const index = (this.cluster.base ^ ip) >> BigInt(this.cluster.bits - this.nodeMaskSize);
    if (index >= BigInt(this.maxCidrs)) {
      throw new Error(`CIDR: ${formatBigCidr({ bits: this.cluster.bits, base: ip, prefix: this.nodeMaskSize })} is out of the range of CIDR allocator`);
    }
    return Number(index);
  }

  /** First and last block index the CIDR covers; throws when it is outside the cluster CIDR. */
  private indices(cidr: BigCidr): [number, number] {
    if (!cidrsOverlap(this.cluster, cidr)) {
      throw new Error(`cidr ${formatBigCidr(cidr)} is out the range of cluster cidr ${formatBigCidr(this.cluster)}`);
    }
    // A CIDR as wide as the cluster's or wider covers all of it.
    if (cidr.prefix <= this.cluster.prefix) return [0, this.maxCidrs - 1];
    const nodeMask = mask(cidr.bits, this.nodeMaskSize);
    const last = cidr.base | (~mask(cidr.bits, cidr.prefix) & ((1n << BigInt(cidr.bits)) - 1n));
    return [this.indexOf(cidr.base & nodeMask), this.indexOf(last & nodeMask)];
  }
}

/**
 * Service cluster IPs from --service-cluster-ip-range (IPv4 or IPv6). Offsets count from the
 * network address; the network address (and the IPv4 broadcast address) are never handed out;
 * the first usable IP is reserved for the `kubernetes` service (allocated explicitly by it).
 */
import type { ObjectStore } from '../../../storage/object-store-types.js';
import { BitmapRange, type RangeSnapshot } from './bitmap-range.js';

const MAX_SIZE = 1 << 20;

export interface ParsedCidr { family: 4 | 6; base: bigint; bits: number; prefix: number; text: string }

export function parseIp(s: string): { family: 4 | 6; value: bigint } | undefined {
  if (/^\d+\.\d+\.\d+\.\d+$/.test(s)) {
    const parts = s.split('.').map(Number);
    if (parts.some((p) => p > 255)) return undefined;
    return { family: 4, value: parts.reduce((a, p) => (a << 8n) | BigInt(p), 0n) };
  }
  if (!s.includes(':')) return undefined;
  let head = s, tail = '';
  if (s.includes('::')) [head, tail] = s.split('::') as [string, string];
  const h = head ? head.split(':') : [], t = tail ? tail.split(':') : [];
  if (!s.includes('::') && h.length !== 8) return undefined;
  const groups = [...h, ...Array(8 - h.length - t.length).fill('0'), ...t];
  if (groups.length !== 8 || groups.some((g) => !/^[0-9a-fA-F]{1,4}$/.test(g))) return undefined;
  return { family: 6, value: groups.reduce((a, g) => (a << 16n) | BigInt(parseInt(g, 16)), 0n) };
}

export function formatIp(family: 4 | 6, v: bigint): string {
  if (family === 4) return [24n, 16n, 8n, 0n].map((s) => String((v >> s) & 255n)).join('.');
  const groups: string[] = [];
  for (let i = 7; i >= 0; i--) groups.push(((v >> BigInt(i * 16)) & 0xffffn).toString(16));
  // Compress the longest run of zero groups.
  let best = -1, bestLen = 0;
  for (let i = 0; i < 8;) {
    if (groups[i] !== '0') { i++; continue; }
    let j = i;
    while (j < 8 && groups[j] === '0') j++;
    if (j - i > bestLen && j - i > 1) { best = i; bestLen = j - i; }
    i = j;
  }
  if (best < 0) return groups.join(':');
  return `${groups.slice(0, best).join(':')}::${groups.slice(best + bestLen).join(':')}`;
}

export function parseCidr(text: string): ParsedCidr {
  const [ip, pre] = text.trim().split('/');
  const p = parseIp(ip ?? '');
  if (!p || pre === undefined || !/^\d+$/.test(pre)) throw new Error(`invalid CIDR ${JSON.stringify(text)}`);
  const bits = p.family === 4 ? 32 : 128, prefix = Number(pre);
  if (prefix > bits) throw new Error(`invalid CIDR ${JSON.stringify(text)}`);
  const mask = ((1n << BigInt(bits)) - 1n) ^ ((1n << BigInt(bits - prefix)) - 1n);
  return { family: p.family, base: p.value & mask, bits, prefix, text: `${formatIp(p.family, p.value & mask)}/${prefix}` };
}

export class IpAllocator {
  readonly cidr: ParsedCidr;
  private readonly range: BitmapRange;
  /** Usable addresses: offsets 1 .. size (network address excluded). */
  readonly size: number;

  constructor(store: ObjectStore, cidrText: string) {
    this.cidr = parseCidr(cidrText);
    const total = 1n << BigInt(this.cidr.bits - this.cidr.prefix);
    let usable = total - 1n; // minus the network address
    if (this.cidr.family === 4 && total > 2n) usable -= 1n; // minus broadcast
    this.size = Number(usable > BigInt(MAX_SIZE) ? BigInt(MAX_SIZE) : usable < 0n ? 0n : usable);
    this.range = new BitmapRange(store, 'serviceips', this.cidr.text, this.size);
  }

  family(): 4 | 6 { return this.cidr.family; }

  /** Offset in the bitmap for an IP, or undefined when outside the usable range. */
  offsetOf(ip: string): number | undefined {
    const p = parseIp(ip);
    if (!p || p.family !== this.cidr.family) return undefined;
    const off = p.value - this.cidr.base - 1n;
    if (off < 0n || off >= BigInt(this.size)) return undefined;
    return Number(off);
  }

  ipAt(offset: number): string { return formatIp(this.cidr.family, this.cidr.base + 1n + BigInt(offset)); }

  /** The first usable IP: the `kubernetes` service's. */
  firstIp(): string { return this.ipAt(0); }

  async allocateNext(): Promise<string> {
    // Offset 0 is the kubernetes service's; random allocation never takes it.
    for (let attempt = 0; attempt < 8; attempt++) {
      const off = await this.range.allocate();
      if (off !== 0 || this.size === 1) return this.ipAt(off);
      await this.range.release(0);
    }
    return this.ipAt(await this.range.allocate());
  }

  async allocate(ip: string): Promise<void> {
    const off = this.offsetOf(ip);
    if (off === undefined) throw new RangeError(ip);
    await this.range.allocate(off);
  }

  async release(ip: string): Promise<void> {
    const off = this.offsetOf(ip);
    if (off !== undefined) await this.range.release(off);
  }

  async isAllocated(ip: string): Promise<boolean> {
    const off = this.offsetOf(ip);
    return off !== undefined && this.range.isAllocated(off);
  }

  snapshot(): Promise<RangeSnapshot> { return this.range.snapshot(); }
  restore(snap: RangeSnapshot, offsets: Iterable<number>): Promise<boolean> { return this.range.restore(snap, offsets); }

  async reset(ips: Iterable<string>): Promise<void> {
    const offs: number[] = [];
    for (const ip of ips) { const o = this.offsetOf(ip); if (o !== undefined) offs.push(o); }
    await this.range.reset(offs);
  }
}

/**
 * Hands out IPv4 addresses from a CIDR for fake sandboxes: never the network address, the
 * first host (.1, the gateway by convention) or the broadcast address; freed addresses are
 * handed out again once the cursor wraps around.
 */
import { RuntimeError } from '../runtime-errors.js';

function ipv4ToInt(ip: string): number {
  const parts = ip.split('.').map(Number);
  if (parts.length !== 4 || parts.some((p) => !Number.isInteger(p) || p < 0 || p > 255)) throw new Error(`bad IPv4 address ${ip}`);
  return parts.reduce((acc, p) => acc * 256 + p, 0);
}
const intToIpv4 = (n: number): string => [24, 16, 8, 0].map((s) => Math.floor(n / 2 ** s) % 256).join('.');

export class Ipv4Pool {
  private readonly base: number;
  private readonly size: number;
  private readonly used = new Set<number>();
  private cursor = 2;

  constructor(cidr: string) {
    const [net, bits] = cidr.split('/');
    const prefix = Number(bits);
    if (!Number.isInteger(prefix) || prefix < 8 || prefix > 30) throw new Error(`bad pod CIDR ${cidr} (want an IPv4 /8 to /30)`);
    this.size = 2 ** (32 - prefix);
    const n = ipv4ToInt(net ?? '');
    this.base = n - (n % this.size);
  }

  allocate(): string {
    for (let tries = 0; tries < this.size; tries++) {
      const n = this.cursor;
      this.cursor = this.cursor + 1 >= this.size - 1 ? 2 : this.cursor + 1;
      if (!this.used.has(n)) {
        this.used.add(n);
        return intToIpv4(this.base + n);
      }
    }
    throw new RuntimeError('RESOURCE_EXHAUSTED', 'RunPodSandbox', 'no free IP in the pod range');
  }

  release(ip: string): void {
    this.used.delete(ipv4ToInt(ip) - this.base);
  }
}

/**
 * IP addresses and CIDR blocks with Go's parsing rules: options of type ip and ipNet, node pod
 * CIDRs, the nodeipam allocator, serving certificates.
 *
 * Canonical forms follow Go's net package: IPv4 in dotted decimal, IPv6 lowercase with the
 * longest run (two or more) of zero groups compressed to "::", and an IPv4-mapped IPv6 address
 * (::ffff:a.b.c.d) printed as its IPv4 form. A CIDR prints as its network address (host bits
 * cleared) followed by "/prefix", as net.ParseCIDR does.
 */

/** 4 bytes for IPv4, 16 for IPv6. */
export type IpBytes = number[];

function parseIpv4(text: string): IpBytes | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  const out: number[] = [];
  for (const p of parts) {
    // Go rejects leading zeros since 1.17 because they were ambiguous (octal or decimal).
    if (!/^\d{1,3}$/.test(p) || (p.length > 1 && p.startsWith('0'))) return undefined;
    const n = Number(p);
    if (n > 255) return undefined;
    out.push(n);
  }
  return out;
}

function parseIpv6(text: string): IpBytes | undefined {
  if (text.includes('%')) return undefined; // zones are not addresses
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const groups = (s: string): number[] | undefined => {
    if (s === '') return [];
    const out: number[] = [];
    const items = s.split(':');
    for (let i = 0; i < items.length; i++) {
      const item = items[i] ?? '';
      if (i === items.length - 1 && item.includes('.')) {
        const v4 = parseIpv4(item);
        if (!v4) return undefined;
        out.push(((v4[0] ?? 0) << 8) | (v4[1] ?? 0), ((v4[2] ?? 0) << 8) | (v4[3] ?? 0));
        continue;
      }
      if (!/^[0-9a-fA-F]{1,4}$/.test(item)) return undefined;
      out.push(parseInt(item, 16));
    }
    return out;
  };
  const head = groups(halves[0] ?? '');
  const tail = halves.length === 2 ? groups(halves[1] ?? '') : [];
  if (!head || !tail) return undefined;
  let all: number[];
  if (halves.length === 2) {
    const missing = 8 - head.length - tail.length;
    if (missing < 1) return undefined;
    all = [...head, ...new Array<number>(missing).fill(0), ...tail];
  } else {
    if (head.length !== 8) return undefined;
    all = head;
  }
  const bytes: number[] = [];
  for (const g of all) bytes.push(g >> 8, g & 0xff);
  return bytes;
}

/** Parses an IPv4 or IPv6 address; undefined when the text is not one. */
export function parseIp(text: string): IpBytes | undefined {
  return text.includes(':') ? parseIpv6(text) : parseIpv4(text);
}

function isV4Mapped(b: IpBytes): boolean {
  return b.length === 16 && b.slice(0, 10).every((x) => x === 0) && b[10] === 0xff && b[11] === 0xff;
}

/** Prints address bytes in Go's canonical form. */
export function formatIp(b: IpBytes): string {
  if (b.length === 4) return b.join('.');
  if (isV4Mapped(b)) return b.slice(12).join('.');
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((b[i] ?? 0) << 8) | (b[i + 1] ?? 0));
  let bestStart = -1, bestLen = 0;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) { i++; continue; }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen && j - i >= 2) { bestStart = i; bestLen = j - i; }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestStart < 0) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLen).join(':')}`;
}

/**
 * Go's net.IP.IsGlobalUnicast: a valid address that is not unspecified, loopback, link-local,
 * multicast nor the IPv4 broadcast address (private ranges count as global unicast).
 */
export function isGlobalUnicast(text: string): boolean {
  const parsed = parseIp(text);
  if (!parsed) return false;
  const b = isV4Mapped(parsed) ? parsed.slice(12) : parsed;
  if (b.length === 4) {
    const [x, y] = b as [number, number];
    if (b.every((v) => v === 0) || b.every((v) => v === 255)) return false;
    return x !== 127 && !(x === 169 && y === 254) && (x & 0xf0) !== 0xe0;
  }
  if (b.every((v) => v === 0) || (b.slice(0, 15).every((v) => v === 0) && b[15] === 1)) return false;
  return b[0] !== 0xff && !(b[0] === 0xfe && ((b[1] ?? 0) & 0xc0) === 0x80);
}

/** Canonical text of an address, or undefined when invalid. */
export function canonicalIp(text: string): string | undefined {
  const b = parseIp(text.trim());
  return b ? formatIp(b) : undefined;
}

export interface Cidr {
  /** Network address bytes (host bits cleared). */
  readonly ip: IpBytes;
  readonly prefix: number;
}

export function parseCidr(text: string): Cidr | undefined {
  const slash = text.indexOf('/');
  if (slash < 0) return undefined;
  const bytes = parseIp(text.slice(0, slash));
  const prefixText = text.slice(slash + 1);
  if (!bytes || !/^\d{1,3}$/.test(prefixText)) return undefined;
  const prefix = Number(prefixText);
  if (prefix > bytes.length * 8) return undefined;
  const ip = bytes.map((byte, i) => {
    const keep = Math.max(0, Math.min(8, prefix - i * 8));
    return byte & ((0xff << (8 - keep)) & 0xff);
  });
  return { ip, prefix };
}

export function formatCidr(c: Cidr): string {
  return `${formatIp(c.ip)}/${c.prefix}`;
}

/** Canonical CIDR text, or undefined when invalid. */
export function canonicalCidr(text: string): string | undefined {
  const c = parseCidr(text.trim());
  return c ? formatCidr(c) : undefined;
}

/** A loopback address: 127.0.0.0/8, ::1, or 127.x as an IPv4-mapped IPv6 address. */
export function isLoopbackIp(text: string): boolean {
  const parsed = parseIp(text);
  if (!parsed) return false;
  const b = isV4Mapped(parsed) ? parsed.slice(12) : parsed;
  if (b.length === 4) return b[0] === 127;
  return b.slice(0, 15).every((v) => v === 0) && b[15] === 1;
}

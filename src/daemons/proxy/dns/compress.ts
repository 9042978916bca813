/**
 * Encodes the server's own answers with name compression (RFC 1035 4.1.4), which dns-packet
 * does not do: without it every record repeats its full owner name, and a headless service of
 * a dozen endpoints no longer fits 512 bytes (stub resolvers without EDNS, such as the C
 * libraries', then have to retry over TCP, and some cannot). Covers the types the cluster zone
 * answers with; anything else returns undefined and the caller uses dns-packet's encoder.
 * SRV targets stay uncompressed (RFC 2782).
 */
import { isIP } from 'node:net';
import type { Answer, Packet, Question } from 'dns-packet';

const TYPES: Record<string, number> = { A: 1, NS: 2, CNAME: 5, SOA: 6, PTR: 12, TXT: 16, AAAA: 28, SRV: 33, OPT: 41, ANY: 255 };
const CLASS_IN = 1;

class Writer {
  private buf = Buffer.alloc(1024);
  len = 0;
  private readonly names = new Map<string, number>();

  private room(n: number): void {
    if (this.len + n <= this.buf.length) return;
    const next = Buffer.alloc(Math.max(this.buf.length * 2, this.len + n));
    this.buf.copy(next, 0, 0, this.len);
    this.buf = next;
  }

  u8(v: number): void { this.room(1); this.buf.writeUInt8(v, this.len); this.len += 1; }
  u16(v: number): void { this.room(2); this.buf.writeUInt16BE(v, this.len); this.len += 2; }
  u32(v: number): void { this.room(4); this.buf.writeUInt32BE(v >>> 0, this.len); this.len += 4; }
  bytes(b: Buffer): void { this.room(b.length); b.copy(this.buf, this.len); this.len += b.length; }
  at(offset: number, v: number): void { this.buf.writeUInt16BE(v, offset); }

  /** A domain name; suffixes seen before become pointers unless `compress` is false. */
  name(raw: string, compress = true): void {
    const labels = raw.replace(/\.$/, '').split('.').filter((l) => l !== '');
    for (let i = 0; i < labels.length; i++) {
      const suffix = labels.slice(i).join('.').toLowerCase();
      const known = compress ? this.names.get(suffix) : undefined;
      if (known !== undefined) { this.u16(0xc000 | known); return; }
      if (this.len < 0x3fff) this.names.set(suffix, this.len);
      const l = Buffer.from(labels[i] ?? '', 'utf8');
      if (l.length > 63) throw new Error('label too long');
      this.u8(l.length);
      this.bytes(l);
    }
    this.u8(0);
  }

  done(): Buffer { return this.buf.subarray(0, this.len); }
}

function ipBytes(ip: string): Buffer {
  if (isIP(ip) === 4) return Buffer.from(ip.split('.').map(Number));
  const [head = '', tail = ''] = ip.includes('::') ? ip.split('::') : [ip, ''];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = [...h, ...Array(8 - h.length - t.length).fill('0'), ...t];
  const out = Buffer.alloc(16);
  groups.forEach((g, i) => out.writeUInt16BE(parseInt(g, 16), i * 2));
  return out;
}

function question(w: Writer, q: Question): void {
  const type = TYPES[q.type];
  if (type === undefined) throw new Error(`type ${q.type}`);
  w.name(q.name);
  w.u16(type);
  w.u16(CLASS_IN);
}

function record(w: Writer, a: Answer): void {
  if (a.type === 'OPT') {
    const o = a as unknown as { udpPayloadSize?: number };
    w.u8(0);
    w.u16(TYPES.OPT ?? 41);
    w.u16(o.udpPayloadSize ?? 512);
    w.u32(0);
    w.u16(0);
    return;
  }
  const type = TYPES[a.type];
  if (type === undefined) throw new Error(`type ${a.type}`);
  w.name(a.name);
  w.u16(type);
  w.u16(CLASS_IN);
  w.u32(a.ttl ?? 0);
  const lenAt = w.len;
  w.u16(0);
  const start = w.len;
  const data = (a as { data: unknown }).data;
  switch (a.type) {
    case 'A': case 'AAAA': w.bytes(ipBytes(String(data))); break;
    case 'CNAME': case 'NS': case 'PTR': w.name(String(data)); break;
    case 'SRV': {
      const d = data as { priority?: number; weight?: number; port?: number; target: string };
      w.u16(d.priority ?? 0); w.u16(d.weight ?? 0); w.u16(d.port ?? 0); w.name(d.target, false);
      break;
    }
    case 'SOA': {
      const d = data as { mname: string; rname: string; serial?: number; refresh?: number; retry?: number; expire?: number; minimum?: number };
      w.name(d.mname); w.name(d.rname);
      for (const v of [d.serial, d.refresh, d.retry, d.expire, d.minimum]) w.u32(v ?? 0);
      break;
    }
    case 'TXT': {
      for (const s of Array.isArray(data) ? data : [data]) {
        const b = Buffer.isBuffer(s) ? s : Buffer.from(String(s), 'utf8');
        w.u8(b.length); w.bytes(b);
      }
      break;
    }
    default: throw new Error(`type ${a.type}`);
  }
  w.at(lenAt, w.len - start);
}

/** The message, compressed; undefined when it holds a type this encoder does not write. */
export function encodeCompressed(p: Packet): Buffer | undefined {
  const w = new Writer();
  try {
    w.u16(p.id ?? 0);
    w.u16(((p.type === 'response' ? 0x8000 : 0) | (p.flags ?? 0)) & 0xffff);
    const qs = p.questions ?? [];
    const sections = [p.answers ?? [], p.authorities ?? [], p.additionals ?? []];
    w.u16(qs.length);
    for (const s of sections) w.u16(s.length);
    for (const q of qs) question(w, q);
    for (const s of sections) for (const a of s) record(w, a);
  } catch {
    return undefined;
  }
  return w.done();
}

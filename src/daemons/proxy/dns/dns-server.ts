/**
 * The cluster DNS server: UDP and TCP on each listen address (one port for both), answering the
 * cluster zone from a ClusterView (cluster-zone.ts) and forwarding every other name
 * (forwarder.ts). A UDP answer larger than the client takes (512 bytes, or its EDNS size) is
 * cut down and marked truncated, so the client asks again over TCP.
 */
import { createSocket, type Socket } from 'node:dgram';
import { createServer, isIP, type Server, type Socket as NetSocket } from 'node:net';
import * as dnsPacket from 'dns-packet';
import type { Answer, DecodedPacket, Packet } from 'dns-packet';
import { pino, type Logger } from 'pino';
import type { ClusterView } from './cluster-view.js';
import { encodeCompressed } from './compress.js';
import { answerCluster, type Rcode, type ZoneAnswer, type ZoneOptions } from './cluster-zone.js';
import type { Forwarder } from './forwarder.js';

const RCODES: Record<Rcode | 'FORMERR' | 'NOTIMP', number> = { NOERROR: 0, FORMERR: 1, SERVFAIL: 2, NXDOMAIN: 3, NOTIMP: 4 };
/** The EDNS payload size we offer (the DNS flag day 2020 value). */
const EDNS_SIZE = 1232;
const MAX_CHASE = 8;
const TCP_IDLE_MS = 10_000;

export interface ListenAddress { readonly host: string; readonly port: number }

export interface ClusterDnsOptions extends ZoneOptions {
  readonly view: ClusterView;
  readonly forwarder: Forwarder;
  readonly log?: Logger;
}

function ednsSize(q: DecodedPacket): number | undefined {
  const opt = (q.additionals ?? []).find((a) => a.type === 'OPT') as { udpPayloadSize?: number } | undefined;
  return opt ? Math.min(Math.max(opt.udpPayloadSize ?? 512, 512), 65535) : undefined;
}

export class ClusterDnsServer {
  private readonly log: Logger;
  private readonly udp: Socket[] = [];
  private readonly tcp: Server[] = [];
  private readonly conns = new Set<NetSocket>();
  private serial = Math.floor(Date.now() / 1000);

  constructor(private readonly o: ClusterDnsOptions) {
    this.log = o.log ?? pino({ level: 'silent' });
  }

  /** The SOA serial follows changes of the cluster's objects (CoreDNS: their last change). */
  touch(): void {
    this.serial = Math.max(this.serial + 1, Math.floor(Date.now() / 1000));
  }

  private response(q: DecodedPacket, rcode: number, zone: ZoneAnswer | undefined, aa: boolean): Packet {
    const edns = ednsSize(q) !== undefined;
    return {
      type: 'response', id: q.id ?? 0,
      flags: (aa ? dnsPacket.AUTHORITATIVE_ANSWER : 0) | (q.flag_rd ? dnsPacket.RECURSION_DESIRED : 0) | dnsPacket.RECURSION_AVAILABLE | rcode,
      questions: q.questions ?? [],
      answers: zone?.answers ?? [],
      authorities: zone?.authorities ?? [],
      additionals: [...(zone?.additionals ?? []), ...(edns ? [{ type: 'OPT', name: '.', udpPayloadSize: EDNS_SIZE, extendedRcode: 0, ednsVersion: 0, flags: 0, options: [] } as unknown as Answer] : [])],
    };
  }

  /** Resolves an ExternalName's target: in the zone from the view, else upstream. */
  private async chase(target: string, qtype: string, depth: number): Promise<Answer[]> {
    if (depth > MAX_CHASE) return [];
    const local = answerCluster(this.o.view, this.o, target, qtype, this.serial);
    if (local) {
      const more = local.chase ? await this.chase(local.chase, qtype, depth + 1) : [];
      return [...local.answers, ...more];
    }
    const msg = dnsPacket.encode({ type: 'query', id: Math.floor(Math.random() * 65536), flags: dnsPacket.RECURSION_DESIRED, questions: [{ type: qtype as 'A', name: target, class: 'IN' }] });
    let res = await this.o.forwarder.exchange(msg, 'udp');
    if (res && dnsPacket.decode(res).flag_tc) res = await this.o.forwarder.exchange(msg, 'tcp');
    return res ? dnsPacket.decode(res).answers ?? [] : [];
  }

  /** The answer to one message (undefined: nothing to send back). */
  async handle(msg: Buffer, transport: 'udp' | 'tcp'): Promise<Buffer | undefined> {
    let q: DecodedPacket;
    try {
      q = dnsPacket.decode(msg);
    } catch {
      if (msg.length < 12) return undefined;
      // The header was readable: say the message was malformed.
      const h = Buffer.from(msg.subarray(0, 12));
      h.writeUInt16BE(0x8000 | (h.readUInt16BE(2) & 0x7800) | RCODES.FORMERR, 2);
      h.fill(0, 4);
      return h;
    }
    if (q.type === 'response') return undefined;
    const question = q.questions?.[0];
    if ((q as { opcode?: string }).opcode !== 'QUERY') return this.encode(this.response(q, RCODES.NOTIMP, undefined, false), transport, q);
    if (!question || (q.questions?.length ?? 0) !== 1) return this.encode(this.response(q, RCODES.FORMERR, undefined, false), transport, q);
    const zone = answerCluster(this.o.view, this.o, question.name, question.type, this.serial);
    if (!zone) {
      const res = this.o.forwarder.size ? await this.o.forwarder.exchange(msg, transport) : undefined;
      if (res) return res;
      this.log.debug({ name: question.name }, 'no upstream answered');
      return this.encode(this.response(q, RCODES.SERVFAIL, undefined, false), transport, q);
    }
    if (zone.chase) zone.answers.push(...await this.chase(zone.chase, question.type, 1));
    return this.encode(this.response(q, RCODES[zone.rcode], zone, true), transport, q);
  }

  /** Encodes; over UDP cuts the answer to the client's size and sets TC when it had to. */
  private encode(p: Packet, transport: 'udp' | 'tcp', q: DecodedPacket): Buffer {
    const wire = (x: Packet): Buffer => encodeCompressed(x) ?? dnsPacket.encode(x);
    let buf = wire(p);
    if (transport === 'tcp') return buf;
    const max = ednsSize(q) ?? 512;
    if (buf.length <= max) return buf;
    const opt = (p.additionals ?? []).filter((a) => a.type === 'OPT');
    const cut: Packet = { ...p, flags: (p.flags ?? 0) | dnsPacket.TRUNCATED_RESPONSE, additionals: opt, authorities: [] };
    // The most answers that fit, by bisection (a large headless service has thousands).
    const all = p.answers ?? [];
    let lo = 0;
    let hi = all.length - 1;
    buf = wire({ ...cut, answers: [] });
    while (lo < hi) {
      const mid = Math.ceil((lo + hi) / 2);
      const b = wire({ ...cut, answers: all.slice(0, mid) });
      if (b.length <= max) { lo = mid; buf = b; } else hi = mid - 1;
    }
    if (lo > 0 && buf.length > max) buf = wire({ ...cut, answers: all.slice(0, lo) });
    return buf;
  }

  /** Binds UDP and TCP on every address; port 0 picks one port for both. Returns the bound addresses. */
  async listen(addresses: readonly ListenAddress[]): Promise<ListenAddress[]> {
    const out: ListenAddress[] = [];
    for (const a of addresses) {
      const udp = createSocket({ type: isIP(a.host) === 6 ? 'udp6' : 'udp4' });
      await new Promise<void>((resolve, reject) => { udp.once('error', reject); udp.bind(a.port, a.host, () => { udp.off('error', reject); resolve(); }); });
      this.udp.push(udp);
      const port = udp.address().port;
      udp.on('error', (e) => this.log.warn({ err: e.message }, 'dns udp socket error'));
      udp.on('message', (msg, rinfo) => {
        void this.handle(msg, 'udp').then((res) => { if (res) udp.send(res, rinfo.port, rinfo.address); })
          .catch((e: Error) => this.log.warn({ err: e.message }, 'dns query failed'));
      });
      const tcp = createServer((sock) => this.serveTcp(sock));
      await new Promise<void>((resolve, reject) => { tcp.once('error', reject); tcp.listen(port, a.host, () => { tcp.off('error', reject); resolve(); }); });
      this.tcp.push(tcp);
      out.push({ host: a.host, port });
    }
    return out;
  }

  private serveTcp(sock: NetSocket): void {
    let buf = Buffer.alloc(0);
    this.conns.add(sock);
    sock.on('close', () => this.conns.delete(sock));
    sock.setTimeout(TCP_IDLE_MS, () => sock.destroy());
    sock.on('error', () => sock.destroy());
    sock.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      while (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
        const msg = buf.subarray(2, 2 + buf.readUInt16BE(0));
        buf = buf.subarray(2 + msg.length);
        void this.handle(Buffer.from(msg), 'tcp').then((res) => {
          if (!res || sock.destroyed) return;
          const len = Buffer.alloc(2);
          len.writeUInt16BE(res.length);
          sock.write(Buffer.concat([len, res]));
        }).catch((e: Error) => this.log.warn({ err: e.message }, 'dns query failed'));
      }
    });
  }

  async close(): Promise<void> {
    for (const u of this.udp.splice(0)) u.close();
    const closed = this.tcp.splice(0).map((s) => new Promise<void>((r) => { s.close(() => r()); }));
    for (const c of this.conns) c.destroy();
    await Promise.all(closed);
  }
}

/**
 * Helpers of the cluster DNS tests: raw queries over UDP and TCP (to see flags, rcodes and the
 * authority section a stub resolver hides), and a fixture upstream resolver of our own.
 */
import { createSocket } from 'node:dgram';
import { connect } from 'node:net';
import * as dnsPacket from 'dns-packet';
import type { Answer, DecodedPacket, RecordType } from 'dns-packet';

export interface QueryOptions { edns?: number; rd?: boolean }

function queryMessage(name: string, type: RecordType, o: QueryOptions): Buffer {
  return dnsPacket.encode({
    type: 'query', id: Math.floor(Math.random() * 65536), flags: o.rd === false ? 0 : dnsPacket.RECURSION_DESIRED,
    questions: [{ type, name, class: 'IN' }],
    additionals: o.edns ? [{ type: 'OPT', name: '.', udpPayloadSize: o.edns, extendedRcode: 0, ednsVersion: 0, flags: 0, options: [] } as unknown as Answer] : [],
  });
}

export function udpQuery(port: number, name: string, type: RecordType, o: QueryOptions = {}): Promise<{ packet: DecodedPacket; size: number }> {
  const msg = queryMessage(name, type, o);
  return new Promise((resolve, reject) => {
    const sock = createSocket('udp4');
    const timer = setTimeout(() => { sock.close(); reject(new Error(`no UDP answer for ${name}`)); }, 5000);
    sock.on('message', (res) => { clearTimeout(timer); sock.close(); resolve({ packet: dnsPacket.decode(res), size: res.length }); });
    sock.send(msg, port, '127.0.0.1');
  });
}

export function tcpQuery(port: number, name: string, type: RecordType, o: QueryOptions = {}): Promise<DecodedPacket> {
  const msg = queryMessage(name, type, o);
  return new Promise((resolve, reject) => {
    const sock = connect({ host: '127.0.0.1', port });
    let buf = Buffer.alloc(0);
    sock.setTimeout(5000, () => { sock.destroy(); reject(new Error(`no TCP answer for ${name}`)); });
    sock.on('error', reject);
    sock.on('connect', () => { const l = Buffer.alloc(2); l.writeUInt16BE(msg.length); sock.write(Buffer.concat([l, msg])); });
    sock.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      if (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) { sock.end(); resolve(dnsPacket.decode(buf.subarray(2, 2 + buf.readUInt16BE(0)))); }
    });
  });
}

export const RCODE_NXDOMAIN = 3;

export function rcode(p: DecodedPacket): number {
  return (p.flags ?? 0) & 0xf;
}

/**
 * A resolver on 127.0.0.1 (UDP only) answering A for the names in `records`, NXDOMAIN for
 * others; it counts the queries it got.
 */
export async function fixtureUpstream(records: Record<string, string>): Promise<{ port: number; queries: string[]; close(): void }> {
  const sock = createSocket('udp4');
  const queries: string[] = [];
  sock.on('message', (msg, rinfo) => {
    const q = dnsPacket.decode(msg);
    const question = q.questions?.[0];
    if (!question) return;
    queries.push(question.name);
    const ip = records[question.name.toLowerCase()];
    const answers: Answer[] = ip && question.type === 'A' ? [{ type: 'A', name: question.name, ttl: 60, class: 'IN', data: ip }] : [];
    sock.send(dnsPacket.encode({
      type: 'response', id: q.id ?? 0, flags: dnsPacket.RECURSION_AVAILABLE | (ip ? 0 : RCODE_NXDOMAIN),
      questions: q.questions ?? [], answers,
    }), rinfo.port, rinfo.address);
  });
  await new Promise<void>((r) => sock.bind(0, '127.0.0.1', () => r()));
  return { port: sock.address().port, queries, close: () => sock.close() };
}

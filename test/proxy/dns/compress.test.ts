/** The compressed encoding of the server's answers reads back the same with dns-packet. */
import t from 'tap';
import * as dnsPacket from 'dns-packet';
import type { Answer, Packet } from 'dns-packet';
import { encodeCompressed } from '../../../src/daemons/proxy/dns/compress.js';

const z = 'db.shop.svc.cluster.local';
const packet: Packet = {
  type: 'response', id: 4242, flags: dnsPacket.AUTHORITATIVE_ANSWER | dnsPacket.RECURSION_AVAILABLE | 3,
  questions: [{ type: 'SRV', name: `_pg._tcp.${z}`, class: 'IN' }],
  answers: [
    { type: 'SRV', name: `_pg._tcp.${z}`, ttl: 30, class: 'IN', data: { priority: 0, weight: 50, port: 5432, target: `db-0.${z}` } },
    { type: 'A', name: z, ttl: 30, class: 'IN', data: '10.1.0.10' },
    { type: 'AAAA', name: z, ttl: 30, class: 'IN', data: 'fd00::1:a' },
    { type: 'AAAA', name: z, ttl: 30, class: 'IN', data: '::1' },
    { type: 'CNAME', name: `ext.shop.svc.cluster.local`, ttl: 30, class: 'IN', data: 'www.example.com' },
    { type: 'PTR', name: '10.0.1.10.in-addr.arpa', ttl: 30, class: 'IN', data: `db-0.${z}` },
    { type: 'TXT', name: 'dns-version.cluster.local', ttl: 30, class: 'IN', data: '1.1.0' },
    { type: 'NS', name: 'cluster.local', ttl: 30, class: 'IN', data: 'ns.dns.cluster.local' },
  ],
  authorities: [{ type: 'SOA', name: 'cluster.local', ttl: 30, class: 'IN', data: { mname: 'ns.dns.cluster.local', rname: 'hostmaster.cluster.local', serial: 7, refresh: 7200, retry: 1800, expire: 86400, minimum: 30 } }],
  additionals: [{ type: 'OPT', name: '.', udpPayloadSize: 1232, extendedRcode: 0, ednsVersion: 0, flags: 0, options: [] } as unknown as Answer],
};

t.test('every record type reads back', async (t) => {
  const buf = encodeCompressed(packet);
  t.ok(buf);
  const plain = dnsPacket.decode(dnsPacket.encode(packet));
  const got = dnsPacket.decode(buf as Buffer);
  t.same(got, plain, 'the same message as dns-packet\'s own encoding');
  t.ok((buf as Buffer).length < dnsPacket.encode(packet).length, `smaller (${(buf as Buffer).length} < ${dnsPacket.encode(packet).length})`);
  t.equal((got as { rcode?: string }).rcode, 'NXDOMAIN');
});

t.test('twenty addresses of a headless service fit 512 bytes', async (t) => {
  const answers: Answer[] = Array.from({ length: 20 }, (_, i) => ({ type: 'A', name: z, ttl: 30, class: 'IN', data: `10.1.0.${i + 1}` }));
  const buf = encodeCompressed({ type: 'response', id: 1, questions: [{ type: 'A', name: z, class: 'IN' }], answers });
  t.ok(buf && buf.length <= 512, `${buf?.length} bytes`);
  t.equal(dnsPacket.decode(buf as Buffer).answers?.length, 20);
});

t.test('a type it does not write falls back', async (t) => {
  t.equal(encodeCompressed({ type: 'response', id: 1, questions: [{ type: 'MX', name: z, class: 'IN' }] }), undefined);
});

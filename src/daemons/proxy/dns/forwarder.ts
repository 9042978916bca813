/**
 * Forwarding of names outside the cluster to the host's resolvers (--resolv-conf), as CoreDNS's
 * `forward . /etc/resolv.conf`: the client's message goes unchanged to each upstream in turn
 * over the client's transport (a truncated UDP answer reaches the client, which retries over
 * TCP, and that retry goes upstream over TCP); the first answer wins. Resolvers that are this
 * DNS server itself are left out, or a query would loop.
 */
import { createSocket } from 'node:dgram';
import { readFile } from 'node:fs/promises';
import { connect, isIP } from 'node:net';
import { networkInterfaces } from 'node:os';

export interface Upstream { readonly host: string; readonly port: number }

/** The nameservers of a resolv.conf text, in order. */
export function resolvConfNameservers(text: string): string[] {
  const out: string[] = [];
  for (const raw of text.split('\n')) {
    const [key, value] = raw.replace(/[#;].*$/, '').trim().split(/\s+/);
    // A scoped IPv6 address (fe80::1%eth0) keeps its zone: dgram accepts it.
    if (key === 'nameserver' && value && isIP(value.split('%')[0] ?? '')) out.push(value);
  }
  return out;
}

function localAddresses(): Set<string> {
  const out = new Set<string>(['127.0.0.1', '::1']);
  for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) out.add(a.address);
  return out;
}

/**
 * The upstreams of `resolvConf`, without the server's own listen addresses (an unspecified
 * listen address stands for every local address) when it serves port 53.
 */
export async function hostUpstreams(resolvConf: string, self: ReadonlyArray<{ host: string; port: number }>): Promise<Upstream[]> {
  let text = '';
  try {
    text = await readFile(resolvConf, 'utf8');
  } catch {
    return [];
  }
  const own = new Set<string>();
  for (const l of self) {
    if (l.port !== 53) continue;
    if (l.host === '0.0.0.0' || l.host === '::' || l.host === '') for (const a of localAddresses()) own.add(a);
    else own.add(l.host);
  }
  return resolvConfNameservers(text).filter((ip) => !own.has(ip)).map((host) => ({ host, port: 53 }));
}

function udpExchange(u: Upstream, msg: Buffer, timeoutMs: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const sock = createSocket(isIP(u.host.split('%')[0] ?? '') === 6 ? 'udp6' : 'udp4');
    const id = msg.readUInt16BE(0);
    const timer = setTimeout(() => { sock.close(); reject(new Error(`no answer from ${u.host}:${u.port}`)); }, timeoutMs);
    sock.on('error', (e) => { clearTimeout(timer); sock.close(); reject(e); });
    sock.on('message', (res) => {
      // Anything not answering our id (a late answer, a spoof) is ignored.
      if (res.length < 12 || res.readUInt16BE(0) !== id) return;
      clearTimeout(timer);
      sock.close();
      resolve(res);
    });
    sock.send(msg, u.port, u.host);
  });
}

function tcpExchange(u: Upstream, msg: Buffer, timeoutMs: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const sock = connect({ host: u.host, port: u.port });
    let buf = Buffer.alloc(0);
    const fail = (e: Error): void => { sock.destroy(); reject(e); };
    sock.setTimeout(timeoutMs, () => fail(new Error(`no answer from ${u.host}:${u.port} (tcp)`)));
    sock.on('error', fail);
    sock.on('connect', () => {
      const len = Buffer.alloc(2);
      len.writeUInt16BE(msg.length);
      sock.write(Buffer.concat([len, msg]));
    });
    sock.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      if (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
        sock.end();
        resolve(buf.subarray(2, 2 + buf.readUInt16BE(0)));
      }
    });
    sock.on('end', () => fail(new Error(`${u.host}:${u.port} closed the connection`)));
  });
}

export class Forwarder {
  constructor(private readonly upstreams: readonly Upstream[], private readonly timeoutMs = 2000) {}

  get size(): number { return this.upstreams.length; }

  /** The first upstream answer to `msg`, or undefined when none answered. */
  async exchange(msg: Buffer, transport: 'udp' | 'tcp'): Promise<Buffer | undefined> {
    for (const u of this.upstreams) {
      try {
        return transport === 'udp' ? await udpExchange(u, msg, this.timeoutMs) : await tcpExchange(u, msg, this.timeoutMs);
      } catch {
        // The next upstream.
      }
    }
    return undefined;
  }
}

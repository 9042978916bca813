/**
 * Stale UDP flows, cleared as kube-proxy clears them with the conntrack tool (Debian package
 * conntrack). UDP has no connection to end: a client that keeps its source port (a DNS
 * resolver, a game, statsd) keeps matching the conntrack entry made by its first packet, so
 *  - after an endpoint goes away its packets keep being DNATed to the old address, and
 *  - packets sent to a service address before it had endpoints (or before the proxy programmed
 *    it, as a pod asking kube-dns early) keep going nowhere, because NAT rules only see a flow's
 *    first packet.
 * After each sync the UDP service ports just applied are compared with the previous ones: flows
 * DNATed to an endpoint no longer used are deleted, and so are the flows to a service address
 * (ClusterIP, externalIPs, LoadBalancer IPs, NodePort) that had no endpoints and now has some.
 * TCP and SCTP need none of this: their connections end or are reset.
 */
import { spawn } from 'node:child_process';
import type { Logger } from 'pino';
import type { Endpoint, ServicePort } from './service-model.js';

/** conntrack -D exits 1 with this when nothing matched, which is no failure. */
const NOTHING_DELETED = /0 flow entries have been deleted/;

/** Endpoints by conntrack's --dst-nat form: ip:port, [ip]:port for IPv6. */
const endpointsOf = (sp: ServicePort): Map<string, Endpoint> => {
  const m = new Map<string, Endpoint>();
  for (const e of [...sp.clusterEndpoints, ...sp.localEndpoints]) m.set(e.ip.includes(':') ? `[${e.ip}]:${e.port}` : `${e.ip}:${e.port}`, e);
  return m;
};

/** conntrack looks at IPv4 flows unless told the family. */
const familyArgs = (sp: ServicePort): string[] => (sp.clusterIp.includes(':') ? ['-f', 'ipv6'] : []);

/** The `conntrack` argument lists (after the command itself) for going from `before` to `after`. */
export function staleFlowDeletions(before: ReadonlyMap<string, ServicePort>, after: ReadonlyMap<string, ServicePort>): string[][] {
  const out: string[][] = [];
  const seen = new Set<string>();
  const add = (args: string[]): void => {
    const k = args.join(' ');
    if (!seen.has(k)) { seen.add(k); out.push(args); }
  };
  // Endpoints no longer used for a service port: the flows DNATed to them from its addresses.
  for (const [id, old] of before) {
    if (old.protocol !== 'udp') continue;
    const now = after.get(id);
    const still = now && now.protocol === 'udp' ? endpointsOf(now) : new Map<string, Endpoint>();
    for (const [key] of endpointsOf(old)) {
      if (still.has(key)) continue;
      const f = familyArgs(old);
      for (const ip of [old.clusterIp, ...old.externalIps]) add(['-D', ...f, '-p', 'udp', '--orig-dst', ip, '--orig-port-dst', String(old.port), '--dst-nat', key]);
      if (old.nodePort > 0) add(['-D', ...f, '-p', 'udp', '--orig-port-dst', String(old.nodePort), '--dst-nat', key]);
    }
  }
  // Service addresses that now have endpoints and had none (or did not exist).
  for (const [id, sp] of after) {
    if (sp.protocol !== 'udp' || endpointsOf(sp).size === 0) continue;
    const old = before.get(id);
    const had = old && old.protocol === 'udp' ? endpointsOf(old).size > 0 : false;
    const oldAddresses = new Set(had && old ? [old.clusterIp, ...old.externalIps] : []);
    const f = familyArgs(sp);
    for (const ip of [sp.clusterIp, ...sp.externalIps]) {
      if (!oldAddresses.has(ip) || old?.port !== sp.port) add(['-D', ...f, '-p', 'udp', '--orig-dst', ip, '--orig-port-dst', String(sp.port)]);
    }
    if (sp.nodePort > 0 && (!had || old?.nodePort !== sp.nodePort)) add(['-D', ...f, '-p', 'udp', '--orig-port-dst', String(sp.nodePort)]);
  }
  return out;
}

function runConntrack(argv: readonly string[]): Promise<{ code: number; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(argv[0] as string, argv.slice(1), { stdio: ['ignore', 'ignore', 'pipe'] });
    const err: Buffer[] = [];
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.on('error', (e) => resolve({ code: 127, err: e.message }));
    child.on('close', (code) => resolve({ code: code ?? 1, err: Buffer.concat(err).toString('utf8') }));
  });
}

export class ConntrackCleaner {
  private before = new Map<string, ServicePort>();
  /** Commands run (the tests read it). */
  deletions = 0;

  /** `command` is the conntrack argv prefix (tests put `ip netns exec NS` before it). */
  constructor(private readonly command: readonly string[], private readonly log: Logger) {}

  /** Called with the UDP service ports of each sync that was applied. */
  async applied(udpPorts: readonly ServicePort[]): Promise<void> {
    // A dual-stack Service has a port of each family under one id.
    const after = new Map(udpPorts.map((sp) => [`${sp.id}/${sp.clusterIp.includes(':') ? 6 : 4}`, sp]));
    const work = staleFlowDeletions(this.before, after);
    this.before = after;
    for (const args of work) {
      const r = await runConntrack([...this.command, ...args]);
      this.deletions++;
      if (r.code !== 0 && !NOTHING_DELETED.test(r.err)) this.log.warn({ args: args.join(' '), err: r.err.trim().split('\n')[0] }, 'clearing stale UDP conntrack entries failed');
      else this.log.debug({ args: args.join(' ') }, 'cleared stale UDP conntrack entries');
    }
  }
}

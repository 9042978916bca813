/**
 * The nftables state the proxy wants, as data: one table of ours per IP family (`ip`, and `ip6`
 * for IPv6 Services, with the same layout) holding
 *  - maps from destination (address . protocol . port, or protocol . port for NodePorts) to a
 *    verdict: `service-ips` / `service-nodeports` jump to a service's chain,
 *    `no-endpoint-services` / `no-endpoint-nodeports` reject (no endpoints at all: the client
 *    fails fast) or drop (Local policy and none on this node), as kube-proxy's nftables mode;
 *  - base chains hooked at nat prerouting/output/postrouting and filter input/forward/output;
 *  - per service port: `svc_` (ClusterIP traffic) and `ext_` (NodePort, externalIPs,
 *    LoadBalancer IPs) chains choosing an endpoint with `numgen random mod N vmap`, and one
 *    `sep_` chain per endpoint doing the DNAT (marking hairpin traffic for masquerade);
 *  - per endpoint of a ClientIP-affinity service, a dynamic set `aff_` of client addresses
 *    with the affinity timeout.
 * Names only use letters, digits, "_", "-" and "." so they need no quoting (an IPv6 endpoint's
 * colons become "-" in chain and set names).
 */
import type { Endpoint, ServicePort } from './service-model.js';

export interface NftOptions {
  table: string;
  /** The table's family: `ip` (IPv4, the default) or `ip6`. */
  family?: NftFamily;
  /** The packet mark bit asking for masquerade. */
  masqueradeBit: number;
  masqueradeAll: boolean;
  /** Pod CIDRs (of the family); traffic to a ClusterIP from outside them is masqueraded. */
  clusterCidrs: string[];
  /** CIDRs NodePorts listen on (of the family); empty: every local address but loopback. */
  nodePortCidrs: string[];
}

/** A chain of ours: its declaration (base chains) and its rules. */
export interface ChainSpec {
  /** `{ type nat hook prerouting priority dstnat; policy accept; }` for base chains. */
  hook?: string;
  rules: string[];
}

export interface NftState {
  chains: Map<string, ChainSpec>;
  /** Map name -> element key -> verdict. */
  maps: Map<string, Map<string, string>>;
  /** Affinity set name -> timeout in seconds. */
  affinitySets: Map<string, number>;
}

export type NftFamily = 'ip' | 'ip6';

/** The address type of a family's sets and maps. */
export const addrType = (family: NftFamily = 'ip'): string => (family === 'ip6' ? 'ipv6_addr' : 'ipv4_addr');

/** The declarations of our maps (`add map` bodies). */
export function mapTypes(family: NftFamily = 'ip'): Readonly<Record<string, string>> {
  return {
    'service-ips': `type ${addrType(family)} . inet_proto . inet_service : verdict;`,
    'service-nodeports': 'type inet_proto . inet_service : verdict;',
    'no-endpoint-services': `type ${addrType(family)} . inet_proto . inet_service : verdict;`,
    'no-endpoint-nodeports': 'type inet_proto . inet_service : verdict;',
  };
}
export const MAP_TYPES = mapTypes('ip');

const BASE_PREFIXES = ['nat-', 'filter-'];
export const isBaseChain = (name: string): boolean => BASE_PREFIXES.some((p) => name.startsWith(p));

function key(sp: ServicePort): string {
  return `${sp.namespace}_${sp.name}_${sp.protocol}_${sp.portName || sp.port}`;
}

const nameOf = (ip: string): string => ip.replace(/:/g, '-');

function epChain(sp: ServicePort, e: Endpoint): string {
  return `sep_${key(sp)}__${nameOf(e.ip)}_${e.port}`;
}

function affSet(sp: ServicePort, e: Endpoint): string {
  return `aff_${key(sp)}__${nameOf(e.ip)}_${e.port}`;
}

/** Rules that pick one endpoint of `eps` (non-empty), sticky per client with affinity. */
function selection(sp: ServicePort, eps: Endpoint[], l3: NftFamily): string[] {
  const rules: string[] = [];
  if (sp.affinitySeconds > 0) for (const e of eps) rules.push(`${l3} saddr @${affSet(sp, e)} goto ${epChain(sp, e)}`);
  if (eps.length === 1) rules.push(`goto ${epChain(sp, eps[0] as Endpoint)}`);
  else rules.push(`numgen random mod ${eps.length} vmap { ${eps.map((e, i) => `${i} : goto ${epChain(sp, e)}`).join(', ')} }`);
  return rules;
}

function staticChains(o: NftOptions): Map<string, ChainSpec> {
  const mark = `0x${(1 << o.masqueradeBit >>> 0).toString(16)}`;
  const l3 = o.family ?? 'ip';
  const loopback = l3 === 'ip6' ? '::1' : '127.0.0.0/8';
  const nodePortMatch = o.nodePortCidrs.length > 0 ? `${l3} daddr { ${o.nodePortCidrs.join(', ')} }` : `fib daddr type local ${l3} daddr != ${loopback}`;
  const check = ['ct state new jump endpoints-check'];
  return new Map<string, ChainSpec>([
    ['mark-for-masquerade', { rules: [`meta mark set meta mark | ${mark}`] }],
    ['masquerading', { rules: [`meta mark & ${mark} == 0 return`, `meta mark set meta mark ^ ${mark}`, 'masquerade fully-random'] }],
    ['services', { rules: [`${l3} daddr . meta l4proto . th dport vmap @service-ips`, `${nodePortMatch} meta l4proto . th dport vmap @service-nodeports`] }],
    ['reject-chain', { rules: ['reject'] }],
    ['endpoints-check', { rules: [`${l3} daddr . meta l4proto . th dport vmap @no-endpoint-services`, `${nodePortMatch} meta l4proto . th dport vmap @no-endpoint-nodeports`] }],
    ['nat-prerouting', { hook: '{ type nat hook prerouting priority dstnat; policy accept; }', rules: ['jump services'] }],
    ['nat-output', { hook: '{ type nat hook output priority -100; policy accept; }', rules: ['jump services'] }],
    ['nat-postrouting', { hook: '{ type nat hook postrouting priority srcnat; policy accept; }', rules: ['jump masquerading'] }],
    ['filter-input', { hook: '{ type filter hook input priority -110; policy accept; }', rules: check }],
    ['filter-forward', { hook: '{ type filter hook forward priority -110; policy accept; }', rules: check }],
    ['filter-output', { hook: '{ type filter hook output priority -110; policy accept; }', rules: check }],
  ]);
}

function emptyState(chains: Map<string, ChainSpec>): NftState {
  return { chains, maps: new Map(Object.keys(MAP_TYPES).map((m) => [m, new Map<string, string>()])), affinitySets: new Map() };
}

/** The whole desired state for these service ports. */
export function desiredState(ports: readonly ServicePort[], o: NftOptions): NftState {
  const state = emptyState(staticChains(o));
  addPorts(state, ports, o);
  return state;
}

/** The chains, map elements and sets of some service ports alone (one Service's, cached). */
export function portsFragment(ports: readonly ServicePort[], o: NftOptions): NftState {
  const state = emptyState(new Map());
  addPorts(state, ports, o);
  return state;
}

/** The static part plus every fragment; chain specs are shared, not copied. */
export function mergeFragments(fragments: Iterable<NftState>, o: NftOptions): NftState {
  const state = emptyState(staticChains(o));
  for (const f of fragments) {
    for (const [name, spec] of f.chains) state.chains.set(name, spec);
    for (const [map, elems] of f.maps) {
      if (elems.size === 0) continue;
      const into = state.maps.get(map) as Map<string, string>;
      for (const [k, v] of elems) into.set(k, v);
    }
    for (const [name, t] of f.affinitySets) state.affinitySets.set(name, t);
  }
  return state;
}

function addPorts(state: NftState, ports: readonly ServicePort[], o: NftOptions): void {
  const l3 = o.family ?? 'ip';
  const { chains, maps, affinitySets } = state;
  const serviceIps = maps.get('service-ips') as Map<string, string>;
  const nodePorts = maps.get('service-nodeports') as Map<string, string>;
  const noEpServices = maps.get('no-endpoint-services') as Map<string, string>;
  const noEpNodePorts = maps.get('no-endpoint-nodeports') as Map<string, string>;
  for (const sp of ports) {
    const k = key(sp);
    const proto = sp.protocol;
    const match = `${l3} daddr ${sp.clusterIp} ${proto} dport ${sp.port}`;
    // Endpoint chains for every endpoint either path may use.
    const used = new Map<string, Endpoint>();
    for (const e of [...sp.clusterEndpoints, ...sp.localEndpoints]) used.set(`${e.ip}:${e.port}`, e);
    for (const e of used.values()) {
      const rules = [`${l3} saddr ${e.ip} jump mark-for-masquerade`];
      if (sp.affinitySeconds > 0) {
        affinitySets.set(affSet(sp, e), sp.affinitySeconds);
        rules.push(`update @${affSet(sp, e)} { ${l3} saddr }`);
      }
      rules.push(`meta l4proto ${proto} dnat to ${l3 === 'ip6' ? `[${e.ip}]` : e.ip}:${e.port}`);
      chains.set(epChain(sp, e), { rules });
    }
    // Internal (ClusterIP) traffic.
    const internal = sp.internalLocal ? sp.localEndpoints : sp.clusterEndpoints;
    const cipKey = `${sp.clusterIp} . ${proto} . ${sp.port}`;
    if (internal.length > 0) {
      const rules: string[] = [];
      if (o.masqueradeAll) rules.push(`${match} jump mark-for-masquerade`);
      else if (o.clusterCidrs.length > 0) rules.push(`${match} ${l3} saddr != { ${o.clusterCidrs.join(', ')} } jump mark-for-masquerade`);
      rules.push(...selection(sp, internal, l3));
      chains.set(`svc_${k}`, { rules });
      serviceIps.set(cipKey, `goto svc_${k}`);
    } else {
      noEpServices.set(cipKey, sp.clusterEndpoints.length > 0 ? 'drop' : 'goto reject-chain');
    }
    // External traffic: NodePort, externalIPs, LoadBalancer status IPs.
    if (sp.nodePort === 0 && sp.externalIps.length === 0) continue;
    const external = sp.externalLocal ? sp.localEndpoints : sp.clusterEndpoints;
    const targets: Array<[Map<string, string>, Map<string, string>, string]> = sp.externalIps.map((ip) => [serviceIps, noEpServices, `${ip} . ${proto} . ${sp.port}`]);
    if (sp.nodePort > 0) targets.push([nodePorts, noEpNodePorts, `${proto} . ${sp.nodePort}`]);
    if (external.length === 0) {
      for (const [, none, key2] of targets) none.set(key2, sp.clusterEndpoints.length > 0 ? 'drop' : 'goto reject-chain');
      continue;
    }
    const rules: string[] = [];
    if (sp.externalLocal) {
      // The client address is kept; traffic from pods or from this host may still go to any
      // endpoint (kube-proxy's short-circuit), the host's own masqueraded.
      if (o.clusterCidrs.length > 0 && sp.clusterEndpoints.length > 0) rules.push(`${l3} saddr { ${o.clusterCidrs.join(', ')} } goto ext_${k}_cluster`);
      if (sp.clusterEndpoints.length > 0) rules.push(`fib saddr type local jump mark-for-masquerade`, `fib saddr type local goto ext_${k}_cluster`);
      if (sp.clusterEndpoints.length > 0) chains.set(`ext_${k}_cluster`, { rules: selection(sp, sp.clusterEndpoints, l3) });
    } else {
      rules.push('jump mark-for-masquerade');
    }
    rules.push(...selection(sp, external, l3));
    chains.set(`ext_${k}`, { rules });
    for (const [to, , key2] of targets) to.set(key2, `goto ext_${k}`);
  }
}

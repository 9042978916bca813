/**
 * The iptables mode's rules, as `iptables-restore --noflush` input: chains of ours (CPX-*, at
 * most 28 characters, so per-service and per-endpoint names carry a hash) in the nat and filter
 * tables, with the layout of kube-proxy's iptables mode:
 *  - nat CPX-SERVICES: ClusterIPs, externalIPs and LoadBalancer IPs jump to a service's
 *    CPX-SVC- (ClusterIP) or CPX-EXT- (external) chain; local destinations go to CPX-NODEPORTS;
 *  - a CPX-SVC-/CPX-EXT- chain picks an endpoint with `-m statistic --mode random`, after
 *    `-m recent` checks for ClientIP affinity; CPX-SEP- chains DNAT (marking hairpin traffic);
 *  - nat CPX-POSTROUTING masquerades marked packets; filter CPX-SERVICES rejects (no endpoints)
 *    or drops (Local policy, none here).
 * Every sync rewrites all chains of ours: a chain declared in the input is flushed first; chains
 * of ours no longer wanted are declared (emptied) and deleted. With `family: 'ip6'` the same
 * rules for ip6tables-restore: /128 host masks, ICMPv6 rejects, [addr]:port DNAT targets.
 */
import { createHash } from 'node:crypto';
import type { NftOptions } from './nft-rules.js';
import type { Endpoint, ServicePort } from './service-model.js';

export const CHAIN_PREFIX = 'CPX-';

/** The jumps from the built-in chains into ours: [table, chain, rule spec]. */
export const JUMPS: ReadonlyArray<readonly [string, string, readonly string[]]> = [
  ['nat', 'PREROUTING', ['-m', 'comment', '--comment', 'corectl service portals', '-j', 'CPX-SERVICES']],
  ['nat', 'OUTPUT', ['-m', 'comment', '--comment', 'corectl service portals', '-j', 'CPX-SERVICES']],
  ['nat', 'POSTROUTING', ['-m', 'comment', '--comment', 'corectl postrouting rules', '-j', 'CPX-POSTROUTING']],
  ['filter', 'INPUT', ['-m', 'conntrack', '--ctstate', 'NEW', '-m', 'comment', '--comment', 'corectl service portals', '-j', 'CPX-SERVICES']],
  ['filter', 'FORWARD', ['-m', 'conntrack', '--ctstate', 'NEW', '-m', 'comment', '--comment', 'corectl service portals', '-j', 'CPX-SERVICES']],
  ['filter', 'OUTPUT', ['-m', 'conntrack', '--ctstate', 'NEW', '-m', 'comment', '--comment', 'corectl service portals', '-j', 'CPX-SERVICES']],
];

function hashed(kind: string, text: string): string {
  return `${CHAIN_PREFIX}${kind}-${createHash('sha256').update(text).digest('base64url').replace(/[-_]/g, 'X').slice(0, 16).toUpperCase()}`;
}

const spKey = (sp: ServicePort): string => `${sp.namespace}/${sp.name}/${sp.protocol}/${sp.portName || sp.port}`;
const sepChain = (sp: ServicePort, e: Endpoint): string => hashed('SEP', `${spKey(sp)}/${e.ip}:${e.port}`);

export interface IptablesState {
  /** table -> chain -> rules (without "-A chain"). */
  tables: { nat: Map<string, string[]>; filter: Map<string, string[]> };
}

export function iptablesState(ports: readonly ServicePort[], o: Omit<NftOptions, 'table'>): IptablesState {
  const mark = `0x${(1 << o.masqueradeBit >>> 0).toString(16)}`;
  const v6 = o.family === 'ip6';
  const host = v6 ? '/128' : '/32';
  const hostMask = v6 ? 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff' : '255.255.255.255';
  const unreachable = v6 ? 'icmp6-port-unreachable' : 'icmp-port-unreachable';
  const target = (e: Endpoint): string => (v6 ? `[${e.ip}]:${e.port}` : `${e.ip}:${e.port}`);
  const nat = new Map<string, string[]>([
    ['CPX-SERVICES', []], ['CPX-NODEPORTS', []], ['CPX-MARK-MASQ', [`-j MARK --or-mark ${mark}`]],
    ['CPX-POSTROUTING', [`-m mark ! --mark ${mark}/${mark} -j RETURN`, `-j MARK --xor-mark ${mark}`, '-j MASQUERADE --random-fully']],
  ]);
  const filter = new Map<string, string[]>([['CPX-SERVICES', []]]);
  const services = nat.get('CPX-SERVICES') as string[];
  const nodePorts = nat.get('CPX-NODEPORTS') as string[];
  const rejects = filter.get('CPX-SERVICES') as string[];
  const localDst = o.nodePortCidrs.length > 0 ? o.nodePortCidrs.map((c) => `-d ${c}`) : [`-m addrtype --dst-type LOCAL ! -d ${v6 ? '::1/128' : '127.0.0.0/8'}`];
  const selection = (sp: ServicePort, eps: Endpoint[]): string[] => {
    const rules: string[] = [];
    if (sp.affinitySeconds > 0) {
      for (const e of eps) rules.push(`-m recent --name ${sepChain(sp, e)} --mask ${hostMask} --rsource --rcheck --seconds ${sp.affinitySeconds} --reap -j ${sepChain(sp, e)}`);
    }
    eps.forEach((e, i) => {
      const left = eps.length - i;
      rules.push(left > 1 ? `-m statistic --mode random --probability ${(1 / left).toFixed(10)} -j ${sepChain(sp, e)}` : `-j ${sepChain(sp, e)}`);
    });
    return rules;
  };
  for (const sp of ports) {
    const comment = `-m comment --comment "${spKey(sp)}"`;
    const proto = `-p ${sp.protocol} -m ${sp.protocol}`;
    const used = new Map<string, Endpoint>();
    for (const e of [...sp.clusterEndpoints, ...sp.localEndpoints]) used.set(`${e.ip}:${e.port}`, e);
    for (const e of used.values()) {
      nat.set(sepChain(sp, e), [
        `-s ${e.ip}${host} ${comment} -j CPX-MARK-MASQ`,
        `${proto} ${comment}${sp.affinitySeconds > 0 ? ` -m recent --name ${sepChain(sp, e)} --mask ${hostMask} --rsource --set` : ''} -j DNAT --to-destination ${target(e)}`,
      ]);
    }
    const svc = hashed('SVC', spKey(sp));
    const internal = sp.internalLocal ? sp.localEndpoints : sp.clusterEndpoints;
    const noneVerdict = sp.clusterEndpoints.length > 0 ? '-j DROP' : `-j REJECT --reject-with ${unreachable}`;
    const cipMatch = `-d ${sp.clusterIp}${host} ${proto} --dport ${sp.port}`;
    if (internal.length > 0) {
      const rules: string[] = [];
      if (o.masqueradeAll) rules.push(`${cipMatch} ${comment} -j CPX-MARK-MASQ`);
      else for (const c of o.clusterCidrs) rules.push(`${cipMatch} ! -s ${c} ${comment} -j CPX-MARK-MASQ`);
      rules.push(...selection(sp, internal));
      nat.set(svc, rules);
      services.push(`${cipMatch} ${comment} -j ${svc}`);
    } else {
      rejects.push(`${cipMatch} ${comment} ${noneVerdict}`);
    }
    if (sp.nodePort === 0 && sp.externalIps.length === 0) continue;
    const external = sp.externalLocal ? sp.localEndpoints : sp.clusterEndpoints;
    const ext = hashed('EXT', spKey(sp));
    if (external.length === 0) {
      for (const ip of sp.externalIps) rejects.push(`-d ${ip}${host} ${proto} --dport ${sp.port} ${comment} ${noneVerdict}`);
      if (sp.nodePort > 0) for (const d of localDst) rejects.push(`${d} ${proto} --dport ${sp.nodePort} ${comment} ${noneVerdict}`);
      continue;
    }
    const rules: string[] = [];
    if (sp.externalLocal) {
      if (sp.clusterEndpoints.length > 0) {
        const exc = hashed('EXC', spKey(sp));
        nat.set(exc, selection(sp, sp.clusterEndpoints));
        for (const c of o.clusterCidrs) rules.push(`-s ${c} ${comment} -j ${exc}`);
        rules.push(`-m addrtype --src-type LOCAL ${comment} -j CPX-MARK-MASQ`, `-m addrtype --src-type LOCAL ${comment} -j ${exc}`);
      }
    } else {
      rules.push(`${comment} -j CPX-MARK-MASQ`);
    }
    rules.push(...selection(sp, external));
    nat.set(ext, rules);
    for (const ip of sp.externalIps) services.push(`-d ${ip}${host} ${proto} --dport ${sp.port} ${comment} -j ${ext}`);
    if (sp.nodePort > 0) nodePorts.push(`${proto} --dport ${sp.nodePort} ${comment} -j ${ext}`);
  }
  for (const d of localDst) services.push(`${d} -j CPX-NODEPORTS`);
  return { tables: { nat, filter } };
}

/** The restore input: every wanted chain rewritten, `stale` chains of ours emptied and deleted. */
export function restoreInput(state: IptablesState, stale: { nat: readonly string[]; filter: readonly string[] }): string {
  const out: string[] = [];
  for (const table of ['nat', 'filter'] as const) {
    const chains = state.tables[table];
    const gone = stale[table].filter((c) => !chains.has(c));
    out.push(`*${table}`);
    for (const c of [...chains.keys(), ...gone]) out.push(`:${c} - [0:0]`);
    for (const [c, rules] of chains) for (const r of rules) out.push(`-A ${c} ${r}`);
    for (const c of gone) out.push(`-X ${c}`);
    out.push('COMMIT');
  }
  return out.join('\n') + '\n';
}

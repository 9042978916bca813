/**
 * The cluster zone's answers, as CoreDNS's kubernetes plugin gives them (Kubernetes' DNS
 * specification, schema 1.1.0):
 *   <svc>.<ns>.svc.<zone>                 A/AAAA: the ClusterIPs, or a headless service's ready
 *                                         endpoint addresses; ExternalName: a CNAME
 *   _<port>._<proto>.<svc>.<ns>.svc.<zone> SRV (and A/AAAA) for the matching ports
 *   <hostname>.<svc>.<ns>.svc.<zone>      one endpoint (its hostname, else its dashed address)
 *   <a-b-c-d>.<ns>.pod.<zone>             the address itself ("pods insecure")
 *   PTR of ClusterIPs and endpoint addresses; dns-version.<zone> TXT "1.1.0"; the apex SOA/NS.
 * A name in the zone that matches nothing is NXDOMAIN; a name that exists with no record of the
 * asked type is NODATA (NOERROR, empty); both carry the zone's SOA in the authority section.
 * Reverse names of unknown addresses and every name outside the zone are not ours (undefined):
 * the server forwards them.
 */
import type { Answer } from 'dns-packet';
import { isIP } from 'node:net';
import { canonicalIp, type ClusterView, type DnsEndpoint, type DnsServicePort } from './cluster-view.js';

export type Rcode = 'NOERROR' | 'NXDOMAIN' | 'SERVFAIL';

export interface ZoneAnswer {
  rcode: Rcode;
  answers: Answer[];
  additionals: Answer[];
  authorities: Answer[];
  /** An ExternalName's target: the server resolves it and appends what it gets. */
  chase?: string;
}

export interface ZoneOptions {
  /** The cluster domain without the trailing dot, e.g. cluster.local. */
  readonly zone: string;
  /** Seconds on every record (kubeadm's Corefile: 30). */
  readonly ttl: number;
}

/** A record the lookup found: an address or a CNAME target, its port, and the name SRV targets. */
interface Found { host: string; port: number; target: string }

const NAME_ERROR = 'name-error';

export function soaRecord(o: ZoneOptions, serial: number): Answer {
  return {
    type: 'SOA', name: o.zone, ttl: Math.min(o.ttl, 300), class: 'IN',
    data: { mname: `ns.dns.${o.zone}`, rname: `hostmaster.${o.zone}`, serial, refresh: 7200, retry: 1800, expire: 86400, minimum: o.ttl },
  };
}

function addressRecord(name: string, ip: string, ttl: number): Answer | undefined {
  const family = isIP(ip);
  if (family === 4) return { type: 'A', name, ttl, class: 'IN', data: ip };
  if (family === 6) return { type: 'AAAA', name, ttl, class: 'IN', data: ip };
  return undefined;
}

/** The address a reverse name stands for, or undefined. */
export function reverseToIp(name: string): string | undefined {
  if (name.endsWith('.in-addr.arpa')) {
    const parts = name.slice(0, -'.in-addr.arpa'.length).split('.');
    if (parts.length !== 4) return undefined;
    const ip = parts.reverse().join('.');
    return isIP(ip) === 4 ? ip : undefined;
  }
  if (name.endsWith('.ip6.arpa')) {
    const nibbles = name.slice(0, -'.ip6.arpa'.length).split('.');
    if (nibbles.length !== 32 || !nibbles.every((n) => /^[0-9a-f]$/.test(n))) return undefined;
    const hex = nibbles.reverse().join('');
    const groups = hex.match(/.{4}/g) ?? [];
    const ip = groups.map((g) => g.replace(/^0+(?=.)/, '')).join(':');
    return isIP(ip) === 6 ? ip : undefined;
  }
  return undefined;
}

/** An address written with dashes (a pod name, or an endpoint without a hostname). */
function dashed(ip: string): string {
  return ip.replace(/[.:]/g, '-');
}

function endpointHostname(e: DnsEndpoint): string {
  return e.hostname || dashed(e.ip);
}

function stripUnderscore(s: string): string {
  return s.startsWith('_') ? s.slice(1) : s;
}

function matchPort(wantPort: string, wantProto: string, p: DnsServicePort): boolean {
  return (wantPort === '' || wantPort === (p.name ?? '').toLowerCase()) && (wantProto === '' || wantProto === (p.protocol ?? 'TCP').toLowerCase());
}


/** The services' records for one request (CoreDNS findServices); NAME_ERROR when none. */
function findServices(view: ClusterView, zone: string, ns: string, svcName: string, endpoint: string, port: string, proto: string): Found[] | typeof NAME_ERROR {
  const svc = view.service(ns, svcName);
  if (!svc) return NAME_ERROR;
  const base = `${svc.name}.${svc.namespace}.svc.${zone}`;
  if (svc.type === 'ExternalName') {
    if (endpoint !== '' || !svc.externalName) return NAME_ERROR;
    return [{ host: svc.externalName.replace(/\.$/, ''), port: 0, target: base }];
  }
  const out: Found[] = [];
  let matched = false;
  if (svc.headless || endpoint !== '') {
    for (const e of view.endpoints(ns, svc.name)) {
      if (endpoint !== '' && endpointHostname(e).toLowerCase() !== endpoint) continue;
      const list = e.ports.length ? e.ports : [{ port: -1, protocol: 'TCP' }];
      for (const p of list) {
        if (!matchPort(port, proto, p)) continue;
        matched = true;
        out.push({ host: e.ip, port: p.port, target: `${endpointHostname(e)}.${base}` });
      }
    }
    return matched ? out : NAME_ERROR;
  }
  for (const p of svc.ports) {
    if (!matchPort(port, proto, p)) continue;
    matched = true;
    for (const ip of svc.clusterIps) out.push({ host: ip, port: p.port, target: base });
  }
  return matched ? out : NAME_ERROR;
}

function reply(rcode: Rcode, answers: Answer[] = [], additionals: Answer[] = []): ZoneAnswer {
  return { rcode, answers, additionals, authorities: [] };
}

/** The records of `found` for the asked type, named `qname`. */
function recordsFor(qname: string, qtype: string, found: Found[], ttl: number, isExternal: boolean): ZoneAnswer {
  if (isExternal) {
    const target = found[0]?.host ?? '';
    if (qtype === 'SRV' || qtype === 'PTR' || qtype === 'TXT') return reply('NOERROR');
    const r = reply('NOERROR', [{ type: 'CNAME', name: qname, ttl, class: 'IN', data: target }]);
    if (qtype === 'A' || qtype === 'AAAA') r.chase = target;
    return r;
  }
  if (qtype === 'A' || qtype === 'AAAA' || qtype === 'ANY') {
    const seen = new Set<string>();
    const answers: Answer[] = [];
    for (const f of found) {
      const a = addressRecord(qname, f.host, ttl);
      if (!a || seen.has(f.host) || (qtype !== 'ANY' && a.type !== qtype)) continue;
      seen.add(f.host);
      answers.push(a);
    }
    return reply('NOERROR', answers);
  }
  if (qtype === 'SRV') {
    const usable = found.filter((f) => f.port >= 0);
    const seen = new Set<string>();
    const unique = usable.filter((f) => { const k = `${f.target}|${f.port}`; if (seen.has(k)) return false; seen.add(k); return true; });
    // CoreDNS spreads the weight over the records of one priority: 100, 50, 33, ...
    const weight = unique.length ? Math.floor(100 / unique.length) : 0;
    const answers: Answer[] = unique.map((f) => ({ type: 'SRV', name: qname, ttl, class: 'IN', data: { priority: 0, weight, port: f.port, target: f.target } }));
    const extra = new Set<string>();
    const additionals: Answer[] = [];
    for (const f of usable) {
      const k = `${f.target}|${f.host}`;
      if (extra.has(k)) continue;
      extra.add(k);
      const a = addressRecord(f.target, f.host, ttl);
      if (a) additionals.push(a);
    }
    return reply('NOERROR', answers, additionals);
  }
  return reply('NOERROR');
}

function answerPtr(view: ClusterView, o: ZoneOptions, qname: string, ip: string): ZoneAnswer | undefined {
  const key = canonicalIp(ip);
  const svc = view.servicesByClusterIp(key)[0];
  if (svc) return reply('NOERROR', [{ type: 'PTR', name: qname, ttl: o.ttl, class: 'IN', data: `${svc.name}.${svc.namespace}.svc.${o.zone}` }]);
  const eps = view.endpointsByIp(key);
  if (!eps.length) return undefined;
  const names = [...new Set(eps.map(({ service, endpoint }) => `${endpointHostname(endpoint)}.${service.name}.${service.namespace}.svc.${o.zone}`))];
  return reply('NOERROR', names.map((data) => ({ type: 'PTR' as const, name: qname, ttl: o.ttl, class: 'IN' as const, data })));
}

function withSoa(r: ZoneAnswer, o: ZoneOptions, serial: number): ZoneAnswer {
  if (r.answers.length === 0) r.authorities = [soaRecord(o, serial)];
  return r;
}

/**
 * Answers `qname` (any case, with or without the trailing dot) for `qtype`, or undefined when
 * the name is not the cluster's (the caller forwards it).
 */
export function answerCluster(view: ClusterView, o: ZoneOptions, qname: string, qtype: string, serial = 1): ZoneAnswer | undefined {
  const name = qname.replace(/\.$/, '').toLowerCase();
  const zone = o.zone.toLowerCase();
  if (qtype === 'PTR') {
    const ip = reverseToIp(name);
    if (ip !== undefined) return answerPtr(view, o, name, ip);
  }
  if (name !== zone && !name.endsWith(`.${zone}`)) return undefined;
  const base = name === zone ? '' : name.slice(0, -zone.length - 1);
  const nameError = (): ZoneAnswer => withSoa(reply(view.synced() ? 'NXDOMAIN' : 'SERVFAIL'), o, serial);
  if (base === '') {
    if (qtype === 'SOA') return reply('NOERROR', [soaRecord(o, serial)]);
    if (qtype === 'NS') return reply('NOERROR', [{ type: 'NS', name: zone, ttl: o.ttl, class: 'IN', data: `ns.dns.${zone}` }]);
    return withSoa(reply('NOERROR'), o, serial);
  }
  if (base === 'dns-version' && qtype === 'TXT') return reply('NOERROR', [{ type: 'TXT', name, ttl: o.ttl, class: 'IN', data: '1.1.0' }]);
  if (base === 'svc' || base === 'pod') return withSoa(reply('NOERROR'), o, serial);
  const segs = base.split('.');
  let last = segs.length - 1;
  const kind = segs[last--] ?? '';
  if (kind !== 'svc' && kind !== 'pod') return nameError();
  const ns = segs[last--] ?? '';
  if (!view.namespaceExists(ns)) return nameError();
  const svcOrPod = last >= 0 ? segs[last--] ?? '' : '';
  if (svcOrPod === '') return withSoa(reply('NOERROR'), o, serial);
  let endpoint = '';
  let port = '';
  let proto = '';
  if (last === 0) endpoint = segs[0] ?? '';
  else if (last === 1) { proto = stripUnderscore(segs[1] ?? ''); port = stripUnderscore(segs[0] ?? ''); } else if (last > 1) return nameError();
  if (kind === 'pod') {
    const ip = svcOrPod.split('-').length === 4 && !svcOrPod.includes('--') ? svcOrPod.replaceAll('-', '.') : svcOrPod.replaceAll('-', ':');
    if (!isIP(ip)) return nameError();
    return withSoa(recordsFor(name, qtype, [{ host: ip, port: -1, target: name }], o.ttl, false), o, serial);
  }
  const found = findServices(view, zone, ns, svcOrPod, endpoint, port, proto);
  if (found === NAME_ERROR) return nameError();
  const svc = view.service(ns, svcOrPod);
  return withSoa(recordsFor(name, qtype, found, o.ttl, svc?.type === 'ExternalName'), o, serial);
}

/**
 * Which node addresses the API server may connect to, by Kubernetes' rules for proxying
 * (proxyutil.IsProxyableIP / IsProxyableHostname): only global unicast addresses, so never
 * loopback, link-local, multicast or unspecified ones; a host name must resolve, and to such
 * addresses only. A refusal is 400 BadRequest "address not allowed" ("No addresses for
 * hostname" when a name resolves to nothing, the resolver's error when it fails).
 *
 * Without this, whoever may write a Node object could aim nodes/proxy, pods/log or exec at
 * 127.0.0.1 and the API server's own port, and talk there with the API server's client
 * certificate. `allowLoopback` (--nodeagent-allow-loopback) admits loopback addresses for a
 * cluster that lives on one machine's loopback interface; link-local and unspecified
 * addresses stay refused.
 *
 * The check runs before connecting (for the 400) and again inside the connection's own name
 * lookup (guardedLookup), so a name that resolves differently the second time (DNS rebinding)
 * still cannot lead to a refused address.
 */
import * as dns from 'node:dns';
import type { LookupFunction } from 'node:net';
import { ApiError, errors } from '../../../api/meta/status.js';
import { isGlobalUnicast, isLoopbackIp, parseIp } from '../../../util/ip.js';

export const ADDRESS_NOT_ALLOWED = 'address not allowed';
export const NO_ADDRESSES = 'No addresses for hostname';

export function isProxyableIp(ip: string, allowLoopback: boolean): boolean {
  return isGlobalUnicast(ip) || (allowLoopback && isLoopbackIp(ip));
}

function lookupAll(host: string): Promise<dns.LookupAddress[]> {
  return new Promise((resolve, reject) => {
    dns.lookup(host, { all: true, verbatim: true }, (err, addresses) => (err ? reject(err) : resolve(addresses)));
  });
}

/** The 400 for a node host that is not proxyable, or nothing when it is. */
export async function checkProxyableHost(host: string, allowLoopback: boolean): Promise<void> {
  if (parseIp(host)) {
    if (!isProxyableIp(host, allowLoopback)) throw errors.badRequest(ADDRESS_NOT_ALLOWED);
    return;
  }
  let addresses: dns.LookupAddress[];
  try {
    addresses = await lookupAll(host);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw errors.badRequest(`lookup ${host}: ${code === 'ENOTFOUND' ? 'no such host' : (code ?? (e as Error).message)}`);
  }
  if (addresses.length === 0) throw errors.badRequest(NO_ADDRESSES);
  if (addresses.some((a) => !isProxyableIp(a.address, allowLoopback))) throw errors.badRequest(ADDRESS_NOT_ALLOWED);
}

/**
 * A `lookup` for sockets to node agents that fails on any refused address: the connection
 * then uses exactly the addresses that were checked.
 */
export function guardedLookup(allowLoopback: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      const done = callback as (e: NodeJS.ErrnoException | null, a?: string | dns.LookupAddress[], f?: number) => void;
      if (err) { done(err); return; }
      const bad = addresses.length === 0 ? NO_ADDRESSES : addresses.some((a) => !isProxyableIp(a.address, allowLoopback)) ? ADDRESS_NOT_ALLOWED : '';
      if (bad) { done(Object.assign(new Error(`${hostname}: ${bad}`), { code: 'EADDRNOTALLOWED' })); return; }
      if (options.all) { done(null, addresses); return; }
      const first = addresses[0]!;
      done(null, first.address, first.family);
    });
  };
}

/** A node agent that cannot be reached: 503, as Kubernetes' proxy transport answers. */
export function unreachable(message: string): ApiError {
  return new ApiError(503, 'ServiceUnavailable', `error trying to reach service: ${message}`);
}

/**
 * pods/proxy and services/proxy: where a proxied request goes, by Kubernetes' rules (its pod and
 * service ResourceLocation), then http-proxy.ts passes it on.
 *
 * Pods, `[scheme:]name[:port]`: the pod's IP, which must be a global unicast address (not
 * loopback, link-local or multicast: 400 "address not allowed"); the port is a number (none:
 * the first port any container declares, else the scheme's default).
 * Services, `[scheme:]name[:port]`: a port number is looked up among the service's ports and
 * stands for that port's name; then an address of the service's Endpoints that has a port of
 * that name (a random subset, a random address in it), and only an address that belongs to a
 * pod of the namespace (the endpoint's targetRef, with that IP): the API server never proxies
 * to other addresses someone wrote into an Endpoints object. None: 503 "no endpoints available".
 */
import { ApiError, errors, isApiError } from '../../../api/meta/status.js';
import { findResource } from '../../../api/resources/registry.js';
import { arr, rec } from '../../../api/resources/common/table-util.js';
import type { KubeObject } from '../../../api/resources/types.js';
import { isGlobalUnicast } from '../../../util/ip.js';
import { writeStatusToSocket } from '../filters/write-status.js';
import type { SubresourceHandler, SubresourceTarget, SubresourceUpgradeHandler } from '../rest/rest-api.js';
import { admitProxy, proxyHttp, proxySplit, proxyUpgrade, redirectToSlash, splitSchemeNamePort, type ProxyClients, type ProxyTarget } from './http-proxy.js';

type Obj = Record<string, unknown>;

function validPort(port: string): number {
  const n = /^\d+$/.test(port) ? Number(port) : NaN;
  if (!Number.isInteger(n) || n < 1 || n > 65535) throw errors.badRequest(`invalid port ${JSON.stringify(port)}`);
  return n;
}

/** The pod's proxy target for `id` (see the module comment). */
export function podLocation(pod: KubeObject, scheme: string, port: string): ProxyTarget {
  let p = port;
  if (p === '') {
    for (const c of arr(rec(pod.spec).containers)) {
      const first = arr(rec(c).ports)[0];
      if (first !== undefined) { p = String(rec(first).containerPort ?? ''); break; }
    }
  }
  const ip = String(rec(pod.status).podIP ?? '');
  if (!isGlobalUnicast(ip)) throw errors.badRequest('address not allowed');
  return { scheme: scheme === 'https' ? 'https' : 'http', host: ip, ...(p === '' ? {} : { port: validPort(p) }) };
}

const unavailable = (message: string): ApiError => new ApiError(503, 'ServiceUnavailable', message);

async function serviceLocation(t: SubresourceTarget, scheme: string, name: string, port: string, id: string): Promise<ProxyTarget> {
  let portName = port;
  if (/^\d+$/.test(port)) {
    const svc = await t.registry.get(t.def, t.namespace, name);
    const match = arr(rec(svc.spec).ports).map(rec).find((sp) => Number(sp.port) === Number(port));
    if (!match) throw unavailable(`no service port ${port} found for service ${JSON.stringify(name)}`);
    portName = String(match.name ?? '');
  }
  const endpoints = await t.registry.get(findResource('', 'v1', 'endpoints')!, t.namespace, name);
  const subsets = arr(endpoints.subsets).map(rec);
  if (subsets.length === 0) throw unavailable(`no endpoints available for service ${JSON.stringify(name)}`);
  const pods = findResource('', 'v1', 'pods')!;
  const start = Math.floor(Math.random() * subsets.length);
  for (let i = 0; i < subsets.length; i++) {
    const ss = subsets[(start + i) % subsets.length]!;
    const addresses = arr(ss.addresses).map(rec);
    if (addresses.length === 0) continue;
    const sp = arr(ss.ports).map(rec).find((x) => String(x.name ?? '') === portName);
    if (!sp) continue;
    const first = Math.floor(Math.random() * addresses.length);
    for (let j = 0; j < addresses.length; j++) {
      const addr = addresses[(first + j) % addresses.length]!;
      if (!(await isPodAddress(t, pods, addr))) continue;
      return { scheme: scheme === 'https' ? 'https' : 'http', host: String(addr.ip), port: Number(sp.port) };
    }
  }
  throw unavailable(`no endpoints available for service ${JSON.stringify(id)}`);
}

/** An endpoint address the proxy may use: its targetRef is a pod of the namespace that has that IP. */
async function isPodAddress(t: SubresourceTarget, pods: NonNullable<ReturnType<typeof findResource>>, addr: Obj): Promise<boolean> {
  const ref = rec(addr.targetRef);
  if (ref.kind !== 'Pod' || (ref.namespace !== undefined && ref.namespace !== t.namespace) || typeof ref.name !== 'string') return false;
  let pod: KubeObject;
  try { pod = await t.registry.get(pods, t.namespace, ref.name); } catch { return false; }
  const st = rec(pod.status);
  const ips = [String(st.podIP ?? ''), ...arr(st.podIPs).map((x) => String(rec(x).ip ?? ''))];
  return ips.includes(String(addr.ip ?? ''));
}

/** Where `t` (a pod or service proxy name) leads. */
async function locate(kind: 'pods' | 'services', t: SubresourceTarget): Promise<ProxyTarget> {
  const parts = splitSchemeNamePort(t.name);
  if (!parts) throw errors.badRequest(`invalid ${kind === 'pods' ? 'pod' : 'service'} request ${JSON.stringify(t.name)}`);
  return kind === 'pods'
    ? podLocation(await t.registry.get(t.def, t.namespace, parts.name), parts.scheme, parts.port)
    : serviceLocation(t, parts.scheme, parts.name, parts.port, t.name);
}

const OPTIONS_KIND = { pods: 'PodProxyOptions', services: 'ServiceProxyOptions' } as const;

/** The handlers of `pods/proxy` or `services/proxy`: plain requests and upgrades. */
export function createResourceProxyHandlers(kind: 'pods' | 'services', clients: ProxyClients): { handler: SubresourceHandler; upgrade: SubresourceUpgradeHandler } {
  return {
    handler: async (ctx, req, res, t) => {
      await admitProxy(ctx, req, t, OPTIONS_KIND[kind]);
      const target = await locate(kind, t);
      const { prefix, rest, search } = proxySplit(req, kind, t.name);
      if (rest === '') { redirectToSlash(res, prefix, search); return; }
      await proxyHttp(req, res, ctx.signal, clients, target, `${rest}${search}`, prefix);
    },
    upgrade: (ctx, req, socket, head, t) => {
      (async () => {
        await admitProxy(ctx, req, t, OPTIONS_KIND[kind]);
        const target = await locate(kind, t);
        const { rest, search } = proxySplit(req, kind, t.name);
        await proxyUpgrade(req, socket, head, ctx.signal, clients, target, `${rest || '/'}${search}`);
      })().catch((e: unknown) => writeStatusToSocket(socket, isApiError(e) ? e : errors.internal(`${kind}/proxy failed`, e)));
    },
  };
}

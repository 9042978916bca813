/**
 * Where a webhook is called: clientConfig.url as given, or clientConfig.service resolved the way
 * Kubernetes routes to a service's endpoints: the Service's port (clientConfig.service.port,
 * default 443) picks the endpoint port of the same name, and a random ready endpoint address
 * of it is dialled, while the URL and the TLS server name stay `<service>.<namespace>.svc`
 * (the name a webhook's serving certificate carries). Service and Endpoints are read from the
 * cache, consistently when the cache does not have them yet.
 */
import type { KubeObject } from '../../../../api/resources/types.js';
import { isStorageError } from '../../../../storage/errors.js';
import type { ObjectStore } from '../../../../storage/object-store-types.js';
import type { CallTarget } from './call.js';
import type { ClientConfig, ServiceReference } from './webhook.js';

type Obj = Record<string, unknown>;
const rec = (v: unknown): Obj => (typeof v === 'object' && v !== null && !Array.isArray(v) ? v as Obj : {});
const list = (v: unknown): Obj[] => (Array.isArray(v) ? v.map(rec) : []);

/** Why a service has nowhere to send the call (shown after the URL, as a dial error is). */
class NoEndpointError extends Error {}

async function read(store: ObjectStore, resource: string, namespace: string, name: string): Promise<KubeObject | undefined> {
  const ref = { group: '', resource, namespace, name };
  for (const resourceVersion of ['0', undefined]) {
    try {
      return await store.get(ref, resourceVersion ? { resourceVersion } : undefined);
    } catch (e) {
      if (!isStorageError(e, 'KeyNotFound')) throw e;
    }
  }
  return undefined;
}

/** A ready endpoint address and port of the service's port `svc.port`. */
async function resolveServiceEndpoint(store: ObjectStore, svc: ServiceReference): Promise<{ host: string; port: number }> {
  const service = await read(store, 'services', svc.namespace, svc.name);
  if (!service) throw new NoEndpointError(`services "${svc.name}" not found`);
  const spec = rec(service.spec);
  const type = typeof spec.type === 'string' ? spec.type : 'ClusterIP';
  if (!['ClusterIP', 'NodePort', 'LoadBalancer'].includes(type)) throw new NoEndpointError(`unsupported service type "${type}"`);
  const port = list(spec.ports).find((p) => p.port === svc.port);
  if (!port) throw new NoEndpointError(`no service port ${svc.port} found for service "${svc.name}"`);
  const portName = typeof port.name === 'string' ? port.name : '';
  const eps = await read(store, 'endpoints', svc.namespace, svc.name);
  const candidates: Array<{ host: string; port: number }> = [];
  for (const subset of list(eps?.subsets)) {
    const addresses = list(subset.addresses);
    for (const p of list(subset.ports)) {
      if ((typeof p.name === 'string' ? p.name : '') !== portName || typeof p.port !== 'number') continue;
      for (const a of addresses) if (typeof a.ip === 'string') candidates.push({ host: a.ip, port: p.port });
    }
  }
  if (!candidates.length) throw new NoEndpointError(`no endpoints available for service "${svc.name}"`);
  return candidates[Math.floor(Math.random() * candidates.length)]!;
}

/** The call target of a client config; a service's endpoint is looked up when the call is made. */
export function callTargetOf(store: ObjectStore, c: ClientConfig): CallTarget {
  const caPem = c.caPem;
  if (c.service) {
    const svc = c.service;
    const serverName = `${svc.name}.${svc.namespace}.svc`;
    const path = svc.path === '' ? '/' : svc.path;
    return {
      url: new URL(`https://${serverName}:${svc.port}${path}`), serverName, ...(caPem ? { caPem } : {}),
      connect: () => resolveServiceEndpoint(store, svc),
    };
  }
  return { url: new URL(c.url ?? ''), ...(caPem ? { caPem } : {}) };
}

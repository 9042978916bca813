/**
 * Where an APIService's requests go, and how: the service's address (a ready endpoint with
 * --enable-aggregator-routing, else its ClusterIP; an ExternalName service's name), and an HTTPS
 * agent that verifies the backend with spec.caBundle as `<service>.<namespace>.svc` (or not at
 * all with spec.insecureSkipTLSVerify) and presents --proxy-client-cert-file. The backend learns
 * who is asking from the request-header identity headers (X-Remote-User ...), which it trusts
 * because our client certificate chains to the front-proxy CA it reads from
 * kube-system/extension-apiserver-authentication.
 */
import * as https from 'node:https';
import type { OutgoingHttpHeaders } from 'node:http';
import { ApiError, isApiError } from '../../../api/meta/status.js';
import { findResource } from '../../../api/resources/registry.js';
import type { KubeObject } from '../../../api/resources/types.js';
import type { UserInfo } from '../../../auth/user.js';
import type { ResourceRegistry } from '../registry/resource-registry.js';

export interface ServiceRef { namespace: string; name: string; port: number }
export interface BackendTarget { host: string; port: number; serverName: string }

/** The header names the identity goes out in (the first of each --requestheader-* list). */
export interface IdentityHeaderNames { user: string; group: string; extraPrefix: string }
export const DEFAULT_IDENTITY_HEADERS: IdentityHeaderNames = { user: 'X-Remote-User', group: 'X-Remote-Group', extraPrefix: 'X-Remote-Extra-' };

/** The service reference of a service-backed APIService; undefined for a local one. */
export function serviceRefOf(apiService: KubeObject): ServiceRef | undefined {
  const spec = (apiService.spec ?? {}) as Record<string, unknown>;
  const svc = spec.service as Record<string, unknown> | undefined | null;
  if (!svc || typeof svc !== 'object') return undefined;
  return { namespace: String(svc.namespace ?? ''), name: String(svc.name ?? ''), port: typeof svc.port === 'number' ? svc.port : 443 };
}

type Rec = Record<string, unknown>;
const recs = (v: unknown): Rec[] => (Array.isArray(v) ? v.filter((x): x is Rec => typeof x === 'object' && x !== null) : []);

/** Why an address cannot be had: reason (for the Available condition) and message. */
export class BackendError extends Error {
  constructor(readonly reason: 'ServiceNotFound' | 'ServicePortError' | 'MissingEndpoints' | 'EndpointsNotFound', message: string) { super(message); }
}

/** Resolves the service to one address, as Kubernetes' ResolveEndpoint / ResolveCluster do. */
export async function resolveBackend(registry: ResourceRegistry, ref: ServiceRef, routeToEndpoints: boolean): Promise<BackendTarget> {
  const serverName = `${ref.name}.${ref.namespace}.svc`;
  let svc: KubeObject;
  try {
    svc = await registry.get(findResource('', 'v1', 'services')!, ref.namespace, ref.name);
  } catch (e) {
    if (isApiError(e, 'NotFound')) throw new BackendError('ServiceNotFound', `service/${ref.name} in "${ref.namespace}" is not present`);
    throw e;
  }
  const spec = (svc.spec ?? {}) as Rec;
  if (spec.type === 'ExternalName') return { host: String(spec.externalName ?? ''), port: ref.port, serverName };
  const svcPort = recs(spec.ports).find((p) => p.port === ref.port);
  if (!svcPort) throw new BackendError('ServicePortError', `service/${ref.name} in "${ref.namespace}" is not listening on port ${ref.port}`);
  if (!routeToEndpoints) {
    const ip = String(spec.clusterIP ?? '');
    if (!ip || ip === 'None') throw new BackendError('ServicePortError', `service/${ref.name} in "${ref.namespace}" has no cluster IP`);
    return { host: ip, port: ref.port, serverName };
  }
  let eps: KubeObject;
  try {
    eps = await registry.get(findResource('', 'v1', 'endpoints')!, ref.namespace, ref.name);
  } catch (e) {
    if (isApiError(e, 'NotFound')) throw new BackendError('EndpointsNotFound', `cannot find endpoints for service/${ref.name} in "${ref.namespace}"`);
    throw e;
  }
  const portName = String(svcPort.name ?? '');
  for (const subset of recs(eps.subsets)) {
    const port = recs(subset.ports).find((p) => String(p.name ?? '') === portName);
    const addresses = recs(subset.addresses);
    if (!port || !addresses.length) continue;
    const pick = addresses[Math.floor(Math.random() * addresses.length)]!;
    return { host: String(pick.ip), port: Number(port.port), serverName };
  }
  throw new BackendError('MissingEndpoints', `endpoints for service/${ref.name} in "${ref.namespace}" have no addresses with port name "${portName}"`);
}

/** HTTPS agents per APIService (by name and resourceVersion: a changed caBundle gets a new one). */
export class BackendAgents {
  private readonly agents = new Map<string, { version: string; agent: https.Agent }>();

  constructor(private readonly clientCert?: { readonly cert: Buffer; readonly key: Buffer }) {}

  agentFor(apiService: KubeObject): https.Agent {
    const name = apiService.metadata?.name ?? '';
    const version = apiService.metadata?.resourceVersion ?? '';
    const had = this.agents.get(name);
    if (had && had.version === version) return had.agent;
    had?.agent.destroy();
    const spec = (apiService.spec ?? {}) as Rec;
    const caBundle = typeof spec.caBundle === 'string' && spec.caBundle ? Buffer.from(spec.caBundle, 'base64') : undefined;
    const agent = new https.Agent({
      keepAlive: true,
      rejectUnauthorized: spec.insecureSkipTLSVerify !== true,
      ...(caBundle ? { ca: caBundle } : {}),
      ...(this.clientCert ? { cert: this.clientCert.cert, key: this.clientCert.key } : {}),
    });
    this.agents.set(name, { version, agent });
    return agent;
  }

  /**
   * A one-connection agent for an upgrade (the connection leaves the pool for good), with the
   * name the backend's certificate is checked against (requests by URL would check the IP).
   */
  upgradeAgentFor(apiService: KubeObject, serverName: string): https.Agent {
    const spec = (apiService.spec ?? {}) as Rec;
    const caBundle = typeof spec.caBundle === 'string' && spec.caBundle ? Buffer.from(spec.caBundle, 'base64') : undefined;
    return new https.Agent({
      keepAlive: false, servername: serverName, rejectUnauthorized: spec.insecureSkipTLSVerify !== true,
      ...(caBundle ? { ca: caBundle } : {}),
      ...(this.clientCert ? { cert: this.clientCert.cert, key: this.clientCert.key } : {}),
    });
  }

  forget(name: string): void {
    this.agents.get(name)?.agent.destroy();
    this.agents.delete(name);
  }

  close(): void {
    for (const a of this.agents.values()) a.agent.destroy();
    this.agents.clear();
  }
}

/** The identity headers for `user` (extra keys %-encoded, as Kubernetes' auth proxy round tripper writes them). */
export function identityHeaders(user: UserInfo, names: IdentityHeaderNames): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = { [names.user.toLowerCase()]: user.name };
  if (user.groups.length) out[names.group.toLowerCase()] = [...user.groups];
  for (const [k, values] of Object.entries(user.extra ?? {})) {
    out[`${names.extraPrefix.toLowerCase()}${encodeURIComponent(k).toLowerCase()}`] = [...values];
  }
  return out;
}

/** A 503 as Kubernetes' aggregator answers when the backend cannot be used. */
export function serviceUnavailable(message = 'service unavailable'): ApiError {
  return new ApiError(503, 'ServiceUnavailable', message);
}

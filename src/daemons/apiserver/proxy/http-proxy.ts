/**
 * One proxied HTTP request, for pods/proxy and services/proxy, as Kubernetes' proxy handler
 * treats a plain (not upgraded) request:
 *  - the method, the path after `/proxy`, the query, the body (streamed) and the caller's
 *    headers go to the target, less the hop-by-hop ones and the caller's credentials
 *    (Authorization, impersonation: the API server already authenticated the caller);
 *    X-Forwarded-For gets the caller's address;
 *  - the target's status, headers (less hop-by-hop ones) and body (streamed) come back; a
 *    redirect to a path of the target, or to the target itself, is rewritten to go through the
 *    proxy again, so it is followed by the client, never by the API server;
 *  - a target that cannot be reached is 503 ServiceUnavailable "error trying to reach service".
 * A proxy path without its trailing slash (`.../proxy`) is redirected (301) to `.../proxy/`.
 * Upgrades (WebSocket) go through too (proxyUpgrade): the target's 101 splices the two
 * connections; any other answer is relayed and both connections end.
 * HTTPS targets are not verified (Kubernetes' proxy transport does the same) and see the
 * --proxy-client-cert-file identity when one is configured. HTML bodies are passed as they
 * are: links inside them are not rewritten.
 */
import * as http from 'node:http';
import * as https from 'node:https';
import type { Duplex, Readable } from 'node:stream';
import { ApiError } from '../../../api/meta/status.js';
import type { ApiRequest, ApiResponse, RequestContext } from '../context.js';
import type { SubresourceTarget } from '../rest/rest-api.js';
import { H2Request } from '../h2-request.js';
import { headerPairs, relayResponse, requestUpgrade, splice, UpgradeError, writeResponseHead } from '../../../util/upgrade-proxy.js';
import { streamThrough } from './pod-log.js';

/** Request and response headers that belong to one connection, not to the message. */
const HOP_BY_HOP = new Set([
  'connection', 'keep-alive', 'proxy-connection', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer',
  'transfer-encoding', 'upgrade', 'http2-settings',
]);

/**
 * How long connecting to the target may take (Kubernetes' proxy dialer: 30 s). Once connected,
 * the target may take its time to answer (a long poll), as with Kubernetes.
 */
const CONNECT_TIMEOUT_MS = 30_000;

export interface ProxyTarget {
  readonly scheme: 'http' | 'https';
  readonly host: string;
  /** Absent: the scheme's default port. */
  readonly port?: number;
}

export interface ProxyClients {
  readonly http: http.Agent;
  readonly https: https.Agent;
  /** Upgraded connections leave the pool: agents without keep-alive keep them apart. */
  readonly upgradeHttp: http.Agent;
  readonly upgradeHttps: https.Agent;
  close(): void;
}

/** The agents proxied requests use; HTTPS ones present `clientCert` when given. */
export function createProxyClients(clientCert?: { cert: Buffer; key: Buffer }): ProxyClients {
  const h = new http.Agent({ keepAlive: true });
  const s = new https.Agent({ keepAlive: true, rejectUnauthorized: false, ...(clientCert ?? {}) });
  const uh = new http.Agent({ keepAlive: false });
  const us = new https.Agent({ keepAlive: false, rejectUnauthorized: false, ...(clientCert ?? {}) });
  return { http: h, https: s, upgradeHttp: uh, upgradeHttps: us, close() { h.destroy(); s.destroy(); uh.destroy(); us.destroy(); } };
}

/** `[scheme:]name[:port]` as Kubernetes splits a proxy name; undefined when malformed. */
export function splitSchemeNamePort(id: string): { scheme: 'http' | 'https' | ''; name: string; port: string } | undefined {
  const parts = id.split(':');
  let scheme = '', name: string, port = '';
  if (parts.length === 1) name = parts[0]!;
  else if (parts.length === 2) [name, port] = [parts[0]!, parts[1]!];
  else if (parts.length === 3) [scheme, name, port] = [parts[0]!, parts[1]!, parts[2]!];
  else return undefined;
  if (!name || (scheme !== '' && scheme !== 'http' && scheme !== 'https')) return undefined;
  return { scheme, name, port };
}

/**
 * Where `/{plural}/{id}/proxy` ends in the request path, and what follows it (the path for the
 * target, '' when nothing follows) with the query.
 */
/**
 * CONNECT admission of a proxy request (pods/proxy, services/proxy, nodes/proxy), as Kubernetes
 * runs it for every proxied request: the options object is PodProxyOptions, ServiceProxyOptions
 * or NodeProxyOptions with the path after `proxy/`.
 */
export function admitProxy(ctx: RequestContext, req: ApiRequest, t: SubresourceTarget, optionsKind: string): void | Promise<void> {
  const path = proxySplit(req, t.def.plural, t.name).rest.replace(/^\//, '');
  const options = { kind: optionsKind, apiVersion: 'v1', ...(path ? { path } : {}) };
  return t.registry.admission.connect({ def: t.def, subresource: 'proxy', namespace: t.namespace, name: t.name, options, request: { user: ctx.user, version: 'v1' } });
}

export function proxySplit(req: ApiRequest, plural: string, id: string): { prefix: string; rest: string; search: string } {
  const url = new URL(req.url ?? '/', 'http://apiserver');
  const path = url.pathname;
  for (const candidate of [`/${plural}/${encodeURIComponent(id)}/proxy`, `/${plural}/${id}/proxy`]) {
    const at = path.indexOf(candidate);
    if (at >= 0) return { prefix: path.slice(0, at + candidate.length), rest: path.slice(at + candidate.length), search: url.search };
  }
  return { prefix: path, rest: '', search: url.search };
}

function hostPort(t: ProxyTarget): string {
  const host = t.host.includes(':') ? `[${t.host}]` : t.host;
  return t.port === undefined ? host : `${host}:${t.port}`;
}

function forwardedHeaders(req: ApiRequest, target: ProxyTarget, upgrade = false): http.OutgoingHttpHeaders {
  const out: http.OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(req.headers)) {
    if (v === undefined || k.startsWith(':') || k === 'host' || k === 'authorization' || k.startsWith('impersonate-')) continue;
    // An upgrade keeps what asks for it (Connection: Upgrade, Upgrade: websocket).
    if (HOP_BY_HOP.has(k) && !(upgrade && (k === 'connection' || k === 'upgrade'))) continue;
    out[k] = v;
  }
  const client = req.socket?.remoteAddress;
  if (client) {
    const prior = req.headers['x-forwarded-for'];
    out['x-forwarded-for'] = prior ? `${String(prior)}, ${client}` : client;
  }
  out['host'] = hostPort(target);
  return out;
}

/** A Location of the target's, turned into the same place through the proxy. */
function rewriteLocation(location: string, target: ProxyTarget, prefix: string): string {
  if (location.startsWith('/') && !location.startsWith('//')) return prefix + location;
  try {
    const u = new URL(location);
    if (u.host === hostPort(target) || (u.hostname === target.host && target.port === undefined)) return `${prefix}${u.pathname}${u.search}${u.hash}`;
  } catch { /* not a URL: leave it */ }
  return location;
}

/**
 * Proxies `req` to `target` at `path` (with its query), answering on `res`; resolves once the
 * response has been passed on or the request was aborted.
 */
export function proxyHttp(req: ApiRequest, res: ApiResponse, signal: AbortSignal, clients: ProxyClients,
  target: ProxyTarget, path: string, prefix: string): Promise<void> {
  const method = String(req.method ?? 'GET').toUpperCase();
  const url = `${target.scheme}://${hostPort(target)}${path}`;
  return new Promise<void>((resolve, reject) => {
    const mod = target.scheme === 'https' ? https : http;
    // Lenient parsing of the answer, as Go's client (Kubernetes') is: simple servers in pods end
    // header lines with a bare LF (busybox httpd's CGI output does).
    const up = mod.request(url, { method, agent: target.scheme === 'https' ? clients.https : clients.http, headers: forwardedHeaders(req, target), insecureHTTPParser: true });
    let answered = false;
    const timer = setTimeout(() => {
      if (answered) return;
      answered = true;
      up.destroy();
      reject(new ApiError(503, 'ServiceUnavailable', `error trying to reach service: no connection to ${url} within ${CONNECT_TIMEOUT_MS / 1000}s`));
    }, CONNECT_TIMEOUT_MS);
    up.on('socket', (sock) => {
      if (!sock.connecting) { clearTimeout(timer); return; }
      sock.once(target.scheme === 'https' ? 'secureConnect' : 'connect', () => clearTimeout(timer));
    });
    const onAbort = (): void => { up.destroy(); };
    signal.addEventListener('abort', onAbort, { once: true });
    up.on('close', () => signal.removeEventListener('abort', onAbort));
    up.on('error', (e) => {
      if (answered) return;
      answered = true;
      clearTimeout(timer);
      reject(new ApiError(503, 'ServiceUnavailable', `error trying to reach service: ${e.message}`));
    });
    up.on('response', (upRes) => {
      if (answered) { upRes.destroy(); return; }
      answered = true;
      clearTimeout(timer);
      res.statusCode = upRes.statusCode ?? 502;
      for (const [k, v] of Object.entries(upRes.headers)) {
        if (v === undefined || HOP_BY_HOP.has(k)) continue;
        res.setHeader(k, k === 'location' ? rewriteLocation(String(v), target, prefix) : v);
      }
      if (method === 'HEAD') { upRes.resume(); res.end(); resolve(); return; }
      streamThrough(upRes, res, signal).then(resolve, resolve);
    });
    // The body, streamed with back-pressure.
    bodyStream(req).pipe(up);
  });
}

/** The request body as a stream: an HTTP/2 request's stream, or the HTTP/1.1 message itself. */
export function bodyStream(req: ApiRequest): Readable {
  return req instanceof H2Request ? req.stream : req;
}

/** The 301 to `.../proxy/` that a bare `.../proxy` gets, keeping the query. */
export function redirectToSlash(res: ApiResponse, prefix: string, search: string): void {
  res.statusCode = 301;
  res.setHeader('Location', `${prefix}/${search}`);
  res.setHeader('Content-Type', 'text/html; charset=utf-8');
  res.end(`<a href="${prefix}/${search}">Moved Permanently</a>.\n`);
}

/**
 * An upgrade request (WebSocket) through the proxy: sent to `target` with the caller's headers
 * (less credentials), then the two connections are spliced on the target's 101, or the target's
 * answer is relayed and both end (never a connection left open to a target that did not switch).
 */
export async function proxyUpgrade(req: ApiRequest, socket: Duplex, head: Buffer, signal: AbortSignal, clients: ProxyClients,
  target: ProxyTarget, path: string): Promise<void> {
  const method = String(req.method ?? 'GET').toUpperCase();
  const url = `${target.scheme}://${hostPort(target)}${path}`;
  let out;
  try {
    out = await requestUpgrade({
      url, method, headers: forwardedHeaders(req, target, true), timeoutMs: CONNECT_TIMEOUT_MS, signal,
      agent: target.scheme === 'https' ? clients.upgradeHttps : clients.upgradeHttp,
    });
  } catch (e) {
    throw new ApiError(503, 'ServiceUnavailable', `error trying to reach service: ${e instanceof UpgradeError ? e.message : String(e)}`);
  }
  if (out.kind === 'response') { await relayResponse(socket, out.res); return; }
  writeResponseHead(socket, 101, 'Switching Protocols', headerPairs(out.res));
  await splice(socket, head, out.socket, out.head);
}

/**
 * /api/v1/nodes/NAME/proxy/PATH: proxies to PATH on the node agent's secure server (/healthz,
 * /pods, /stats/summary, /metrics ...) with the caller's method and body (GET, HEAD, POST, PUT,
 * PATCH, DELETE), answering with the agent's status, content type and body, streamed. Of the
 * caller's headers only Content-Type goes along, and redirects from the node are refused (see
 * node-connection.ts).
 */
import type { ApiRequest, RequestContext } from '../context.js';
import { errors } from '../../../api/meta/status.js';
import type { SubresourceHandler, SubresourceTarget } from '../rest/rest-api.js';
import { admitProxy, bodyStream, proxySplit } from './http-proxy.js';
import { nodeTarget, type NodeConnection } from './node-connection.js';
import { agentError, streamThrough } from './pod-log.js';

/** What nodes/proxy passes on (Kubernetes lists create, delete, get, patch and update for it). */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE']);

/** Response headers worth passing back (no hop-by-hop or connection-level ones). */
const PASSED_HEADERS = ['content-type', 'content-encoding', 'cache-control', 'last-modified', 'etag'];

/** The part of the request path after `/nodes/NAME/proxy`, always starting with '/', with the query. */
export function proxiedPath(req: ApiRequest, name: string): string {
  const { rest, search } = proxySplit(req, 'nodes', name);
  return `${rest.startsWith('/') ? rest : '/' + rest}${search}`;
}

export function createNodeProxyHandler(conn: NodeConnection): SubresourceHandler {
  return async (ctx: RequestContext, req, res, target: SubresourceTarget) => {
    const method = String(req.method ?? 'GET').toUpperCase();
    if (!METHODS.has(method)) throw errors.methodNotAllowed(method, 'nodes/proxy');
    // Kubernetes accepts NAME:PORT and SCHEME:NAME:PORT here; only the plain node name is served.
    if (target.name.includes(':')) throw errors.badRequest(`node proxy to "${target.name}": only the node name is supported, without scheme or port`);
    await admitProxy(ctx, req, target, 'NodeProxyOptions');
    const node = await target.registry.get(target.def, '', target.name);
    const withBody = method !== 'GET' && method !== 'HEAD';
    const type = req.headers['content-type'];
    const up = await conn.get(nodeTarget(node, conn.options.preferredAddressTypes), proxiedPath(req, target.name), ctx.signal, {
      method, ...(withBody ? { body: bodyStream(req) } : {}), ...(withBody && typeof type === 'string' ? { headers: { 'content-type': type } } : {}),
    });
    const code = up.statusCode ?? 502;
    if (code >= 300 && code < 400) throw await agentError(up, 'nodes/proxy', target.name);
    const headers: Record<string, string> = {};
    for (const h of PASSED_HEADERS) {
      const v = up.headers[h];
      if (typeof v === 'string') headers[h] = v;
    }
    res.writeHead(code, headers);
    if (method === 'HEAD') { up.destroy(); res.end(); return; }
    await streamThrough(up, res, ctx.signal);
  };
}

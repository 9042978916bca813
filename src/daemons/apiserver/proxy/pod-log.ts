/**
 * GET /api/v1/namespaces/NS/pods/NAME/log: checks the pod (bound, container named or implied)
 * and the PodLogOptions, then streams the node agent's /containerLogs/NS/NAME/CONTAINER answer
 * through unchanged. Never buffers the log: bytes are written as they arrive, with backpressure;
 * a followed log stays open until the agent ends it or the client goes away (ctx.signal).
 */
import type { IncomingMessage } from 'node:http';
import { ApiError, errors } from '../../../api/meta/status.js';
import { findResource } from '../../../api/resources/registry.js';
import type { KubeObject } from '../../../api/resources/types.js';
import type { ApiResponse, RequestContext } from '../context.js';
import { queryBool } from '../request-info.js';
import type { SubresourceHandler, SubresourceTarget } from '../rest/rest-api.js';
import { readSmallBody } from '../../../util/upgrade-proxy.js';
import { agentErrorMessage, nodeTarget, type NodeConnection } from './node-connection.js';

interface PodShape {
  spec?: {
    nodeName?: string;
    containers?: Array<{ name: string }>;
    initContainers?: Array<{ name: string }>;
    ephemeralContainers?: Array<{ name: string }>;
  };
}

/** The container the request is about, or the Kubernetes 400 when it is missing or unknown. */
export function chooseContainer(pod: KubeObject, podName: string, requested: string): string {
  const spec = (pod as PodShape).spec ?? {};
  const names = (spec.containers ?? []).map((c) => c.name);
  const inits = (spec.initContainers ?? []).map((c) => c.name);
  const ephemeral = (spec.ephemeralContainers ?? []).map((c) => c.name);
  if (!requested) {
    if (names.length === 1) return names[0]!;
    let msg = `a container name must be specified for pod ${podName}, choose one of: [${names.join(' ')}]`;
    if (inits.length > 0) msg += ` or one of the init containers: [${inits.join(' ')}]`;
    if (ephemeral.length > 0) msg += ` or one of the ephemeral containers: [${ephemeral.join(' ')}]`;
    throw errors.badRequest(msg);
  }
  if (![...names, ...inits, ...ephemeral].includes(requested)) throw errors.badRequest(`container ${requested} is not valid for pod ${podName}`);
  return requested;
}

function intOption(q: URLSearchParams, name: string): number | undefined {
  const v = q.get(name);
  if (v === null || v === '') return undefined;
  if (!/^-?\d+$/.test(v)) throw errors.badRequest(`invalid value for ${name}: "${v}" is not an integer`);
  return Number(v);
}

/** PodLogOptions validation (422 Invalid, as Kubernetes) and the query sent to the agent. */
export function agentLogQuery(q: URLSearchParams, podName: string): { query: URLSearchParams; limitBytes?: number; skipVerify: boolean } {
  const tailLines = intOption(q, 'tailLines');
  const sinceSeconds = intOption(q, 'sinceSeconds');
  const limitBytes = intOption(q, 'limitBytes');
  const sinceTime = q.get('sinceTime') ?? '';
  const causes: Array<{ field: string; type: 'FieldValueInvalid' | 'FieldValueForbidden'; message: string }> = [];
  if (tailLines !== undefined && tailLines < 0) causes.push({ field: 'tailLines', type: 'FieldValueInvalid', message: `Invalid value: ${tailLines}: must be greater than or equal to 0` });
  if (limitBytes !== undefined && limitBytes < 1) causes.push({ field: 'limitBytes', type: 'FieldValueInvalid', message: `Invalid value: ${limitBytes}: must be greater than 0` });
  if (sinceSeconds !== undefined && sinceSeconds < 1) causes.push({ field: 'sinceSeconds', type: 'FieldValueInvalid', message: `Invalid value: ${sinceSeconds}: must be greater than 0` });
  if (sinceSeconds !== undefined && sinceTime) causes.push({ field: '', type: 'FieldValueForbidden', message: 'Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified' });
  if (sinceTime && Number.isNaN(Date.parse(sinceTime))) throw errors.badRequest(`invalid value for sinceTime: "${sinceTime}" is not an RFC3339 time`);
  if (causes.length > 0) throw errors.invalid('PodLogOptions', '', podName, causes);
  const out = new URLSearchParams();
  for (const b of ['follow', 'previous', 'timestamps']) if (queryBool(q.get(b)) === true) out.set(b, 'true');
  if (tailLines !== undefined) out.set('tailLines', String(tailLines));
  if (sinceSeconds !== undefined) out.set('sinceSeconds', String(sinceSeconds));
  if (sinceTime) out.set('sinceTime', sinceTime);
  if (limitBytes !== undefined) out.set('limitBytes', String(limitBytes));
  return { query: out, ...(limitBytes !== undefined ? { limitBytes } : {}), skipVerify: queryBool(q.get('insecureSkipTLSVerifyBackend')) === true };
}

/** Maps an agent's non-2xx answer to a Status error, like Kubernetes' HTTP response checker. */
export async function agentError(res: IncomingMessage, what: string, name: string): Promise<ApiError> {
  const code = res.statusCode ?? 500;
  if (code >= 300 && code < 400) {
    res.resume();
    return new ApiError(500, 'InternalError', `the node agent answered ${what} "${name}" with a redirect (${code}), which is not followed`);
  }
  const message = agentErrorMessage((await readSmallBody(res)).toString('utf8')) || `the node agent answered ${code}`;
  if (code === 400) return errors.badRequest(message);
  if (code === 500) return errors.internal(message);
  if (code === 404) return new ApiError(404, 'NotFound', message, { name, kind: what });
  if (code === 401 || code === 403) return new ApiError(code === 401 ? 401 : 403, code === 401 ? 'Unauthorized' : 'Forbidden', `the node agent refused the API server (${code}): ${message}`);
  return new ApiError(code, '', message);
}

/** Copies `up` into `res` with backpressure, stopping after `limit` bytes; resolves when done. */
export function streamThrough(up: IncomingMessage, res: ApiResponse, signal: AbortSignal, limit?: number): Promise<void> {
  return new Promise((resolve) => {
    let sent = 0;
    let done = false;
    const finish = (): void => {
      if (done) return;
      done = true;
      signal.removeEventListener('abort', onAbort);
      up.destroy();
      if (!res.writableEnded) res.end();
      resolve();
    };
    const onAbort = (): void => finish();
    signal.addEventListener('abort', onAbort, { once: true });
    if (signal.aborted) { finish(); return; }
    up.on('data', (chunk: Buffer) => {
      let c = chunk;
      if (limit !== undefined && sent + c.length > limit) c = c.subarray(0, limit - sent);
      sent += c.length;
      const ok = c.length === 0 ? true : (res as { write(b: Buffer): boolean }).write(c);
      if (limit !== undefined && sent >= limit) { finish(); return; }
      if (!ok) {
        up.pause();
        (res as NodeJS.EventEmitter).once('drain', () => up.resume());
      }
    });
    up.on('end', finish);
    up.on('error', finish);
    up.on('close', finish);
    (res as NodeJS.EventEmitter).on('close', finish);
  });
}

export function createPodLogHandler(conn: NodeConnection): SubresourceHandler {
  return async (ctx: RequestContext, req, res, target: SubresourceTarget) => {
    const method = String(req.method ?? 'GET').toUpperCase();
    if (method !== 'GET') throw errors.methodNotAllowed(method, 'pods/log');
    const pod = await target.registry.get(target.def, target.namespace, target.name);
    const container = chooseContainer(pod, target.name, ctx.query.get('container') ?? '');
    const { query, limitBytes, skipVerify } = agentLogQuery(ctx.query, target.name);
    const nodeName = (pod as PodShape).spec?.nodeName ?? '';
    if (!nodeName) throw errors.badRequest(`pod ${target.name} does not have a host assigned`);
    const nodeDef = findResource('', 'v1', 'nodes');
    if (!nodeDef) throw errors.internal('the nodes resource is not registered');
    const node = await target.registry.get(nodeDef, '', nodeName);
    const path = `/containerLogs/${[target.namespace, target.name, container].map(encodeURIComponent).join('/')}`;
    const qs = query.toString();
    const up = await conn.get(nodeTarget(node, conn.options.preferredAddressTypes), qs ? `${path}?${qs}` : path, ctx.signal, { skipVerify });
    const code = up.statusCode ?? 500;
    if (code < 200 || code > 206) throw await agentError(up, 'pods/log', target.name);
    res.writeHead(200, { 'content-type': String(up.headers['content-type'] ?? 'text/plain') });
    // Send the headers now: a followed log may stay silent for a long time.
    (res as { flushHeaders?: () => void }).flushHeaders?.();
    await streamThrough(up, res, ctx.signal, limitBytes);
  };
}

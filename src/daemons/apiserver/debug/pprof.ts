/**
 * /debug/pprof/ on the API server (--profiling): the controller manager's implementation
 * (src/util/pprof.ts) behind the filter chain, so only users authorized for `get` on the
 * non-resource URL /debug/pprof/* (cluster-admin in the default RBAC policy) reach it; the heap
 * snapshot is therefore on. A CPU profile must end before the request's deadline
 * (--request-timeout): a longer ?seconds is a 400, as Go answers one beyond its write timeout.
 */
import { errors } from '../../../api/meta/status.js';
import { servePprof, type PprofResponse } from '../../../util/pprof.js';
import type { RequestContext } from '../context.js';

/** Time kept between the profile's end and the request's deadline, for the reply itself. */
const REPLY_MARGIN_MS = 2000;
/** As the controller manager's limit. */
const MAX_SECONDS = 300;

export function isPprofPath(path: string): boolean {
  return path === '/debug/pprof' || path.startsWith('/debug/pprof/');
}

export async function serveApiserverPprof(method: string, path: string, ctx: RequestContext, res: PprofResponse & { setHeader(n: string, v: string): unknown }): Promise<void> {
  if (method !== 'GET' && method !== 'HEAD') throw errors.methodNotAllowed(method, path);
  if (path === '/debug/pprof') {
    res.statusCode = 301;
    res.setHeader('Location', '/debug/pprof/');
    res.end();
    return;
  }
  const left = ctx.deadline === undefined ? Infinity : (ctx.deadline - Date.now() - REPLY_MARGIN_MS) / 1000;
  await servePprof(path.slice('/debug/pprof/'.length), ctx.query, res, {
    signal: ctx.signal, maxSeconds: Math.max(0, Math.min(MAX_SECONDS, left)), heapSnapshot: true,
  });
}

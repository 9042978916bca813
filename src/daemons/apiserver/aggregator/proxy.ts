/**
 * One request for an aggregated group/version, proxied to its extension API server after the
 * chain authenticated and authorized it: the method, path, query and body (streamed) go out
 * with the caller's headers less credentials (Authorization, Impersonate-*, incoming identity
 * headers) and hop-by-hop ones, plus the caller's identity in the request-header headers.
 * The backend's status, headers and body come back streamed (watches included); a backend that
 * cannot be reached is 503 ServiceUnavailable.
 */
import * as https from 'node:https';
import type { OutgoingHttpHeaders } from 'node:http';
import type { Duplex } from 'node:stream';
import { headerPairs, relayResponse, requestUpgrade, splice, UpgradeError, writeResponseHead } from '../../../util/upgrade-proxy.js';
import type { ApiRequest, ApiResponse, RequestContext } from '../context.js';
import { bodyStream } from '../proxy/http-proxy.js';
import { streamThrough } from '../proxy/pod-log.js';
import { identityHeaders, serviceUnavailable, type BackendTarget, type IdentityHeaderNames } from './backend.js';

const HOP_BY_HOP = new Set([
  'connection', 'keep-alive', 'proxy-connection', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer',
  'transfer-encoding', 'upgrade', 'http2-settings',
]);
const CONNECT_TIMEOUT_MS = 30_000;

function isIdentityHeader(k: string, names: IdentityHeaderNames): boolean {
  return k === names.user.toLowerCase() || k === names.group.toLowerCase() || k.startsWith(names.extraPrefix.toLowerCase())
    || k === 'x-remote-user' || k === 'x-remote-group' || k.startsWith('x-remote-extra-');
}

function hostPort(t: BackendTarget): string {
  return `${t.host.includes(':') ? `[${t.host}]` : t.host}:${t.port}`;
}

/** The headers sent to the backend for `req` on behalf of ctx.user. */
export function backendHeaders(ctx: RequestContext, req: ApiRequest, target: BackendTarget, names: IdentityHeaderNames, upgrade = false): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(req.headers)) {
    if (v === undefined || k.startsWith(':') || k === 'host' || k === 'authorization' || k.startsWith('impersonate-')) continue;
    // An upgrade keeps what asks for it (Connection: Upgrade, Upgrade: websocket).
    if (HOP_BY_HOP.has(k) && !(upgrade && (k === 'connection' || k === 'upgrade'))) continue;
    if (isIdentityHeader(k, names)) continue;
    out[k] = v;
  }
  const client = req.socket?.remoteAddress;
  if (client) out['x-forwarded-for'] = req.headers['x-forwarded-for'] ? `${String(req.headers['x-forwarded-for'])}, ${client}` : client;
  out['host'] = hostPort(target);
  return { ...out, ...identityHeaders(ctx.user, names) };
}

/** Proxies the request to `target`; resolves once the answer has been passed on (or the caller left). */
export function proxyToBackend(ctx: RequestContext, req: ApiRequest, res: ApiResponse, agent: https.Agent,
  target: BackendTarget, names: IdentityHeaderNames): Promise<void> {
  const method = String(req.method ?? 'GET').toUpperCase();
  const path = req.url ?? '/';
  return new Promise<void>((resolve, reject) => {
    const up = https.request({
      host: target.host, port: target.port, servername: isIp(target.serverName) ? undefined : target.serverName,
      method, path, agent, headers: backendHeaders(ctx, req, target, names),
    });
    let answered = false;
    const fail = (message: string): void => {
      if (answered) return;
      answered = true;
      clearTimeout(timer);
      reject(serviceUnavailable(message));
    };
    const timer = setTimeout(() => { up.destroy(); fail(`error trying to reach service: no connection within ${CONNECT_TIMEOUT_MS / 1000}s`); }, CONNECT_TIMEOUT_MS);
    up.on('socket', (sock) => {
      if (!sock.connecting) { clearTimeout(timer); return; }
      sock.once('secureConnect', () => clearTimeout(timer));
    });
    const onAbort = (): void => { up.destroy(); };
    ctx.signal.addEventListener('abort', onAbort, { once: true });
    up.on('close', () => ctx.signal.removeEventListener('abort', onAbort));
    up.on('error', (e) => fail(`error trying to reach service: ${e.message}`));
    up.on('response', (upRes) => {
      if (answered) { upRes.destroy(); return; }
      answered = true;
      clearTimeout(timer);
      res.statusCode = upRes.statusCode ?? 502;
      for (const [k, v] of Object.entries(upRes.headers)) {
        if (v === undefined || HOP_BY_HOP.has(k)) continue;
        res.setHeader(k, v);
      }
      if (method === 'HEAD') { upRes.resume(); res.end(); resolve(); return; }
      // Watches stream: each chunk goes out as it comes.
      if (typeof (res as { flushHeaders?: () => void }).flushHeaders === 'function') (res as { flushHeaders(): void }).flushHeaders();
      streamThrough(upRes, res, ctx.signal).then(resolve, resolve);
    });
    bodyStream(req).pipe(up);
  });
}

function isIp(s: string): boolean {
  return /^[\d.]+$/.test(s) || s.includes(':');
}

/**
 * An HTTP/1.1 upgrade (WebSocket watch, streaming subresources of the extension) proxied to
 * `target`: on the backend's 101 the two connections are spliced; any other answer is relayed
 * and both connections end.
 */
export async function proxyUpgradeToBackend(ctx: RequestContext, req: ApiRequest, socket: Duplex, head: Buffer, agent: https.Agent,
  target: BackendTarget, names: IdentityHeaderNames): Promise<void> {
  const method = String(req.method ?? 'GET').toUpperCase();
  let out;
  try {
    out = await requestUpgrade({
      url: `https://${hostPort(target)}${req.url ?? '/'}`, method, headers: backendHeaders(ctx, req, target, names, true),
      agent, timeoutMs: CONNECT_TIMEOUT_MS, signal: ctx.signal,
    });
  } catch (e) {
    throw serviceUnavailable(`error trying to reach service: ${e instanceof UpgradeError ? e.message : String(e)}`);
  }
  if (out.kind === 'response') { await relayResponse(socket, out.res); return; }
  writeResponseHead(socket, 101, 'Switching Protocols', headerPairs(out.res));
  await splice(socket, head, out.socket, out.head);
}

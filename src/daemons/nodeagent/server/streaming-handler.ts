/**
 * The agent's streaming endpoints (the paths the API server proxies pods/exec, pods/attach and
 * pods/portforward to):
 *
 *   /exec/<ns>/<pod>[/<uid>]/<container>?command=..&input=1&output=1&error=1&tty=1
 *   /attach/<ns>/<pod>[/<uid>]/<container>?input=..&output=..&error=..&tty=..
 *   /portForward/<ns>/<pod>[/<uid>][?port=N...]
 *   /run/<ns>/<pod>[/<uid>]/<container>?cmd=...   (POST, not upgraded: runs to completion)
 *
 * Each upgrade asks the runtime (CRI Exec/Attach/PortForward) for a single-use streaming URL,
 * then, by what the client asked for:
 *   SPDY/3.1 upgrade              → the connection is spliced to the runtime's SPDY server as is;
 *   WebSocket channel protocol    → terminated here and bridged to SPDY (remote-command.ts,
 *                                   port-forward.ts: v5's stdin close needs SPDY towards the runtime);
 *   WebSocket SPDY tunnel (port-forward, kubectl 1.31+) → unwrapped onto a SPDY connection.
 * Errors before the switch are answered as HTTP Status replies.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { headerPairs, relayResponse, requestUpgrade, splice, UpgradeError, writeResponseHead } from '../../../util/upgrade-proxy.js';
import type { PodManager } from '../pod-manager.js';
import type { RuntimeBackend } from '../runtime/runtime.js';
import { bridgePortChannels, openPortStreams, spliceWebSocket, TUNNEL_PROTOCOL } from '../streaming/port-forward.js';
import { bridgeRemoteCommand, openRemoteStreams, type StreamOptions } from '../streaming/remote-command.js';
import { dialRuntimeSpdy, PORT_FORWARD_PROTOCOL, REMOTE_COMMAND_PROTOCOLS, StreamDialError, upgradeToRuntime } from '../streaming/runtime-dial.js';
import { acceptWebSocket, ChannelConnection, chooseChannelProtocol, isWebSocketUpgrade, offeredProtocols } from '../streaming/ws-channels.js';
import { sendStatus } from './respond.js';

export interface StreamingContext {
  readonly pods: PodManager;
  readonly runtime: RuntimeBackend;
  readonly log: Logger;
  /** Milliseconds for reaching the runtime's streaming server. */
  readonly dialTimeoutMs: number;
  /** --streaming-connection-idle-timeout in milliseconds; 0: no limit. */
  readonly idleTimeoutMs: number;
}

/**
 * After the switch: no bytes either way for the idle time closes the client's connection (and,
 * spliced or bridged, the runtime side with it). Armed only now because the WebSocket library
 * clears socket timeouts while accepting.
 */
function armIdle(socket: Duplex, ctx: StreamingContext): void {
  const s = socket as Duplex & { setTimeout?: (ms: number, cb: () => void) => void };
  if (ctx.idleTimeoutMs > 0 && typeof s.setTimeout === 'function') {
    s.setTimeout(ctx.idleTimeoutMs, () => { ctx.log.debug('streaming connection idle: closed'); socket.destroy(); });
  }
}

export const STREAMING_PATHS = new Set(['exec', 'attach', 'portForward', 'run']);

class HttpFailure extends Error {
  constructor(readonly code: number, readonly reason: string, message: string) { super(message); }
}

const REASONS: Record<number, string> = { 400: 'Bad Request', 403: 'Forbidden', 404: 'Not Found', 500: 'Internal Server Error', 504: 'Gateway Timeout' };

function failSocket(socket: Duplex, e: HttpFailure): void {
  const body = Buffer.from(JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: e.message, reason: e.reason, code: e.code }));
  writeResponseHead(socket, e.code, REASONS[e.code] ?? 'Error', [['Content-Type', 'application/json'], ['Content-Length', String(body.length)], ['Connection', 'close']]);
  socket.end(body);
}

function flag(q: URLSearchParams, ...names: string[]): boolean {
  return names.some((n) => { const v = q.get(n); return v !== null && (v === '' || v === '1' || v.toLowerCase() === 'true'); });
}

interface Target { ns: string; pod: string; container: string }

/** Splits `<ns>/<pod>[/<uid>]/<container>` (container optional for portForward). */
function target(kind: string, rest: string[]): Target {
  const withContainer = kind !== 'portForward';
  const [ns, pod] = rest;
  const container = withContainer ? rest[rest.length - 1] : '';
  const okLength = withContainer ? rest.length === 3 || rest.length === 4 : rest.length === 2 || rest.length === 3;
  if (!ns || !pod || !okLength || (withContainer && !container)) {
    throw new HttpFailure(400, 'BadRequest', withContainer ? `path must be /${kind}/<namespace>/<pod>/<container>` : '/portForward/<namespace>/<pod>');
  }
  return { ns, pod, container: container ?? '' };
}

function worker(ctx: StreamingContext, t: Target): NonNullable<ReturnType<PodManager['findPod']>> {
  const w = ctx.pods.findPod(t.ns, t.pod);
  if (!w) throw new HttpFailure(404, 'NotFound', `pod "${t.pod}" in namespace "${t.ns}" not found`);
  return w;
}

function containerId(ctx: StreamingContext, t: Target): string {
  const id = worker(ctx, t).containerId(t.container);
  if (!id) throw new HttpFailure(400, 'BadRequest', `container "${t.container}" in pod "${t.pod}" is not running`);
  return id;
}

function runtimeFailure(e: unknown): HttpFailure {
  if (e instanceof HttpFailure) return e;
  if (e instanceof StreamDialError) return new HttpFailure(e.code, e.code === 504 ? 'Timeout' : 'InternalError', e.message);
  return new HttpFailure(500, 'InternalError', (e as Error).message);
}

function streamOptions(q: URLSearchParams): StreamOptions {
  const tty = flag(q, 'tty');
  return { stdin: flag(q, 'input', 'stdin'), stdout: flag(q, 'output', 'stdout'), stderr: flag(q, 'error', 'stderr') && !tty, tty };
}

/** Splices a client's SPDY upgrade onto the runtime's streaming URL. */
async function proxySpdy(req: IncomingMessage, socket: Duplex, head: Buffer, url: string, ctx: StreamingContext): Promise<void> {
  const versions = req.headers['x-stream-protocol-version'];
  const out = await requestUpgrade({
    url, method: 'POST', timeoutMs: ctx.dialTimeoutMs,
    headers: { connection: 'Upgrade', upgrade: 'SPDY/3.1', 'content-length': '0', ...(versions ? { 'x-stream-protocol-version': versions } : {}) },
  }).catch((e: unknown) => { throw new HttpFailure(e instanceof UpgradeError && e.timeout ? 504 : 500, 'InternalError', `error dialing the runtime's streaming server: ${(e as Error).message}`); });
  if (out.kind === 'response') { await relayResponse(socket, out.res); return; }
  writeResponseHead(socket, 101, 'Switching Protocols', headerPairs(out.res));
  armIdle(socket, ctx);
  await splice(socket, head, out.socket, out.head);
}

async function serveRemoteCommand(kind: 'exec' | 'attach', req: IncomingMessage, socket: Duplex, head: Buffer, t: Target, q: URLSearchParams, ctx: StreamingContext): Promise<void> {
  const o = streamOptions(q);
  const cmd = q.getAll('command');
  if (kind === 'exec' && cmd.length === 0) throw new HttpFailure(400, 'BadRequest', 'you must specify at least one command for the container');
  if (!o.stdin && !o.stdout && !o.stderr) throw new HttpFailure(400, 'BadRequest', 'you must specify at least one of stdin, stdout, stderr');
  const ws = isWebSocketUpgrade(req);
  const chosen = ws ? chooseChannelProtocol(offeredProtocols(req)) : undefined;
  if (ws && !chosen) throw new HttpFailure(400, 'BadRequest', `requested protocol(s) are not supported: [${offeredProtocols(req).join(' ')}]`);
  const id = containerId(ctx, t);
  const req0 = { containerId: id, tty: o.tty, stdin: o.stdin, stdout: o.stdout, stderr: o.stderr };
  const url = kind === 'exec' ? await ctx.runtime.exec({ ...req0, cmd }) : await ctx.runtime.attach(req0);
  if (!ws || !chosen) { await proxySpdy(req, socket, head, url, ctx); return; }
  const { session } = await dialRuntimeSpdy(url, REMOTE_COMMAND_PROTOCOLS, ctx.dialTimeoutMs, ctx.log);
  let streams;
  try {
    streams = await openRemoteStreams(session, o);
  } catch (e) {
    session.destroy();
    throw new HttpFailure(500, 'InternalError', `error opening ${kind} streams to the runtime: ${(e as Error).message}`);
  }
  const sock = await acceptWebSocket(req, socket, head, offeredProtocols(req).length > 0 ? chosen.name : '');
  armIdle(socket, ctx);
  await bridgeRemoteCommand(new ChannelConnection(sock, chosen), chosen.version, session, streams, ctx.log);
}

function requestedPorts(q: URLSearchParams): number[] {
  const raw = [...q.getAll('port'), ...q.getAll('ports')].flatMap((v) => v.split(','));
  const ports = raw.map((v) => Number(v.trim()));
  const bad = raw.find((_, i) => !Number.isInteger(ports[i]) || ports[i]! < 1 || ports[i]! > 65535);
  if (bad !== undefined) throw new HttpFailure(400, 'BadRequest', `invalid port "${bad}"`);
  return ports;
}

async function servePortForward(req: IncomingMessage, socket: Duplex, head: Buffer, t: Target, q: URLSearchParams, ctx: StreamingContext): Promise<void> {
  const w = worker(ctx, t);
  const sandbox = w.sandboxId();
  if (!sandbox) throw new HttpFailure(400, 'BadRequest', `pod "${t.pod}" has no running sandbox`);
  const ws = isWebSocketUpgrade(req);
  const offered = ws ? offeredProtocols(req) : [];
  const ports = requestedPorts(q);
  const url = await ctx.runtime.portForward(sandbox, ports);
  if (!ws) { await proxySpdy(req, socket, head, url, ctx); return; }
  if (offered.includes(TUNNEL_PROTOCOL)) {
    const up = await upgradeToRuntime(url, [PORT_FORWARD_PROTOCOL], ctx.dialTimeoutMs);
    const sock = await acceptWebSocket(req, socket, head, TUNNEL_PROTOCOL);
    armIdle(socket, ctx);
    if (up.head.length > 0) sock.send(up.head, { binary: true });
    await spliceWebSocket(sock, up.socket);
    return;
  }
  const chosen = chooseChannelProtocol(offered);
  if (!chosen || chosen.version < 4) throw new HttpFailure(400, 'BadRequest', `requested protocol(s) are not supported: [${offered.join(' ')}]`);
  if (ports.length === 0) throw new HttpFailure(400, 'BadRequest', 'at least one port must be given with ?port=');
  const { session } = await dialRuntimeSpdy(url, [PORT_FORWARD_PROTOCOL], ctx.dialTimeoutMs, ctx.log);
  let streams;
  try {
    streams = await openPortStreams(session, ports);
  } catch (e) {
    session.destroy();
    throw new HttpFailure(500, 'InternalError', `error opening port-forward streams to the runtime: ${(e as Error).message}`);
  }
  const sock = await acceptWebSocket(req, socket, head, chosen.name);
  armIdle(socket, ctx);
  await bridgePortChannels(new ChannelConnection(sock, chosen), session, streams, ctx.log);
}

/** An upgrade request to one of STREAMING_PATHS (already authenticated and authorized). */
export async function serveStreamingUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, kind: string, rest: string[], q: URLSearchParams, ctx: StreamingContext): Promise<void> {
  try {
    if (kind !== 'exec' && kind !== 'attach' && kind !== 'portForward') throw new HttpFailure(400, 'BadRequest', `/${kind} cannot be upgraded`);
    const t = target(kind, rest);
    if (kind === 'portForward') await servePortForward(req, socket, head, t, q, ctx);
    else await serveRemoteCommand(kind, req, socket, head, t, q, ctx);
  } catch (e) {
    const f = runtimeFailure(e);
    ctx.log.debug({ err: f.message, path: req.url }, 'streaming request failed');
    if (!socket.destroyed && socket.writable) failSocket(socket, f);
  }
}

/** Plain (not upgraded) requests to the streaming paths: /run, and 400 for the others. */
export async function serveStreamingRequest(req: IncomingMessage, res: ServerResponse, kind: string, rest: string[], q: URLSearchParams, ctx: StreamingContext): Promise<void> {
  try {
    if (kind !== 'run') throw new HttpFailure(400, 'BadRequest', 'Upgrade request required');
    if ((req.method ?? 'GET') !== 'POST') throw new HttpFailure(405, 'MethodNotAllowed', '/run takes POST');
    const t = target('run', rest);
    const cmd = (q.get('cmd') ?? '').split(' ').filter(Boolean);
    if (cmd.length === 0) throw new HttpFailure(400, 'BadRequest', 'cmd is required');
    const r = await ctx.runtime.execSync(containerId(ctx, t), cmd, 0);
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(Buffer.concat([r.stdout, r.stderr]));
  } catch (e) {
    const f = runtimeFailure(e);
    if (!res.headersSent) sendStatus(res, f.code, f.reason, f.message);
    else res.destroy();
  }
}


/**
 * The fake runtime's streaming server: what containerd's is for CRI Exec/Attach/PortForward,
 * for simulated containers. Each URL is single-use (`/<kind>/<token>`), served over SPDY/3.1
 * with the remote-command protocols v4..v1 (`portforward.k8s.io` for port-forward), as a
 * runtime's server is (the node agent always talks SPDY to runtimes). Started on first use, on
 * 127.0.0.1 and a free port.
 *
 * The session waits for the streams the request implies (error, then stdin/stdout/stderr/resize
 * as asked), runs the handler, writes the v4 Status on the error stream and closes.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { randomBytes } from 'node:crypto';
import type { Duplex } from 'node:stream';
import { pino, type Logger } from 'pino';
import { SpdySession, type SpdyStream } from '../../../../util/spdy/session.js';
import { writeResponseHead } from '../../../../util/upgrade-proxy.js';

const REMOTE_COMMAND = ['v4.channel.k8s.io', 'v3.channel.k8s.io', 'v2.channel.k8s.io', 'channel.k8s.io'];
const PORT_FORWARD = ['portforward.k8s.io'];
/** Unused URLs expire like containerd's (its cache keeps tokens for a minute). */
const TOKEN_TTL_MS = 60_000;

export type StreamSet = ReadonlyMap<string, SpdyStream>;

export interface StreamHandlerResult { readonly exitCode: number; readonly message?: string }

export interface PendingStream {
  readonly kind: 'exec' | 'attach' | 'portforward';
  /** Stream types to wait for besides `error` (remote command only). */
  readonly expected: readonly string[];
  /** Remote command: runs with the streams; its result becomes the Status. */
  readonly run?: (streams: StreamSet, signal: AbortSignal) => Promise<StreamHandlerResult>;
  /** Port-forward: called for each stream pair member as it arrives. */
  readonly onPortStream?: (stream: SpdyStream) => void;
}

export function statusFor(r: StreamHandlerResult): string {
  if (r.exitCode === 0 && !r.message) return JSON.stringify({ metadata: {}, status: 'Success' });
  if (r.message && r.exitCode < 0) return JSON.stringify({ metadata: {}, status: 'Failure', message: r.message, reason: 'InternalError', code: 500 });
  return JSON.stringify({
    metadata: {}, status: 'Failure', reason: 'NonZeroExitCode',
    message: `command terminated with non-zero exit code: exit status ${r.exitCode}`,
    details: { causes: [{ reason: 'ExitCode', message: String(r.exitCode) }] },
  });
}

export class FakeStreamServer {
  private server: Server | undefined;
  private base: Promise<string> | undefined;
  private readonly pending = new Map<string, { p: PendingStream; timer: NodeJS.Timeout }>();
  private readonly sockets = new Set<Duplex>();
  private readonly log: Logger;

  constructor(log?: Logger) { this.log = log ?? pino({ level: 'silent' }); }

  /** Registers a request; resolves with its single-use URL. */
  async register(p: PendingStream): Promise<string> {
    const base = await this.start();
    const token = randomBytes(6).toString('hex');
    const timer = setTimeout(() => this.pending.delete(token), TOKEN_TTL_MS);
    timer.unref();
    this.pending.set(token, { p, timer });
    return `${base}/${p.kind}/${token}`;
  }

  async close(): Promise<void> {
    for (const { timer } of this.pending.values()) clearTimeout(timer);
    this.pending.clear();
    for (const s of this.sockets) s.destroy();
    const srv = this.server;
    this.server = undefined;
    if (srv) await new Promise<void>((r) => { srv.close(() => r()); srv.closeAllConnections(); });
  }

  private start(): Promise<string> {
    this.base ??= new Promise<string>((resolve, reject) => {
      const srv = createServer((_req, res) => { res.writeHead(400, { 'content-type': 'text/plain' }); res.end('streaming requests must be upgraded to SPDY/3.1\n'); });
      srv.on('upgrade', (req, socket, head) => this.upgrade(req, socket, head));
      srv.once('error', reject);
      srv.listen(0, '127.0.0.1', () => {
        this.server = srv;
        resolve(`http://127.0.0.1:${(srv.address() as { port: number }).port}`);
      });
    });
    return this.base;
  }

  private refuse(socket: Duplex, code: number, text: string, extra: Array<[string, string]> = []): void {
    writeResponseHead(socket, code, code === 404 ? 'Not Found' : code === 403 ? 'Forbidden' : 'Bad Request', [['Content-Type', 'text/plain'], ['Content-Length', String(Buffer.byteLength(text))], ['Connection', 'close'], ...extra]);
    socket.end(text);
  }

  private upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', () => undefined);
    const [, kind, token] = (req.url ?? '').split('?')[0]!.split('/');
    const entry = token ? this.pending.get(token) : undefined;
    if (!entry || entry.p.kind !== kind) { this.refuse(socket, 404, 'unknown or used streaming URL\n'); return; }
    this.pending.delete(token!);
    clearTimeout(entry.timer);
    if (String(req.headers.upgrade ?? '').toLowerCase() !== 'spdy/3.1') { this.refuse(socket, 400, 'this streaming server speaks SPDY/3.1 only\n'); return; }
    const supported = entry.p.kind === 'portforward' ? PORT_FORWARD : REMOTE_COMMAND;
    const offered = String(req.headers['x-stream-protocol-version'] ?? '').split(',').map((s) => s.trim()).filter(Boolean);
    const chosen = offered.find((o) => supported.includes(o));
    if (!chosen) { this.refuse(socket, 403, 'no common stream protocol\n', [['X-Accepted-Stream-Protocol-Versions', supported.join(', ')]]); return; }
    writeResponseHead(socket, 101, 'Switching Protocols', [['Connection', 'Upgrade'], ['Upgrade', 'SPDY/3.1'], ['X-Stream-Protocol-Version', chosen]]);
    if (head.length > 0) socket.unshift(head);
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
    if (entry.p.kind === 'portforward') {
      new SpdySession(socket, { client: false, log: this.log, onStream: (s) => { void s.reply().then(() => entry.p.onPortStream?.(s)); } });
      return;
    }
    this.serveRemoteCommand(socket, entry.p);
  }

  private serveRemoteCommand(socket: Duplex, p: PendingStream): void {
    const streams = new Map<string, SpdyStream>();
    const ac = new AbortController();
    let started = false;
    const session = new SpdySession(socket, {
      client: false, log: this.log,
      onStream: (s) => {
        void s.reply().then(() => {
          streams.set(s.header('streamtype') ?? '', s);
          if (started || !streams.has('error') || !p.expected.every((e) => streams.has(e))) return;
          started = true;
          void this.runCommand(session, streams, p, ac.signal);
        });
      },
    });
    void session.closed.then(() => ac.abort());
  }

  private async runCommand(session: SpdySession, streams: Map<string, SpdyStream>, p: PendingStream, signal: AbortSignal): Promise<void> {
    let result: StreamHandlerResult;
    try {
      result = p.run ? await p.run(streams, signal) : { exitCode: 0 };
    } catch (e) {
      result = { exitCode: -1, message: (e as Error).message };
    }
    const error = streams.get('error')!;
    for (const [type, s] of streams) if (type !== 'error' && type !== 'stdin' && type !== 'resize') s.end();
    // Once the Status is out, the connection closes, as Go's server does.
    error.end(statusFor(result), () => session.close());
  }
}

/**
 * HTTP/2 to one API server: one session, reused by every request and reconnected on demand
 * after GOAWAY, close or error. TLS (CA, client certificate, server name, skip-verify) and
 * credentials (bearer token, basic auth) come from the ClientConnection.
 *
 * Several API servers (ClientConnection.servers): requests go to one at a time. A connection
 * that fails, a stream that breaks, or a 5xx the caller reports (failover()) moves the client
 * to the next server; after `failbackMs` on another server it tries the first again (fail
 * back), as k3s's agent load balancer prefers its configured server. Sessions left behind are
 * closed gently: their running streams (watches) finish, and the caller resumes them.
 *
 * Contract: the session holds the event loop open only while requests are in flight; a request
 * reports whether it may have reached the server (`sent`), so the caller knows whether a
 * retry could apply a non-idempotent request twice.
 */
import * as http2 from 'node:http2';
import type { Readable } from 'node:stream';
import { adoptStreamTable } from '../util/h2-stream-table.js';
import type { ClientConnection } from './coreconfig.js';

export interface TransportRequest {
  method: string;
  /** Path and query, starting with '/'. */
  path: string;
  headers?: Record<string, string>;
  body?: Buffer;
  signal?: AbortSignal;
}

export interface TransportResponse {
  status: number;
  headers: Record<string, string>;
  /** The body, streamed; consume it or call close(). */
  body: Readable;
  close(): void;
  /** The API server that answered. */
  server: string;
}

/** A network failure; `sent` tells whether the request may have reached the server. */
export class TransportError extends Error {
  override readonly name = 'TransportError';
  constructor(message: string, readonly sent: boolean, options?: { cause?: unknown }) {
    super(message, options);
  }
}

export interface TransportOptions {
  /** While requests are in flight, ping the server this often (ms); 0 disables. @default 30000 */
  pingIntervalMs?: number;
  /** A ping unanswered for this long (ms) closes the session. @default 15000 */
  pingTimeoutMs?: number;
  /** With several servers: after this long (ms) away from the first, try it again. @default 30000 */
  failbackMs?: number;
}

export class Http2Transport {
  private session: http2.ClientHttp2Session | undefined;
  private closed = false;
  private readonly sessions = new Set<http2.ClientHttp2Session>();
  private readonly states = new WeakMap<http2.ClientHttp2Session, { active: number; pinger?: NodeJS.Timeout }>();
  private readonly pingIntervalMs: number;
  private readonly pingTimeoutMs: number;

  private conn: ClientConnection;
  private readonly urls: string[];
  private index = 0;
  private failedOverAt = 0;
  private readonly failbackMs: number;
  private readonly urlOf = new WeakMap<http2.ClientHttp2Session, string>();

  constructor(conn: ClientConnection, opts: TransportOptions = {}) {
    // A copy: a credential swap (updateClientCertificate) must not change the caller's object.
    this.conn = { ...conn };
    this.urls = conn.servers && conn.servers.length > 1 ? [...conn.servers] : [conn.server];
    this.pingIntervalMs = opts.pingIntervalMs ?? 30_000;
    this.pingTimeoutMs = opts.pingTimeoutMs ?? 15_000;
    this.failbackMs = opts.failbackMs ?? 30_000;
  }

  /** The API server requests go to now. */
  get server(): string { return this.urls[this.index]!; }

  /** Every API server this transport may use, in order. */
  get servers(): readonly string[] { return this.urls; }

  /**
   * `url` failed (connection, broken stream, 5xx): later requests go to the next server. A
   * report about a server already left behind changes nothing, so many streams breaking at
   * once move the client one step.
   */
  failover(url: string): void {
    if (this.urls.length < 2 || url !== this.urls[this.index]) return;
    this.index = (this.index + 1) % this.urls.length;
    this.failedOverAt = Date.now();
    this.retire();
  }

  /** Stops sending new requests on the current session; its streams finish on it. */
  private retire(): void {
    const old = this.session;
    this.session = undefined;
    if (old && !old.closed && !old.destroyed) old.close();
  }

  /**
   * Swaps the client certificate (certificate rotation, without a restart): connections opened
   * from now on present the new pair. The open sessions take no new streams — their streams,
   * watches included, finish on them — and are destroyed after `retireMs`, so that no request
   * goes on with the old certificate for long (Kubernetes closes them at once; letting running
   * requests finish spares the retries).
   */
  updateClientCertificate(cert: Buffer, key: Buffer, retireMs = 60_000): void {
    this.conn = { ...this.conn, cert, key };
    const old = [...this.sessions];
    this.session = undefined;
    for (const s of old) {
      if (!s.closed) s.close();
      const t = setTimeout(() => { if (!s.destroyed) s.destroy(); }, retireMs);
      t.unref();
      s.once('close', () => clearTimeout(t));
    }
  }

  private authorization(): string | undefined {
    if (this.conn.token) return `Bearer ${this.conn.token}`;
    if (this.conn.username !== undefined) return `Basic ${Buffer.from(`${this.conn.username}:${this.conn.password ?? ''}`).toString('base64')}`;
    return undefined;
  }

  private getSession(): http2.ClientHttp2Session {
    if (this.index !== 0 && Date.now() - this.failedOverAt > this.failbackMs) {
      this.index = 0; // fail back; should the first still be down, its failure moves us on again
      this.failedOverAt = Date.now();
      this.retire();
    }
    const s = this.session;
    if (s && !s.closed && !s.destroyed) return s;
    const opts: http2.SecureClientSessionOptions = {};
    if (this.conn.ca) opts.ca = this.conn.ca;
    if (this.conn.cert) opts.cert = this.conn.cert;
    if (this.conn.key) opts.key = this.conn.key;
    if (this.conn.insecureSkipTlsVerify) opts.rejectUnauthorized = false;
    if (this.conn.tlsServerName) opts.servername = this.conn.tlsServerName;
    const url = this.server;
    const session = http2.connect(url, opts);
    this.urlOf.set(session, url);
    adoptStreamTable(session); // fewer finished streams promoted by young GCs (h2-stream-table.ts)
    const forget = (): void => { if (this.session === session) this.session = undefined; };
    this.sessions.add(session);
    // A GOAWAY lets in-flight streams finish but takes no new ones: new requests reconnect,
    // and the old session closes once its streams are done.
    session.on('goaway', () => { forget(); if (!session.closed) session.close(); });
    session.on('close', () => { forget(); this.sessions.delete(session); });
    session.on('error', () => { forget(); this.failover(url); });
    session.unref();
    this.session = session;
    return session;
  }

  /**
   * Keeps a session referenced (holding the event loop open) only while it has streams, and
   * while it has them, PINGs the server: a connection that died silently (no FIN, no RST)
   * would otherwise leave watches hanging forever.
   */
  private hold(session: http2.ClientHttp2Session): () => void {
    let st = this.states.get(session);
    if (!st) { st = { active: 0 }; this.states.set(session, st); }
    const state = st;
    if (state.active++ === 0) {
      session.ref();
      if (this.pingIntervalMs > 0) {
        state.pinger = setInterval(() => {
          if (session.destroyed || session.closed) return;
          const timer = setTimeout(() => session.destroy(new Error('the API server did not answer a ping')), this.pingTimeoutMs);
          timer.unref();
          try {
            session.ping((err) => { clearTimeout(timer); if (err && !session.destroyed) session.destroy(err); });
          } catch {
            clearTimeout(timer);
          }
        }, this.pingIntervalMs);
        state.pinger.unref();
      }
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (--state.active === 0) {
        if (state.pinger) clearInterval(state.pinger);
        state.pinger = undefined;
        if (!session.destroyed) session.unref();
      }
    };
  }

  /** Sends a request and resolves once the response headers arrive. */
  request(req: TransportRequest): Promise<TransportResponse> {
    if (this.closed) return Promise.reject(new TransportError('client is closed', false));
    const signal = req.signal;
    if (signal?.aborted) return Promise.reject(signal.reason ?? new Error('aborted'));
    return new Promise((resolvePromise, rejectPromise) => {
      let session: http2.ClientHttp2Session;
      try {
        session = this.getSession();
      } catch (e) {
        rejectPromise(new TransportError(`cannot connect to ${this.server}: ${(e as Error).message}`, false, { cause: e }));
        return;
      }
      const release = this.hold(session);
      const url = this.urlOf.get(session) ?? this.server;
      const headers: http2.OutgoingHttpHeaders = { ':method': req.method, ':path': req.path, ...req.headers };
      const auth = this.authorization();
      if (auth) headers.authorization = auth;
      if (req.body) headers['content-length'] = String(req.body.length);
      let stream: http2.ClientHttp2Stream;
      try {
        stream = session.request(headers, { endStream: !req.body });
      } catch (e) {
        release();
        this.session = undefined;
        this.failover(url);
        rejectPromise(new TransportError(`request to ${url} failed: ${(e as Error).message}`, false, { cause: e }));
        return;
      }
      let sent = false;
      let settled = false;
      stream.once('ready', () => { sent = true; });
      const onAbort = (): void => {
        stream.close(http2.constants.NGHTTP2_CANCEL);
        if (!settled) { settled = true; rejectPromise(signal?.reason ?? new Error('aborted')); }
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      const cleanup = (): void => {
        signal?.removeEventListener('abort', onAbort);
        release();
        if (!settled) {
          settled = true;
          this.failover(url);
          rejectPromise(new TransportError(`request to ${url} failed: stream closed without a response`, sent));
        }
      };
      stream.once('close', cleanup);
      stream.on('error', (e: Error) => {
        if (settled) return;
        settled = true;
        const code = (e as NodeJS.ErrnoException).code ?? '';
        // A refused stream was never processed by the server.
        const neverSent = !sent || code === 'ERR_HTTP2_STREAM_CANCEL' && stream.rstCode === http2.constants.NGHTTP2_REFUSED_STREAM;
        this.failover(url);
        rejectPromise(new TransportError(`request to ${url} failed: ${e.message}`, !neverSent, { cause: e }));
      });
      stream.once('response', (h) => {
        if (settled) return;
        settled = true;
        const out: Record<string, string> = {};
        for (const [k, v] of Object.entries(h)) {
          if (k.startsWith(':') || v === undefined) continue;
          out[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : String(v);
        }
        resolvePromise({
          status: Number(h[':status']),
          headers: out,
          body: stream,
          server: url,
          close: () => { if (!stream.closed) stream.close(http2.constants.NGHTTP2_CANCEL); },
        });
      });
      if (req.body) stream.end(req.body);
    });
  }

  /** Closes the session; later requests fail. */
  close(): void {
    this.closed = true;
    this.session = undefined;
    for (const s of this.sessions) if (!s.destroyed) s.destroy();
    this.sessions.clear();
  }
}

/** Reads a whole body, failing if the signal aborts. */
export async function readBody(body: Readable, limit = 256 * 1024 * 1024): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const c of body) {
    const b = c as Buffer;
    n += b.length;
    if (n > limit) throw new Error(`response body exceeds ${limit} bytes`);
    chunks.push(b);
  }
  return Buffer.concat(chunks, n);
}

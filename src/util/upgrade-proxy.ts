/**
 * HTTP/1.1 connection upgrades as a client and as a proxy: send an upgrade request to a backend
 * (the node agent, or a runtime's streaming server), then either splice the two connections
 * together (101) or relay the backend's answer and close (anything else).
 *
 * Security (CVE-2018-1002105 class): a proxy must never leave a client connected to a backend
 * that did NOT switch protocols — the client could send further requests over a connection the
 * proxy authenticated with its own, stronger credentials. relayResponse() therefore always ends
 * both connections, and callers forward only headers they chose (never Authorization).
 */
import * as http from 'node:http';
import * as https from 'node:https';
import type { Duplex } from 'node:stream';

export type UpgradeOutcome =
  | { readonly kind: 'upgraded'; readonly res: http.IncomingMessage; readonly socket: Duplex; readonly head: Buffer }
  | { readonly kind: 'response'; readonly res: http.IncomingMessage };

export interface UpgradeRequest {
  readonly url: string;
  readonly method: string;
  readonly headers: http.OutgoingHttpHeaders;
  /** The agent carrying TLS settings (client certificate, CA); a fresh connection is used either way. */
  readonly agent?: http.Agent;
  /** Milliseconds for connecting and receiving the response head. */
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
}

export class UpgradeError extends Error {
  constructor(message: string, readonly timeout = false) { super(message); }
}

/** Sends the request; resolves with the switched connection or the backend's plain answer. */
export function requestUpgrade(r: UpgradeRequest): Promise<UpgradeOutcome> {
  return new Promise((resolve, reject) => {
    const mod = r.url.startsWith('https:') ? https : http;
    const req = mod.request(r.url, { method: r.method, headers: r.headers, ...(r.agent ? { agent: r.agent } : {}) });
    let settled = false;
    const settle = (): boolean => {
      if (settled) return false;
      settled = true;
      clearTimeout(timer);
      r.signal?.removeEventListener('abort', onAbort);
      return true;
    };
    const timer = setTimeout(() => {
      if (!settle()) return;
      req.destroy();
      reject(new UpgradeError(`${r.method} "${r.url}": timeout awaiting response headers after ${r.timeoutMs}ms`, true));
    }, r.timeoutMs);
    const onAbort = (): void => {
      if (!settle()) return;
      req.destroy();
      reject(new UpgradeError(`${r.method} "${r.url}": context canceled`));
    };
    if (r.signal?.aborted) { onAbort(); return; }
    r.signal?.addEventListener('abort', onAbort, { once: true });
    req.on('upgrade', (res, socket, head) => {
      if (!settle()) { socket.destroy(); return; }
      resolve({ kind: 'upgraded', res, socket, head });
    });
    req.on('response', (res) => {
      if (!settle()) { res.destroy(); return; }
      resolve({ kind: 'response', res });
    });
    req.on('error', (e) => {
      if (!settle()) return;
      reject(new UpgradeError(`${r.method} "${r.url}": ${e.message}`));
    });
    req.end();
  });
}

/** Writes a raw HTTP/1.1 response head to an upgraded client socket. */
export function writeResponseHead(socket: Duplex, code: number, message: string, headers: Array<[string, string]>): void {
  const lines = [`HTTP/1.1 ${code} ${message}`, ...headers.map(([k, v]) => `${k}: ${v}`), '', ''];
  socket.write(lines.join('\r\n'));
}

/** The backend's response head as header pairs (repeated headers kept). */
export function headerPairs(res: http.IncomingMessage, skip: ReadonlySet<string> = new Set()): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) {
    const k = res.rawHeaders[i]!;
    if (!skip.has(k.toLowerCase())) out.push([k, res.rawHeaders[i + 1]!]);
  }
  return out;
}

const HOP_BY_HOP = new Set(['transfer-encoding', 'connection', 'keep-alive', 'content-length']);

/**
 * Relays a non-101 answer (status, headers, body up to `maxBody`) to the client and closes both
 * connections. The body is re-sent with its own length, without chunking.
 */
export async function relayResponse(client: Duplex, res: http.IncomingMessage, maxBody = 64 * 1024): Promise<void> {
  const body = await readSmallBody(res, maxBody);
  const headers = headerPairs(res, HOP_BY_HOP);
  headers.push(['Content-Length', String(body.length)], ['Connection', 'close']);
  writeResponseHead(client, res.statusCode ?? 502, res.statusMessage ?? '', headers);
  client.end(body);
}

/**
 * At most `max` bytes of a (non-streamed, error) body, or as much as came before the body was
 * cut off; the response is destroyed after.
 */
export async function readSmallBody(res: http.IncomingMessage, max = 64 * 1024): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let n = 0;
  try {
    for await (const c of res) {
      const b = c as Buffer;
      chunks.push(b.subarray(0, max - n));
      n += Math.min(b.length, max - n);
      if (n >= max) break;
    }
  } catch {
    // a cut-off body: what came is what there is
  } finally {
    res.destroy();
  }
  return Buffer.concat(chunks);
}

/** Joins two connections both ways; when either side closes or fails, both are closed. */
export function splice(a: Duplex, aPending: Buffer, b: Duplex, bPending: Buffer): Promise<void> {
  return new Promise((resolve) => {
    let done = false;
    const end = (): void => {
      if (done) return;
      done = true;
      a.destroy();
      b.destroy();
      resolve();
    };
    for (const s of [a, b]) {
      s.on('error', end);
      s.on('close', end);
    }
    if (aPending.length > 0) b.write(aPending);
    if (bPending.length > 0) a.write(bPending);
    a.pipe(b);
    b.pipe(a);
  });
}

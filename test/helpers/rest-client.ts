/**
 * A small HTTP/2 client for REST tests against startApiserver(): JSON requests, raw bodies,
 * and watch streams read line by line with deadlines. (Not a test file itself.)
 */
import { readFile } from 'node:fs/promises';
import * as http2 from 'node:http2';
import type { StartedApiserver } from './apiserver.js';

export interface Reply {
  status: number;
  headers: http2.IncomingHttpHeaders;
  body: Buffer;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json: any;
}

export interface RequestOptions {
  body?: unknown;
  raw?: Buffer | string;
  contentType?: string;
  accept?: string;
  headers?: Record<string, string>;
}

export interface LineStream {
  /** The next line, or undefined when the stream ended; rejects after the deadline. */
  next(timeoutMs?: number): Promise<string | undefined>;
  status(): Promise<number>;
  headers(): Promise<http2.IncomingHttpHeaders>;
  close(): void;
}

export interface RestClient {
  request(method: string, path: string, opts?: RequestOptions): Promise<Reply>;
  stream(path: string, accept?: string): LineStream;
  close(): void;
}

export async function connectClient(a: StartedApiserver): Promise<RestClient> {
  const [ca, cert, key] = await Promise.all([readFile(a.caFile), readFile(a.clientCertFile), readFile(a.clientKeyFile)]);
  const session = http2.connect(a.url, { ca, cert, key });
  session.on('error', () => undefined);
  return {
    request(method, path, opts = {}) {
      return new Promise<Reply>((resolve, reject) => {
        const headers: http2.OutgoingHttpHeaders = { ':method': method, ':path': path, accept: opts.accept ?? 'application/json', ...(opts.headers ?? {}) };
        let payload: Buffer | undefined;
        if (opts.raw !== undefined) payload = Buffer.isBuffer(opts.raw) ? opts.raw : Buffer.from(opts.raw);
        else if (opts.body !== undefined) payload = Buffer.from(JSON.stringify(opts.body));
        if (payload) headers['content-type'] = opts.contentType ?? 'application/json';
        const req = session.request(headers, { endStream: payload === undefined });
        req.setTimeout(20_000, () => { req.close(); reject(new Error(`timeout: ${method} ${path}`)); });
        const chunks: Buffer[] = [];
        let status = 0, rh: http2.IncomingHttpHeaders = {};
        req.on('response', (h) => { status = Number(h[':status']); rh = h; });
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          const body = Buffer.concat(chunks);
          let json: unknown;
          try { json = body.length ? JSON.parse(body.toString('utf8')) : undefined; } catch { json = undefined; }
          resolve({ status, headers: rh, body, json });
        });
        req.on('error', reject);
        req.end(payload);
      });
    },
    stream(path, accept = 'application/json') {
      const req = session.request({ ':method': 'GET', ':path': path, accept });
      const lines: string[] = [];
      let buf = '', ended = false;
      let wake: (() => void) | undefined;
      let resolveStatus!: (n: number) => void, resolveHeaders!: (h: http2.IncomingHttpHeaders) => void;
      const statusP = new Promise<number>((r) => { resolveStatus = r; });
      const headersP = new Promise<http2.IncomingHttpHeaders>((r) => { resolveHeaders = r; });
      req.on('response', (h) => { resolveStatus(Number(h[':status'])); resolveHeaders(h); });
      req.setEncoding('utf8');
      req.on('data', (c: string) => {
        buf += c;
        let nl;
        while ((nl = buf.indexOf('\n')) >= 0) { lines.push(buf.slice(0, nl)); buf = buf.slice(nl + 1); }
        wake?.();
      });
      const finish = (): void => { if (buf) { lines.push(buf); buf = ''; } ended = true; wake?.(); };
      req.on('end', finish);
      req.on('error', finish);
      req.on('close', finish);
      return {
        async next(timeoutMs = 10_000) {
          const deadline = Date.now() + timeoutMs;
          while (!lines.length && !ended) {
            const left = deadline - Date.now();
            if (left <= 0) throw new Error(`no watch line within ${timeoutMs} ms on ${path}`);
            await new Promise<void>((r) => { const tm = setTimeout(r, left); wake = () => { clearTimeout(tm); r(); }; });
            wake = undefined;
          }
          return lines.shift();
        },
        status: () => statusP,
        headers: () => headersP,
        close: () => { req.close(); },
      };
    },
    close() { session.close(); },
  };
}

/** Polls `fn` until it returns a truthy value or the deadline passes. */
export async function eventually<T>(fn: () => Promise<T | undefined | false>, timeoutMs = 10_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  let wait = 20;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error('condition not met before the deadline');
    await new Promise((r) => setTimeout(r, wait));
    wait = Math.min(wait * 2, 250);
  }
}

/**
 * The client of a webhook named by a coreconfig (token, authorization, image-policy and audit
 * webhooks): a keep-alive HTTP/1.1 agent with the connection's TLS (CA, client certificate,
 * server name, skip-verify), its credentials (bearer token, else basic auth), one JSON POST with
 * a time limit and a size-capped answer, and the bounded retry loop with backoff.
 *
 * Failures are CallErrors that say whether another try may help. Two retry rules, as the
 * callers had them: 'kubernetes' (Kubernetes' webhook rule: connection resets and timeouts;
 * 429, 500, 504 or an answer with Retry-After, which the next wait honours) and 'any-failure'
 * (every connection error and timeout, 429 and every 5xx). Credentials never enter a message.
 */
import * as http from 'node:http';
import * as https from 'node:https';
import type { ClientConnection } from './coreconfig.js';

export class CallError extends Error {
  constructor(message: string, readonly retry: boolean, readonly retryAfterMs?: number) { super(message); }
}

export interface PostJsonOptions<T> {
  /** Time limit of the call. */
  timeoutMs: number;
  /** Answer bytes kept; with `read`, a longer answer fails ('response too large'). */
  maxBytes: number;
  retryOn: 'kubernetes' | 'any-failure';
  /** Characters of a non-2xx answer's body quoted in its error (0: none). */
  quoteBody: number;
  /** The kind the answer should be, for "invalid <kind> response". */
  kind: string;
  /** Reads a 2xx answer's parsed JSON (throwing if it is not the kind); absent: the body is ignored. */
  read?: (doc: unknown) => T;
}

export interface RetryOptions {
  attempts: number;
  initialBackoffMs: number;
  /** Stops retrying (the caller is shutting down). */
  stop?: () => boolean;
  /** Waits between attempts (default a timer). */
  sleep?: (ms: number) => Promise<void>;
  onRetry?: (e: CallError, attempt: number) => void;
}

/** Calls `fn` until it succeeds, fails for good, or `attempts` calls failed; waits grow ×1.5 with 20 % jitter. */
export async function withRetries<T>(fn: () => Promise<T>, opts: RetryOptions): Promise<T> {
  const sleep = opts.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  let wait = opts.initialBackoffMs;
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (e) {
      if (!(e instanceof CallError) || !e.retry || attempt >= opts.attempts || opts.stop?.()) throw e;
      opts.onRetry?.(e, attempt);
      await sleep(Math.max(wait * (1 + Math.random() * 0.2), e.retryAfterMs ?? 0));
      wait *= 1.5;
    }
  }
}

export class WebhookClient {
  private readonly url: URL;
  private readonly agent: http.Agent;

  constructor(private readonly conn: ClientConnection) {
    this.url = new URL(conn.server);
    this.agent = this.url.protocol === 'https:'
      ? new https.Agent({
        keepAlive: true,
        ...(conn.ca ? { ca: conn.ca } : {}),
        ...(conn.cert && conn.key ? { cert: conn.cert, key: conn.key } : {}),
        ...(conn.tlsServerName ? { servername: conn.tlsServerName } : {}),
        rejectUnauthorized: !conn.insecureSkipTlsVerify,
      })
      : new http.Agent({ keepAlive: true });
  }

  close(): void {
    this.agent.destroy();
  }

  /** POSTs `doc` to the coreconfig's server URL (its exact path); resolves what `read` makes of the answer. */
  postJson<T = undefined>(doc: unknown, opts: PostJsonOptions<T>): Promise<T> {
    const body = Buffer.from(JSON.stringify(doc));
    const headers: http.OutgoingHttpHeaders = { 'content-type': 'application/json', accept: 'application/json', 'content-length': body.length };
    const conn = this.conn;
    if (conn.token) headers.authorization = `Bearer ${conn.token}`;
    else if (conn.username !== undefined) headers.authorization = `Basic ${Buffer.from(`${conn.username}:${conn.password ?? ''}`).toString('base64')}`;
    const lib = this.url.protocol === 'https:' ? https : http;
    const kubernetesRule = opts.retryOn === 'kubernetes';
    return new Promise<T>((resolve, reject) => {
      const req = lib.request(this.url, { method: 'POST', headers, agent: this.agent, timeout: opts.timeoutMs }, (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (d: Buffer) => {
          if (size + d.length > opts.maxBytes) {
            if (opts.read) { req.destroy(new CallError('response too large', false)); return; }
            size = opts.maxBytes;
            return;
          }
          size += d.length;
          chunks.push(d);
        });
        res.on('error', (e) => reject(new CallError(e.message, true)));
        res.on('end', () => {
          const code = res.statusCode ?? 0;
          const text = Buffer.concat(chunks).toString('utf8');
          if (code < 200 || code > 299) {
            let retry = code === 429 || code >= 500;
            let retryAfter: number | undefined;
            if (kubernetesRule) {
              const after = Number(res.headers['retry-after']);
              retryAfter = Number.isFinite(after) && after > 0 ? after * 1000 : undefined;
              retry = code === 429 || code === 500 || code === 504 || retryAfter !== undefined;
            }
            const quoted = opts.quoteBody > 0 ? `: ${text.slice(0, opts.quoteBody)}` : '';
            reject(new CallError(`the server responded with status ${code}${quoted}`, retry, retryAfter));
            return;
          }
          if (!opts.read) { resolve(undefined as T); return; }
          try {
            resolve(opts.read(JSON.parse(text)));
          } catch (e) {
            reject(new CallError(`invalid ${opts.kind} response: ${(e as Error).message}`, false));
          }
        });
      });
      req.on('timeout', () => req.destroy(new CallError(`no answer within ${opts.timeoutMs} ms`, true)));
      req.on('error', (e: NodeJS.ErrnoException) => reject(e instanceof CallError ? e
        : new CallError(`Post "${conn.server}": ${e.message}`, !kubernetesRule || e.code === 'ECONNRESET')));
      req.end(body);
    });
  }
}

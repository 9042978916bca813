/**
 * The webhook backend (`--audit-webhook-config-file`, a coreconfig naming the receiver):
 * events are POSTed as an audit.k8s.io/v1 EventList. A failed call (no connection, 429, 5xx)
 * is retried with exponential backoff as Kubernetes' webhook client: first wait
 * `--audit-webhook-initial-backoff`, each next wait ×1.5 (±20 % jitter), five attempts in all.
 * Events still undelivered then are counted in apiserver_audit_error_total{plugin="webhook"}.
 */
import * as http from 'node:http';
import * as https from 'node:https';
import type { Logger } from 'pino';
import type { ClientConnection } from '../../../client/coreconfig.js';
import type { AuditEvent } from './event.js';
import type { AuditBackend } from './format.js';

const ATTEMPTS = 5;
const FACTOR = 1.5;
const JITTER = 0.2;
const CALL_TIMEOUT_MS = 30_000;
const MAX_ERROR_BODY = 1024;

class CallError extends Error {
  constructor(message: string, readonly retry: boolean) { super(message); }
}

export class WebhookBackend implements AuditBackend {
  readonly name = 'webhook';
  private readonly url: URL;
  private readonly agent: http.Agent;
  private closed = false;
  private readonly sleeping = new Set<() => void>();

  constructor(
    private readonly conn: ClientConnection,
    private readonly initialBackoffMs: number,
    private readonly log: Logger,
    private readonly onError: (n: number) => void,
  ) {
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

  async process(events: AuditEvent[]): Promise<void> {
    const body = Buffer.from(JSON.stringify({ kind: 'EventList', apiVersion: 'audit.k8s.io/v1', metadata: {}, items: events }));
    let wait = this.initialBackoffMs;
    for (let attempt = 1; ; attempt++) {
      try {
        await this.call(body);
        return;
      } catch (e) {
        const err = e as Error;
        if (!(err instanceof CallError && err.retry) || attempt >= ATTEMPTS || this.closed) {
          this.onError(events.length);
          this.log.error({ err: err.message, events: events.length }, "Error in audit plugin 'webhook' affecting audit events");
          return;
        }
        this.log.debug({ err: err.message, attempt }, 'audit webhook call failed; retrying');
        await this.sleep(wait * (1 + JITTER * Math.random()));
        wait *= FACTOR;
      }
    }
  }

  async shutdown(): Promise<void> {
    this.closed = true;
    for (const wake of this.sleeping) wake();
    this.agent.destroy();
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => { clearTimeout(t); this.sleeping.delete(done); resolve(); };
      const t = setTimeout(done, ms);
      this.sleeping.add(done);
    });
  }

  private call(body: Buffer): Promise<void> {
    if (this.closed) return Promise.reject(new CallError('the audit webhook backend is shut down', false));
    const mod = this.url.protocol === 'https:' ? https : http;
    const headers: Record<string, string | number> = { 'Content-Type': 'application/json', Accept: 'application/json', 'Content-Length': body.length };
    if (this.conn.token) headers.Authorization = `Bearer ${this.conn.token}`;
    else if (this.conn.username !== undefined) headers.Authorization = `Basic ${Buffer.from(`${this.conn.username}:${this.conn.password ?? ''}`).toString('base64')}`;
    return new Promise((resolve, reject) => {
      const req = mod.request(this.url, { method: 'POST', agent: this.agent, headers, timeout: CALL_TIMEOUT_MS }, (res) => {
        const code = res.statusCode ?? 0;
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => { if (size < MAX_ERROR_BODY) { chunks.push(c); size += c.length; } });
        res.on('end', () => {
          if (code >= 200 && code < 300) return resolve();
          const text = Buffer.concat(chunks).toString('utf8').slice(0, MAX_ERROR_BODY);
          reject(new CallError(`the server answered ${code}: ${text}`, code === 429 || code >= 500));
        });
        res.on('error', (e) => reject(new CallError(e.message, true)));
      });
      req.on('timeout', () => req.destroy(new Error('timed out')));
      req.on('error', (e) => reject(new CallError(e.message, true)));
      req.end(body);
    });
  }
}

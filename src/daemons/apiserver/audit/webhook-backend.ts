/**
 * The webhook backend (`--audit-webhook-config-file`, a coreconfig naming the receiver):
 * events are POSTed as an audit.k8s.io/v1 EventList. A failed call (no connection, 429, 5xx)
 * is retried with exponential backoff as Kubernetes' webhook client: first wait
 * `--audit-webhook-initial-backoff`, each next wait ×1.5 (±20 % jitter), five attempts in all.
 * Events still undelivered then are counted in apiserver_audit_error_total{plugin="webhook"}.
 */
import type { Logger } from 'pino';
import type { ClientConnection } from '../../../client/coreconfig.js';
import { CallError, WebhookClient, withRetries } from '../../../client/webhook-client.js';
import type { AuditEvent } from './event.js';
import type { AuditBackend } from './format.js';

const ATTEMPTS = 5;
const CALL_TIMEOUT_MS = 30_000;
const MAX_ERROR_BODY = 1024;
const MAX_RESPONSE_BYTES = 1 << 20;

export class WebhookBackend implements AuditBackend {
  readonly name = 'webhook';
  private readonly client: WebhookClient;
  private closed = false;
  private readonly sleeping = new Set<() => void>();

  constructor(
    conn: ClientConnection,
    private readonly initialBackoffMs: number,
    private readonly log: Logger,
    private readonly onError: (n: number) => void,
  ) {
    this.client = new WebhookClient(conn);
  }

  async process(events: AuditEvent[]): Promise<void> {
    const list = { kind: 'EventList', apiVersion: 'audit.k8s.io/v1', metadata: {}, items: events };
    try {
      await withRetries(() => this.call(list), {
        attempts: ATTEMPTS, initialBackoffMs: this.initialBackoffMs, stop: () => this.closed, sleep: (ms) => this.sleep(ms),
        onRetry: (e, attempt) => this.log.debug({ err: e.message, attempt }, 'audit webhook call failed; retrying'),
      });
    } catch (e) {
      this.onError(events.length);
      this.log.error({ err: (e as Error).message, events: events.length }, "Error in audit plugin 'webhook' affecting audit events");
    }
  }

  async shutdown(): Promise<void> {
    this.closed = true;
    for (const wake of this.sleeping) wake();
    this.client.close();
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => { clearTimeout(t); this.sleeping.delete(done); resolve(); };
      const t = setTimeout(done, ms);
      this.sleeping.add(done);
    });
  }

  private call(list: unknown): Promise<void> {
    if (this.closed) return Promise.reject(new CallError('the audit webhook backend is shut down', false));
    return this.client.postJson(list, { timeoutMs: CALL_TIMEOUT_MS, maxBytes: MAX_RESPONSE_BYTES, retryOn: 'any-failure', quoteBody: MAX_ERROR_BODY, kind: 'EventList' });
  }
}

/**
 * Token webhook (--authentication-token-webhook-config-file), as Kubernetes' webhook token
 * authenticator: each bearer token is POSTed as an authentication.k8s.io/v1 TokenReview to the
 * coreconfig's server URL (its exact path, with its CA and client credentials); the answer's
 * status.authenticated and status.user decide.
 *
 * Audiences as Kubernetes: with API audiences configured the review asks for them
 * (spec.audiences); an answer naming audiences none of which is ours is "not authenticated";
 * an answer naming none is valid for ours.
 *
 * Answers are cached for --authentication-token-webhook-cache-ttl (both "authenticated" and
 * "not authenticated"), keyed by a SHA-256 of audiences and token (tokens are not kept);
 * concurrent requests with one token share one call. A failure (unreachable, non-2xx, not a
 * review, or status.error) is not cached: the token is not authenticated by this webhook, the
 * request falls to the other authenticators and else gets 401. Calls are retried as Kubernetes
 * retries webhooks (connection resets, 429, 500, 504 or Retry-After; 5 attempts, backoff from
 * 0.5 s by 1.5 with 20 % jitter). Tokens never reach the log.
 */
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { ClientConnection } from '../../client/coreconfig.js';
import { WebhookClient, withRetries } from '../../client/webhook-client.js';
import type { TokenAuthenticator } from '../authenticator.js';
import type { UserInfo } from '../user.js';

const CACHE_SIZE = 8192;
const MAX_RESPONSE_BYTES = 1 << 20;
const ATTEMPTS = 5;

export interface TokenWebhookOptions {
  /** Milliseconds an answer is reused; 0: not cached. */
  cacheTtlMs: number;
  /** The API server's audiences (--api-audiences / service-account audiences). */
  apiAudiences?: readonly string[];
  log: Logger;
  /** First retry wait (default 500 ms; tests shorten it). */
  initialBackoffMs?: number;
  /** Time limit of one call (default 10 s). */
  attemptTimeoutMs?: number;
}

interface Answer { user?: UserInfo }

export class TokenWebhookAuthenticator implements TokenAuthenticator {
  readonly name = 'webhook';
  private readonly cache = new Map<string, { answer: Answer; expires: number }>();
  private readonly pending = new Map<string, Promise<Answer>>();
  private readonly client: WebhookClient;
  private readonly audiences: string[];

  constructor(conn: ClientConnection, private readonly opts: TokenWebhookOptions) {
    this.client = new WebhookClient(conn);
    this.audiences = [...(opts.apiAudiences ?? [])];
  }

  async authenticateToken(token: string): Promise<UserInfo | undefined> {
    const key = createHash('sha256').update(JSON.stringify(this.audiences)).update('|').update(token).digest('base64');
    const hit = this.cache.get(key);
    if (hit) {
      if (hit.expires > Date.now()) return hit.answer.user;
      this.cache.delete(key);
    }
    let p = this.pending.get(key);
    if (!p) {
      p = this.review(token, key).finally(() => this.pending.delete(key));
      this.pending.set(key, p);
    }
    return (await p).user;
  }

  close(): void {
    this.client.close();
  }

  private async review(token: string, key: string): Promise<Answer> {
    let status: Record<string, unknown>;
    try {
      status = await this.callWithRetries(token);
    } catch (e) {
      this.opts.log.error({ err: (e as Error).message }, 'Failed to make webhook authenticator request');
      return {};
    }
    if (typeof status.error === 'string' && status.error !== '' && status.authenticated !== true) {
      // The service's own error: a failure, not an answer to keep.
      this.opts.log.info({ err: status.error }, 'token webhook did not authenticate the token');
      return {};
    }
    const answer = this.answerOf(status);
    if (this.opts.cacheTtlMs > 0) {
      this.cache.set(key, { answer, expires: Date.now() + this.opts.cacheTtlMs });
      if (this.cache.size > CACHE_SIZE) this.cache.delete(this.cache.keys().next().value!);
    }
    return answer;
  }

  private answerOf(status: Record<string, unknown>): Answer {
    if (this.audiences.length) {
      const got = strings(status.audiences);
      if (got.length && !got.some((a) => this.audiences.includes(a))) return {};
    }
    if (status.authenticated !== true) return {};
    const u = isObject(status.user) ? status.user : {};
    const user: UserInfo = { name: typeof u.username === 'string' ? u.username : '', groups: strings(u.groups) };
    if (typeof u.uid === 'string' && u.uid) user.uid = u.uid;
    if (isObject(u.extra)) {
      const extra: Record<string, string[]> = {};
      for (const [k, v] of Object.entries(u.extra)) extra[k] = strings(v);
      if (Object.keys(extra).length) user.extra = extra;
    }
    Object.freeze(user.groups);
    if (user.extra) Object.freeze(user.extra);
    return { user: Object.freeze(user) };
  }

  private callWithRetries(token: string): Promise<Record<string, unknown>> {
    const spec: Record<string, unknown> = { token };
    if (this.audiences.length) spec.audiences = this.audiences;
    const review = { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', metadata: { creationTimestamp: null }, spec, status: { user: {} } };
    return withRetries(() => this.client.postJson(review, {
      timeoutMs: this.opts.attemptTimeoutMs ?? 10_000, maxBytes: MAX_RESPONSE_BYTES, retryOn: 'kubernetes', quoteBody: 0, kind: 'TokenReview',
      read: (doc) => {
        if (!isObject(doc)) throw new Error('not a JSON object');
        return isObject(doc.status) ? doc.status : {};
      },
    }), { attempts: ATTEMPTS, initialBackoffMs: this.opts.initialBackoffMs ?? 500 });
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

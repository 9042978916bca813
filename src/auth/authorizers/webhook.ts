/**
 * --authorization-mode=Webhook: asks a remote service, as Kubernetes' webhook authorizer does.
 *
 * Each question is POSTed as an authorization.k8s.io/v1 SubjectAccessReview to the server URL
 * of the --authorization-webhook-config-file coreconfig (its exact path), with that file's CA
 * and client credentials. The answer's status decides: `denied` is a deny that ends the chain
 * (also with `allowed`), `allowed` an allow, neither "no opinion" with the service's reason.
 * Answers are cached by the review's spec: allowed ones for
 * --authorization-webhook-cache-authorized-ttl, the rest for -unauthorized-ttl (an LRU of
 * 8 192 entries; requests whose own attributes are huge are not cached, as Kubernetes skips
 * them). A cached answer is given synchronously.
 *
 * A call that fails (unreachable service, non-2xx answer, a body that is no review) is retried
 * as Kubernetes retries webhooks (connection resets, 429, 500, 504 or a Retry-After answer; 5
 * attempts, backoff from 0.5 s by 1.5 with 20 % jitter), then logged and answered "no opinion",
 * so the next mode decides. Credentials never reach the log.
 */
import * as http from 'node:http';
import * as https from 'node:https';
import type { Logger } from 'pino';
import type { ClientConnection } from '../../client/coreconfig.js';
import type { AuthorizationAttributes, AuthorizationResult, Authorizer } from '../authorizer.js';

const CACHE_SIZE = 8192;
/** Requester-controlled attribute bytes beyond which an answer is not cached (a DoS guard). */
const MAX_CACHED_ATTRIBUTES = 10_000;
const MAX_RESPONSE_BYTES = 1 << 20;

export interface WebhookAuthorizerOptions {
  /** Milliseconds an allowed answer is reused. */
  authorizedTtlMs: number;
  /** Milliseconds a not-allowed answer (denied or no opinion) is reused. */
  unauthorizedTtlMs: number;
  log: Logger;
  /** First retry wait (default 500 ms; tests shorten it). */
  initialBackoffMs?: number;
  /** Time limit of one call (default 10 s). */
  attemptTimeoutMs?: number;
}

interface ReviewStatus { allowed: boolean; denied: boolean; reason: string; evaluationError: string }

interface ReviewSpec {
  resourceAttributes?: Record<string, string>;
  nonResourceAttributes?: { path: string; verb: string };
  user?: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

class CallError extends Error {
  constructor(message: string, readonly retry: boolean, readonly retryAfterMs?: number) { super(message); }
}

export class WebhookAuthorizer implements Authorizer {
  readonly name = 'Webhook';
  private readonly cache = new Map<string, { status: ReviewStatus; expires: number }>();
  private readonly url: URL;
  private readonly agent: http.Agent;

  constructor(private readonly conn: ClientConnection, private readonly opts: WebhookAuthorizerOptions) {
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

  authorize(a: AuthorizationAttributes): AuthorizationResult | Promise<AuthorizationResult> {
    const spec = specOf(a);
    const key = JSON.stringify(spec);
    const hit = this.cache.get(key);
    if (hit) {
      if (hit.expires > Date.now()) {
        // Most recently used last: the first key is the one to evict.
        this.cache.delete(key);
        this.cache.set(key, hit);
        return decisionOf(hit.status);
      }
      this.cache.delete(key);
    }
    return this.ask(spec, key, a);
  }

  close(): void {
    this.agent.destroy();
  }

  private async ask(spec: ReviewSpec, key: string, a: AuthorizationAttributes): Promise<AuthorizationResult> {
    let status: ReviewStatus;
    try {
      status = await this.callWithRetries(spec);
    } catch (e) {
      this.opts.log.error({ err: (e as Error).message }, 'Failed to make webhook authorizer request');
      return { decision: 'noOpinion', reason: '' };
    }
    if (shouldCache(a)) {
      const ttl = status.allowed ? this.opts.authorizedTtlMs : this.opts.unauthorizedTtlMs;
      if (ttl > 0) {
        this.cache.set(key, { status, expires: Date.now() + ttl });
        if (this.cache.size > CACHE_SIZE) this.cache.delete(this.cache.keys().next().value!);
      }
    }
    return decisionOf(status);
  }

  private async callWithRetries(spec: ReviewSpec): Promise<ReviewStatus> {
    let wait = this.opts.initialBackoffMs ?? 500;
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.call(spec);
      } catch (e) {
        if (!(e instanceof CallError) || !e.retry || attempt >= 5) throw e;
        const jittered = wait * (1 + Math.random() * 0.2);
        await new Promise((r) => setTimeout(r, Math.max(jittered, e.retryAfterMs ?? 0)));
        wait *= 1.5;
      }
    }
  }

  private call(spec: ReviewSpec): Promise<ReviewStatus> {
    const body = Buffer.from(JSON.stringify({ apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec }));
    const headers: http.OutgoingHttpHeaders = { 'content-type': 'application/json', accept: 'application/json', 'content-length': body.length };
    if (this.conn.token) headers.authorization = `Bearer ${this.conn.token}`;
    else if (this.conn.username !== undefined) headers.authorization = `Basic ${Buffer.from(`${this.conn.username}:${this.conn.password ?? ''}`).toString('base64')}`;
    const lib = this.url.protocol === 'https:' ? https : http;
    return new Promise<ReviewStatus>((resolve, reject) => {
      const req = lib.request(this.url, { method: 'POST', headers, agent: this.agent, timeout: this.opts.attemptTimeoutMs ?? 10_000 }, (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (d: Buffer) => {
          size += d.length;
          if (size > MAX_RESPONSE_BYTES) { req.destroy(new CallError('response too large', false)); return; }
          chunks.push(d);
        });
        res.on('error', (e) => reject(new CallError(e.message, true)));
        res.on('end', () => {
          const code = res.statusCode ?? 0;
          const text = Buffer.concat(chunks).toString('utf8');
          if (code < 200 || code > 299) {
            const after = Number(res.headers['retry-after']);
            const retryAfter = Number.isFinite(after) && after > 0 ? after * 1000 : undefined;
            const retry = code === 429 || code === 500 || code === 504 || retryAfter !== undefined;
            reject(new CallError(`the server responded with status ${code}: ${text.slice(0, 200)}`, retry, retryAfter));
            return;
          }
          try {
            resolve(statusOf(JSON.parse(text)));
          } catch (e) {
            reject(new CallError(`invalid SubjectAccessReview response: ${(e as Error).message}`, false));
          }
        });
      });
      req.on('timeout', () => req.destroy(new CallError(`no answer within ${this.opts.attemptTimeoutMs ?? 10_000} ms`, true)));
      req.on('error', (e: NodeJS.ErrnoException) => reject(e instanceof CallError ? e : new CallError(`Post "${this.conn.server}": ${e.message}`, e.code === 'ECONNRESET')));
      req.end(body);
    });
  }
}

function specOf(a: AuthorizationAttributes): ReviewSpec {
  // As Go's omitempty: only what is set.
  const spec: ReviewSpec = {};
  if (a.user.name) spec.user = a.user.name;
  if (a.user.uid) spec.uid = a.user.uid;
  if (a.user.groups.length) spec.groups = a.user.groups;
  if (a.user.extra && Object.keys(a.user.extra).length) spec.extra = a.user.extra;
  if (a.isResourceRequest) {
    const r: Record<string, string> = {};
    const add = (k: string, v: string): void => { if (v) r[k] = v; };
    add('namespace', a.namespace); add('verb', a.verb); add('group', a.apiGroup); add('version', a.apiVersion);
    add('resource', a.resource); add('subresource', a.subresource); add('name', a.name);
    spec.resourceAttributes = r;
  } else {
    spec.nonResourceAttributes = { path: a.path, verb: a.verb };
  }
  return spec;
}

function shouldCache(a: AuthorizationAttributes): boolean {
  const size = a.namespace.length + a.verb.length + a.apiGroup.length + a.apiVersion.length + a.resource.length
    + a.subresource.length + a.name.length + a.path.length;
  return size < MAX_CACHED_ATTRIBUTES;
}

function statusOf(doc: unknown): ReviewStatus {
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw new Error('not a JSON object');
  const s = (doc as Record<string, unknown>).status;
  const st = typeof s === 'object' && s !== null ? s as Record<string, unknown> : {};
  const str = (v: unknown): string => (typeof v === 'string' ? v : '');
  return { allowed: st.allowed === true, denied: st.denied === true, reason: str(st.reason), evaluationError: str(st.evaluationError) };
}

function decisionOf(s: ReviewStatus): AuthorizationResult {
  if (s.denied) return { decision: 'deny', reason: s.reason };
  if (s.allowed) return { decision: 'allow', reason: s.reason };
  return { decision: 'noOpinion', reason: s.reason };
}

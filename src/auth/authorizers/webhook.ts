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
import type { Logger } from 'pino';
import type { ClientConnection } from '../../client/coreconfig.js';
import { WebhookClient, withRetries } from '../../client/webhook-client.js';
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

export class WebhookAuthorizer implements Authorizer {
  readonly name = 'Webhook';
  private readonly cache = new Map<string, { status: ReviewStatus; expires: number }>();
  private readonly client: WebhookClient;

  constructor(conn: ClientConnection, private readonly opts: WebhookAuthorizerOptions) {
    this.client = new WebhookClient(conn);
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
    this.client.close();
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

  private callWithRetries(spec: ReviewSpec): Promise<ReviewStatus> {
    const review = { apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec };
    return withRetries(() => this.client.postJson(review, {
      timeoutMs: this.opts.attemptTimeoutMs ?? 10_000, maxBytes: MAX_RESPONSE_BYTES, retryOn: 'kubernetes', quoteBody: 200,
      kind: 'SubjectAccessReview', read: statusOf,
    }), { attempts: 5, initialBackoffMs: this.opts.initialBackoffMs ?? 500 });
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

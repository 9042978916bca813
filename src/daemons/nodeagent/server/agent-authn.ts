/**
 * Who is calling the node agent's secure port, as the kubelet decides it:
 *  - a client certificate verified against --client-ca-file (CommonName → user, O → groups);
 *    without --client-ca-file certificates are ignored;
 *  - with --authentication-token-webhook, `Authorization: Bearer` tokens checked by a
 *    TokenReview (authentication.k8s.io/v1) at the API server, answers (authenticated or not)
 *    cached for --authentication-token-webhook-cache-ttl; without the webhook a bearer token is
 *    ignored, as the kubelet does;
 *  - anything else is system:anonymous when --anonymous-auth, else refused (401).
 * Bad credentials (an unverified certificate, a token the API server rejects) are a 401 even
 * when anonymous access is on.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { pino, type Logger } from 'pino';
import { AnonymousAuthenticator } from '../../../auth/anonymous.js';
import type { AuthRequest, Authenticator, TokenAuthenticator } from '../../../auth/authenticator.js';
import { BearerTokenAuthenticator } from '../../../auth/bearer-token.js';
import { UnionAuthenticator } from '../../../auth/union-authenticator.js';
import { userFromReview } from '../../../auth/review-user.js';
import type { UserInfo } from '../../../auth/user.js';
import { X509Authenticator } from '../../../auth/x509.js';
import type { KubeObject } from '../../../api/resources/types.js';
import { TtlCache } from '../../../util/ttl-cache.js';

/** Creates an object through the API (the agent's RestClient.create fits). */
export type ApiCreate = <T extends KubeObject>(ref: { group: string; version: string; resource: string }, obj: KubeObject, opts?: { signal?: AbortSignal }) => Promise<T>;

const TOKEN_REVIEWS = { group: 'authentication.k8s.io', version: 'v1', resource: 'tokenreviews' };

type Dict = Record<string, unknown>;
const isDict = (v: unknown): v is Dict => typeof v === 'object' && v !== null && !Array.isArray(v);


export interface WebhookTokenOptions {
  readonly create: ApiCreate;
  readonly cacheTtlMs: number;
  readonly signal?: AbortSignal;
  readonly log?: Logger;
  readonly now?: () => number;
}

/** Bearer tokens checked by TokenReview; both answers cached for the TTL, errors never. */
export class WebhookTokenAuthenticator implements TokenAuthenticator {
  readonly name = 'webhook-token';
  private readonly cache: TtlCache<UserInfo | null>;
  private readonly log: Logger;

  constructor(private readonly o: WebhookTokenOptions) {
    this.cache = new TtlCache(4096, o.now);
    this.log = o.log ?? pino({ level: 'silent' });
  }

  async authenticateToken(token: string): Promise<UserInfo | undefined> {
    const key = createHash('sha256').update(token).digest('base64url');
    const user = await this.cache.get(key, () => this.review(token), () => this.o.cacheTtlMs);
    return user ?? undefined;
  }

  private async review(token: string): Promise<UserInfo | null> {
    const tr = await this.o.create<KubeObject & { status?: Dict }>(TOKEN_REVIEWS, {
      apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token },
    }, this.o.signal ? { signal: this.o.signal } : {});
    const status = isDict(tr.status) ? tr.status : {};
    if (status.authenticated === true) {
      const u = userFromReview(status.user);
      if (u) return u;
    }
    if (typeof status.error === 'string' && status.error) this.log.debug({ err: status.error }, 'token review: not authenticated');
    return null;
  }
}

export interface AgentAuthnOptions {
  readonly anonymousAuth: boolean;
  /** --client-ca-file was given (the listener verifies certificates against it). */
  readonly clientCa: boolean;
  /** Set with --authentication-token-webhook. */
  readonly tokenWebhook?: TokenAuthenticator;
}

export function createAgentAuthenticator(o: AgentAuthnOptions): Authenticator {
  const chain: Authenticator[] = [];
  if (o.clientCa) chain.push(new X509Authenticator());
  if (o.tokenWebhook) chain.push(new BearerTokenAuthenticator([o.tokenWebhook]));
  return new UnionAuthenticator(chain, o.anonymousAuth ? new AnonymousAuthenticator() : undefined);
}

/** The request's credentials as the shared authenticators read them. */
export function authRequestOf(req: IncomingMessage): AuthRequest {
  const sock = req.socket as Partial<TLSSocket>;
  const peer = typeof sock.getPeerCertificate === 'function' ? sock.getPeerCertificate() : undefined;
  const out: AuthRequest = { headers: req.headers };
  if (peer) {
    out.tls = { authorized: sock.authorized === true, peerCertificate: peer };
    const why = sock.authorizationError;
    if (why) out.tls.authorizationError = String(why);
  }
  return out;
}

/**
 * Authenticator: turns a request's credentials into a user. Three outcomes, as in Kubernetes:
 * a user (authenticated), nothing (this method does not apply: no credentials of its kind),
 * or an error (credentials of its kind were presented and are bad: the request fails with 401
 * even when anonymous access is on).
 */
import type { PeerCertificate } from 'node:tls';
import type { UserInfo } from './user.js';

/** What authenticators see of a request: headers and the TLS facts of its connection. */
export interface AuthRequest {
  headers: Record<string, string | string[] | undefined>;
  /** name, value, ... with repeated headers apart (HTTP/1.1 and HTTP/2 both keep them). */
  rawHeaders?: readonly string[];
  tls?: {
    /** The peer certificate verified against the client CA (by the TLS layer). */
    authorized: boolean;
    authorizationError?: string;
    /** Empty object (no `raw`) when the client sent no certificate. */
    peerCertificate?: PeerCertificate;
  };
}

export type AuthResult =
  /** perRequest: the user holds for this request only, not for its connection (see UnionAuthenticator). */
  | { ok: true; user: UserInfo; method: string; perRequest?: boolean }
  | { ok: false; error?: string };

export interface Authenticator {
  readonly name: string;
  authenticate(req: AuthRequest): Promise<AuthResult>;
  /**
   * True when this authenticator could name a user for a later request on the same connection
   * by that request's headers (a trusted front proxy's connection): a client certificate's user
   * then does not hold for the whole connection.
   */
  trustsConnection?(req: AuthRequest): boolean;
  /** Removes identity headers (front-proxy ones) from an authenticated request, whoever authenticated it. */
  clearIdentityHeaders?(headers: AuthRequest['headers']): void;
}

/** A bearer-token checker (token file, later service-account JWTs, webhooks). */
export interface TokenAuthenticator {
  readonly name: string;
  /** undefined: the token is not one of ours. Throws only on internal failure. */
  authenticateToken(token: string): Promise<UserInfo | undefined>;
}

export const NOT_APPLICABLE: AuthResult = Object.freeze({ ok: false }) as AuthResult;

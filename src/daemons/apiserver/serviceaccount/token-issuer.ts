/**
 * Issues bound service-account tokens (TokenRequest): a JWT signed with the
 * --service-account-signing-key-file key, with the claims Kubernetes puts in:
 * iss (--service-account-issuer), sub system:serviceaccount:NS:NAME, aud, exp, iat, nbf, jti,
 * and `kubernetes.io` {namespace, serviceaccount {name, uid}, pod|secret|node {name, uid}}.
 * The lifetime is capped by `maxExpirationSeconds` when set (0: no cap).
 * Stateless: safe for concurrent use.
 */
import { randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import type { SigningKey } from '../../../auth/service-account-keys.js';
import { SA_USER_PREFIX, type KubernetesClaim, type RefClaim } from '../../../auth/service-account-token.js';

export interface TokenIssuerOptions {
  readonly signer: SigningKey;
  readonly issuer: string;
  /** The audiences of a request that names none (the API audiences). */
  readonly apiAudiences: readonly string[];
  /** Longest lifetime handed out, seconds; 0 = no cap. */
  readonly maxExpirationSeconds?: number;
  /** Seconds since the epoch. */
  readonly now?: () => number;
}

export interface TokenSubject {
  readonly namespace: string;
  readonly serviceAccount: RefClaim;
  readonly pod?: RefClaim;
  readonly secret?: RefClaim;
  readonly node?: RefClaim;
}

export interface IssuedToken {
  readonly token: string;
  /** Seconds since the epoch. */
  readonly expiresAt: number;
  readonly audiences: string[];
}

export class TokenIssuer {
  private readonly now: () => number;
  constructor(private readonly o: TokenIssuerOptions) {
    this.now = o.now ?? ((): number => Math.floor(Date.now() / 1000));
  }

  get apiAudiences(): readonly string[] { return this.o.apiAudiences; }

  /** The lifetime a request for `requested` seconds gets. */
  lifetime(requested: number): number {
    const max = this.o.maxExpirationSeconds ?? 0;
    return max > 0 && requested > max ? max : requested;
  }

  async issue(subject: TokenSubject, audiences: readonly string[], expirationSeconds: number): Promise<IssuedToken> {
    const aud = audiences.length ? [...audiences] : [...this.o.apiAudiences];
    const iat = this.now();
    const exp = iat + this.lifetime(expirationSeconds);
    const k: KubernetesClaim = { namespace: subject.namespace, serviceaccount: subject.serviceAccount };
    if (subject.pod) k.pod = subject.pod;
    if (subject.secret) k.secret = subject.secret;
    if (subject.node) k.node = subject.node;
    const token = await new SignJWT({ 'kubernetes.io': k })
      .setProtectedHeader({ alg: this.o.signer.alg, kid: this.o.signer.kid })
      .setIssuer(this.o.issuer)
      .setSubject(`${SA_USER_PREFIX}${subject.namespace}:${subject.serviceAccount.name}`)
      .setAudience(aud)
      .setIssuedAt(iat)
      .setNotBefore(iat)
      .setExpirationTime(exp)
      .setJti(randomUUID())
      .sign(this.o.signer.key);
    return { token, expiresAt: exp, audiences: aud };
  }
}

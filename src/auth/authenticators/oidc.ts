/**
 * OpenID Connect ID tokens as bearer credentials, checked as Kubernetes' OIDC authenticator
 * (apiserver/plugin/pkg/authenticator/token/oidc with go-oidc's verifier) does:
 *  - a token whose unverified `iss` is not our issuer URL is not ours (other authenticators try it);
 *  - until discovery and the keys are loaded, our tokens fail ("authenticator not initialized");
 *  - the header's `alg` must be one of --oidc-signing-algs (the reference's error 3);
 *  - the signature must verify with one of the issuer's keys (by `kid`; an unknown `kid` refetches
 *    the JWKS once, see oidc-keys.ts);
 *  - `aud` (string or array) must contain --oidc-client-id;
 *  - `exp` must not be past (no leeway); `nbf`, when present, may be up to 1 minute ahead;
 *  - the user name is the --oidc-username-claim (a string), prefixed (see usernamePrefixFor);
 *    with claim `email`, an `email_verified` claim, when present, must be true;
 *  - groups come from --oidc-groups-claim (a string or an array of strings; absent: none), each
 *    prefixed with --oidc-groups-prefix.
 * A refused token is undefined (the bearer chain answers 401); the reason is logged at debug
 * level, never the token.
 */
import { compactVerify, decodeProtectedHeader } from 'jose';
import type { Logger } from 'pino';
import type { TokenAuthenticator } from '../authenticator.js';
import type { UserInfo } from '../user.js';
import { OidcKeySet, type OidcKeySetOptions } from './oidc-keys.js';

/** The asymmetric algorithms Kubernetes allows in --oidc-signing-algs. */
export const OIDC_ALLOWED_SIGNING_ALGS: readonly string[] = ['ES256', 'ES384', 'ES512', 'PS256', 'PS384', 'PS512', 'RS256', 'RS384', 'RS512'];

/** go-oidc's leeway on `nbf`; `exp` has none. */
export const NBF_LEEWAY_MS = 60_000;

export interface OidcAuthenticatorOptions {
  issuerUrl: string;
  clientId: string;
  /** Default ['RS256']. */
  signingAlgs: readonly string[];
  /** Default 'sub'. */
  usernameClaim: string;
  /** As given on the command line: '' default rule, '-' none. */
  usernamePrefix: string;
  groupsClaim: string;
  groupsPrefix: string;
}

/**
 * Kubernetes' prefix rule: no prefix given and a claim other than `email` → the issuer URL and
 * '#'; '-' → no prefix at all.
 */
export function usernamePrefixFor(o: Pick<OidcAuthenticatorOptions, 'issuerUrl' | 'usernameClaim' | 'usernamePrefix'>): string {
  if (o.usernamePrefix === '' && o.usernameClaim !== 'email') return `${o.issuerUrl}#`;
  return o.usernamePrefix === '-' ? '' : o.usernamePrefix;
}

/** The `iss` of a compact JWT, unverified; undefined when the token is not a compact JWT. */
export function untrustedIssuer(token: string): string | undefined {
  if (token.trimStart().startsWith('{')) return undefined;
  const parts = token.split('.');
  if (parts.length !== 3) return undefined;
  try {
    const claims: unknown = JSON.parse(Buffer.from(parts[1] ?? '', 'base64url').toString('utf8'));
    if (typeof claims !== 'object' || claims === null) return undefined;
    const iss = (claims as Record<string, unknown>)['iss'];
    if (typeof iss !== 'string') return undefined;
    // Google's legacy issuer without a scheme, coalesced as go-oidc and Kubernetes do.
    return iss === 'accounts.google.com' ? 'https://accounts.google.com' : iss;
  } catch {
    return undefined;
  }
}

/** What a check found: a user, a refusal of one of our tokens, or "not ours". */
export type OidcCheck = { user: UserInfo } | { error: string } | { notOurs: true };

class Refused extends Error {}

type Claims = Record<string, unknown>;

function audiencesOf(v: unknown): string[] {
  if (typeof v === 'string') return [v];
  if (Array.isArray(v) && v.every((a) => typeof a === 'string')) return v as string[];
  if (v === undefined || v === null) return [];
  throw new Refused('malformed "aud" claim');
}

/** A NumericDate claim in milliseconds; undefined when absent. */
function timeOf(claims: Claims, name: string): number | undefined {
  const v = Object.hasOwn(claims, name) ? claims[name] : undefined;
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new Refused(`malformed "${name}" claim`);
  return v * 1000;
}

export class OidcAuthenticator implements TokenAuthenticator {
  readonly name = 'oidc';
  readonly keys: OidcKeySet;
  private readonly usernamePrefix: string;
  private readonly now: () => number;
  private readonly log: Logger;

  constructor(private readonly o: OidcAuthenticatorOptions, keys: Omit<OidcKeySetOptions, 'issuerUrl'>) {
    this.keys = new OidcKeySet({ ...keys, issuerUrl: o.issuerUrl });
    this.usernamePrefix = usernamePrefixFor(o);
    this.now = keys.now ?? Date.now;
    this.log = keys.log;
  }

  /** Starts fetching discovery and keys in the background; resolves once loaded (or closed). */
  start(): Promise<void> { return this.keys.start(); }

  close(): void { this.keys.close(); }

  async authenticateToken(token: string): Promise<UserInfo | undefined> {
    const r = await this.check(token);
    if ('user' in r) return r.user;
    if ('error' in r) this.log.debug({ issuer: this.o.issuerUrl, reason: r.error }, 'oidc token refused');
    return undefined;
  }

  async check(token: string): Promise<OidcCheck> {
    if (untrustedIssuer(token) !== this.o.issuerUrl) return { notOurs: true };
    if (!this.keys.ready) return { error: 'oidc: authenticator not initialized' };
    try {
      return { user: this.userOf(await this.verifiedClaims(token)) };
    } catch (e) {
      if (e instanceof Refused) return { error: `oidc: ${e.message}` };
      throw e;
    }
  }

  private async verifiedClaims(token: string): Promise<Claims> {
    let header: { alg?: unknown; kid?: unknown };
    try { header = decodeProtectedHeader(token); } catch { throw new Refused('malformed token header'); }
    const alg = typeof header.alg === 'string' ? header.alg : '';
    if (!this.o.signingAlgs.includes(alg)) {
      throw new Refused(`id token signed with unsupported algorithm, expected ${JSON.stringify(this.o.signingAlgs)} got ${JSON.stringify(alg)}`);
    }
    const kid = typeof header.kid === 'string' ? header.kid : undefined;
    const candidates = await this.keys.candidates(kid, alg);
    if (candidates.length === 0) throw new Refused(kid === undefined ? 'no issuer key fits the token' : `no issuer key with id ${JSON.stringify(kid)}`);
    let payload: Uint8Array | undefined;
    for (const k of candidates) {
      try {
        payload = (await compactVerify(token, await this.keys.keyFor(k, alg))).payload;
        break;
      } catch { /* the next key, if any */ }
    }
    if (!payload) throw new Refused('failed to verify signature');
    let claims: unknown;
    try { claims = JSON.parse(Buffer.from(payload).toString('utf8')); } catch { throw new Refused('malformed claims'); }
    if (typeof claims !== 'object' || claims === null || Array.isArray(claims)) throw new Refused('malformed claims');
    const c = claims as Claims;
    // `iss` was compared before (on these same bytes, now signed).
    const aud = audiencesOf(c['aud']);
    if (!aud.includes(this.o.clientId)) throw new Refused(`expected audience ${JSON.stringify(this.o.clientId)} got ${JSON.stringify(aud)}`);
    const now = this.now();
    const exp = timeOf(c, 'exp');
    // A missing exp is the zero time in go-oidc: expired.
    if (exp === undefined || exp < now) throw new Refused('token is expired');
    const nbf = timeOf(c, 'nbf');
    if (nbf !== undefined && now + NBF_LEEWAY_MS < nbf) throw new Refused('current time before the nbf (not before) time');
    return c;
  }

  private userOf(c: Claims): UserInfo {
    const claim = this.o.usernameClaim;
    const name = Object.hasOwn(c, claim) ? c[claim] : undefined;
    if (name === undefined) throw new Refused(`parse username claims ${JSON.stringify(claim)}: claim not present`);
    if (typeof name !== 'string') throw new Refused(`parse username claims ${JSON.stringify(claim)}: not a string`);
    // Stricter than Kubernetes: an empty name would make every such token the same nameless user.
    if (name === '') throw new Refused(`username claim ${JSON.stringify(claim)} is empty`);
    if (claim === 'email' && Object.hasOwn(c, 'email_verified')) {
      const verified = c['email_verified'];
      if (typeof verified !== 'boolean') throw new Refused("parse 'email_verified' claim: not a boolean");
      if (!verified) throw new Refused('email not verified');
    }
    return { name: this.usernamePrefix + name, groups: this.groupsOf(c) };
  }

  private groupsOf(c: Claims): string[] {
    const claim = this.o.groupsClaim;
    if (claim === '' || !Object.hasOwn(c, claim)) return [];
    const v = c[claim];
    let groups: string[];
    if (v === null) groups = [];
    else if (typeof v === 'string') groups = [v];
    else if (Array.isArray(v) && v.every((g) => typeof g === 'string')) groups = v as string[];
    else throw new Refused(`parse groups claim ${JSON.stringify(claim)}: not a string or an array of strings`);
    return groups.map((g) => this.o.groupsPrefix + g);
  }
}

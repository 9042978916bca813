/**
 * The OpenID issuer's signing keys: discovery (`<issuer>/.well-known/openid-configuration`) names
 * the JWKS URL, the JWKS gives the keys. Fetched in the background at start, retried with backoff
 * until it works (until then OIDC tokens fail and the other authenticators carry on, as in
 * Kubernetes, which polls every 10 s). A token naming a key id we do not know triggers one JWKS
 * refetch (the issuer rotated its keys); such refetches are coalesced and rate-limited so that
 * tokens with made-up key ids cannot turn the API server into a load generator for the issuer.
 */
import { request as httpsRequest } from 'node:https';
import { importJWK, type CryptoKey, type JWK } from 'jose';
import type { Logger } from 'pino';

export interface OidcKeySetOptions {
  /** Exactly as configured (--oidc-issuer-url); discovery's `issuer` must equal it. */
  issuerUrl: string;
  /** PEM roots for the issuer's TLS certificate (--oidc-ca-file); undefined: the host's roots. */
  caPem?: string;
  log: Logger;
  /** Least time between two refetches caused by unknown key ids. @default 5000 */
  minRefetchIntervalMs?: number;
  /** First retry delay of the start-up fetch, doubled up to maxBackoffMs. @default 250 */
  initialBackoffMs?: number;
  /** @default 10000 (Kubernetes' poll interval) */
  maxBackoffMs?: number;
  /** @default 30000 (Kubernetes' client timeout) */
  fetchTimeoutMs?: number;
  /** Milliseconds; tests. */
  now?: () => number;
}

/** A public key of the issuer, as published. */
export interface IssuerKey {
  readonly jwk: JWK;
}

const MAX_BODY_BYTES = 1 << 20;

/** GET over HTTPS, 200 and a JSON object required; the body is bounded. */
export function fetchJson(url: string, caPem: string | undefined, timeoutMs: number, signal: AbortSignal): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    let u: URL;
    try { u = new URL(url); } catch { reject(new Error(`invalid URL ${JSON.stringify(url)}`)); return; }
    if (u.protocol !== 'https:') { reject(new Error(`${url}: only https URLs are fetched`)); return; }
    const req = httpsRequest(u, { method: 'GET', headers: { accept: 'application/json' }, signal, timeout: timeoutMs, ...(caPem ? { ca: caPem } : {}) }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > MAX_BODY_BYTES) { req.destroy(new Error(`${url}: answer larger than ${MAX_BODY_BYTES} bytes`)); return; }
        chunks.push(c);
      });
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        if (res.statusCode !== 200) { reject(new Error(`${url}: ${res.statusCode} ${res.statusMessage ?? ''}`.trim())); return; }
        try {
          const v: unknown = JSON.parse(text);
          if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error('not a JSON object');
          resolve(v as Record<string, unknown>);
        } catch (e) {
          reject(new Error(`${url}: ${(e as Error).message}`));
        }
      });
    });
    req.on('timeout', () => req.destroy(new Error(`${url}: no answer in ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}

/** The discovery URL go-oidc (and so Kubernetes) derives from the issuer. */
export function discoveryUrl(issuerUrl: string): string {
  return issuerUrl.replace(/\/+$/, '') + '/.well-known/openid-configuration';
}

/** Signature keys of a JWKS document: RSA and EC keys not reserved for encryption. */
export function signingKeysOf(doc: Record<string, unknown>): IssuerKey[] {
  const keys = doc['keys'];
  if (!Array.isArray(keys)) throw new Error('JWKS has no "keys" array');
  const out: IssuerKey[] = [];
  for (const k of keys) {
    if (typeof k !== 'object' || k === null) continue;
    const jwk = k as JWK;
    if ((jwk.kty !== 'RSA' && jwk.kty !== 'EC') || (jwk.use !== undefined && jwk.use !== 'sig')) continue;
    out.push({ jwk });
  }
  return out;
}

/** The key type (and curve) a JWS algorithm needs. */
function fits(jwk: JWK, alg: string): boolean {
  if (jwk.alg !== undefined && jwk.alg !== alg) return false;
  if (alg.startsWith('RS') || alg.startsWith('PS')) return jwk.kty === 'RSA';
  const curve: Record<string, string> = { ES256: 'P-256', ES384: 'P-384', ES512: 'P-521' };
  return jwk.kty === 'EC' && jwk.crv === curve[alg];
}

export class OidcKeySet {
  private keys: IssuerKey[] | undefined;
  private jwksUri: string | undefined;
  /** Imported keys by published key and algorithm; dropped with the key set they came from. */
  private readonly imported = new WeakMap<IssuerKey, Map<string, Promise<CryptoKey | Uint8Array>>>();
  private readonly abort = new AbortController();
  private refetching: Promise<void> | undefined;
  private lastRefetchAt = Number.NEGATIVE_INFINITY;
  private started = false;
  private readonly now: () => number;
  /** Successful JWKS fetches (tests, diagnostics). */
  fetches = 0;

  constructor(private readonly o: OidcKeySetOptions) {
    this.now = o.now ?? Date.now;
  }

  /** Discovery and keys have been fetched once. */
  get ready(): boolean { return this.keys !== undefined; }

  /** Starts the background fetch (idempotent); resolves when it first succeeds or close() is called. */
  start(): Promise<void> {
    if (this.started) return Promise.resolve();
    this.started = true;
    return this.initLoop();
  }

  close(): void { this.abort.abort(); }

  private async initLoop(): Promise<void> {
    let delay = this.o.initialBackoffMs ?? 250;
    const max = this.o.maxBackoffMs ?? 10_000;
    while (!this.abort.signal.aborted) {
      try {
        await this.fetchKeys();
        this.o.log.info({ issuer: this.o.issuerUrl, keys: this.keys?.length }, 'oidc: issuer discovery and signing keys loaded');
        return;
      } catch (e) {
        if (this.abort.signal.aborted) return;
        this.o.log.error({ issuer: this.o.issuerUrl, err: (e as Error).message, retryInMs: delay }, 'oidc: initializing the authenticator failed; OIDC tokens fail until it works');
      }
      await new Promise<void>((resolve) => {
        const signal = this.abort.signal;
        const onAbort = (): void => { clearTimeout(timer); resolve(); };
        // The listener goes with its timer: a long outage must not pile them up on the signal.
        const timer = setTimeout(() => { signal.removeEventListener('abort', onAbort); resolve(); }, delay);
        timer.unref();
        signal.addEventListener('abort', onAbort, { once: true });
      });
      delay = Math.min(delay * 2, max);
    }
  }

  private async fetchKeys(): Promise<void> {
    const timeout = this.o.fetchTimeoutMs ?? 30_000;
    if (this.jwksUri === undefined) {
      const doc = await fetchJson(discoveryUrl(this.o.issuerUrl), this.o.caPem, timeout, this.abort.signal);
      if (doc['issuer'] !== this.o.issuerUrl) {
        throw new Error(`issuer did not match the issuer returned by provider, expected ${JSON.stringify(this.o.issuerUrl)} got ${JSON.stringify(doc['issuer'])}`);
      }
      const uri = doc['jwks_uri'];
      if (typeof uri !== 'string' || uri === '') throw new Error('discovery document has no jwks_uri');
      this.jwksUri = uri;
    }
    const keys = signingKeysOf(await fetchJson(this.jwksUri, this.o.caPem, timeout, this.abort.signal));
    this.keys = keys;
    this.fetches++;
  }

  /**
   * Keys that may have signed a token with this header. With a key id we do not know, the JWKS is
   * refetched once (coalesced, at most once per minRefetchIntervalMs); still unknown: none.
   */
  async candidates(kid: string | undefined, alg: string): Promise<IssuerKey[]> {
    const pick = (): IssuerKey[] => (this.keys ?? []).filter((k) => (kid === undefined || k.jwk.kid === kid) && fits(k.jwk, alg));
    let found = pick();
    if (found.length === 0 && kid !== undefined && !(this.keys ?? []).some((k) => k.jwk.kid === kid)) {
      await this.refetchForUnknownKid();
      found = pick();
    }
    return found;
  }

  private refetchForUnknownKid(): Promise<void> {
    if (this.refetching) return this.refetching;
    const now = this.now();
    if (now - this.lastRefetchAt < (this.o.minRefetchIntervalMs ?? 5_000)) return Promise.resolve();
    this.lastRefetchAt = now;
    this.refetching = this.fetchKeys()
      .catch((e: Error) => { this.o.log.warn({ issuer: this.o.issuerUrl, err: e.message }, 'oidc: refetching the signing keys failed'); })
      .finally(() => { this.refetching = undefined; });
    return this.refetching;
  }

  /** The key imported for one algorithm (WebCrypto keys are bound to theirs), cached per key set. */
  keyFor(k: IssuerKey, alg: string): Promise<CryptoKey | Uint8Array> {
    let byAlg = this.imported.get(k);
    if (!byAlg) this.imported.set(k, byAlg = new Map());
    let p = byAlg.get(alg);
    if (!p) {
      const cache = byAlg;
      p = importJWK(k.jwk, alg);
      // A key that does not import is not kept: the next token tries again (and fails again).
      p.catch(() => cache.delete(alg));
      cache.set(alg, p);
    }
    return p;
  }
}

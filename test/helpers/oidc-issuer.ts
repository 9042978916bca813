/**
 * A local OpenID issuer for tests: HTTPS on 127.0.0.1 with a certificate from its own test CA,
 * serving discovery (`<issuer>/.well-known/openid-configuration`) and the JWKS (`<issuer>/keys`),
 * minting ID tokens with jose. Keys can be rotated; a key can be kept unpublished (to forge
 * signatures); the server can be stopped and started again on the same port (issuer down).
 */
import { generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SignJWT } from 'jose';
import { createCA, issueCert, writePemFile } from '../../src/util/pki.js';
import { freePort } from '../../src/util/free-port.js';

export interface IssuerKeyPair {
  kid: string;
  alg: 'RS256' | 'ES256';
  privateKey: KeyObject;
  publicJwk: Record<string, unknown>;
}

export interface MintOptions {
  /** Header alg; default the key's own (RS256 or ES256). */
  alg?: string;
  /** Header kid; default the key's; null: no kid at all. */
  kid?: string | null;
  /** Signing key; default the current published key. */
  key?: IssuerKeyPair | Uint8Array;
}

export interface OidcIssuer {
  /** The issuer URL (what --oidc-issuer-url gets). */
  readonly url: string;
  readonly port: number;
  readonly caPem: string;
  /** The test CA as a file (--oidc-ca-file). */
  readonly caFile: string;
  /** Requests served, by document. */
  readonly requests: { discovery: number; jwks: number };
  /** The key minting signs with by default (published). */
  current: IssuerKeyPair;
  /** Every published key. */
  published: IssuerKeyPair[];
  /** Overrides the discovery document's `issuer` (to test the mismatch check). */
  discoveryIssuer?: string;
  /** Standard claims valid for an hour, for client id `aud`, merged with `extra`. */
  claims(extra?: Record<string, unknown>): Record<string, unknown>;
  mint(claims: Record<string, unknown>, opts?: MintOptions): Promise<string>;
  /** A new key pair, not published. */
  newKey(alg?: 'RS256' | 'ES256'): IssuerKeyPair;
  /** Publishes a new RSA key, makes it current and withdraws the old ones. */
  rotate(): IssuerKeyPair;
  readonly listening: boolean;
  start(): Promise<void>;
  /** Stops listening (connections closed); the port stays reserved for start(). */
  halt(): Promise<void>;
  /** halt() and removes the temp dir. */
  stop(): Promise<void>;
}

export function makeKey(alg: 'RS256' | 'ES256' = 'RS256'): IssuerKeyPair {
  const pair = alg === 'RS256'
    ? generateKeyPairSync('rsa', { modulusLength: 2048 })
    : generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const kid = randomBytes(8).toString('hex');
  // Published without "alg": the allowed-algorithm list alone decides which alg is accepted.
  return { kid, alg, privateKey: pair.privateKey, publicJwk: { ...pair.publicKey.export({ format: 'jwk' }), kid, use: 'sig' } };
}

export async function startOidcIssuer(opts: { clientId?: string; path?: string; listen?: boolean; keyAlg?: 'RS256' | 'ES256' } = {}): Promise<OidcIssuer> {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-oidc-issuer-'));
  const ca = await createCA({ commonName: 'oidc-test-ca' });
  const pair = await issueCert({ ca, commonName: 'oidc-issuer', dnsNames: ['localhost'], ips: ['127.0.0.1'], usages: 'server' });
  const caFile = join(dir, 'oidc-ca.crt');
  await writePemFile(caFile, ca.certPem);
  const port = await freePort();
  const base = `https://127.0.0.1:${port}`;
  const path = opts.path ?? '';
  const url = base + path;
  const clientId = opts.clientId ?? 'corectl';
  let server: Server | undefined;

  const first = makeKey(opts.keyAlg ?? 'RS256');
  const issuer: OidcIssuer = {
    url, port, caPem: ca.certPem, caFile,
    requests: { discovery: 0, jwks: 0 },
    current: first,
    published: [first],
    claims(extra = {}) {
      const now = Math.floor(Date.now() / 1000);
      return { iss: url, aud: clientId, sub: 'alice', iat: now, exp: now + 3600, ...extra };
    },
    async mint(claims, o = {}) {
      const key = o.key ?? issuer.current;
      const isPair = !(key instanceof Uint8Array);
      const alg = o.alg ?? (isPair ? key.alg : 'HS256');
      const kid = o.kid === null ? undefined : o.kid ?? (isPair ? key.kid : undefined);
      return new SignJWT(claims).setProtectedHeader({ alg, typ: 'JWT', ...(kid !== undefined ? { kid } : {}) })
        .sign(isPair ? key.privateKey : key);
    },
    newKey: (alg = 'RS256') => makeKey(alg),
    rotate() {
      const k = makeKey('RS256');
      issuer.current = k;
      issuer.published = [k];
      return k;
    },
    get listening() { return server !== undefined; },
    async start() {
      if (server) return;
      const s = createServer({ cert: pair.certPem, key: pair.keyPem }, (req, res) => {
        const p = (req.url ?? '').split('?')[0];
        let body: unknown;
        if (p === `${path}/.well-known/openid-configuration`) {
          issuer.requests.discovery++;
          body = { issuer: issuer.discoveryIssuer ?? url, jwks_uri: `${url}/keys`, id_token_signing_alg_values_supported: ['RS256', 'ES256'], response_types_supported: ['id_token'], subject_types_supported: ['public'] };
        } else if (p === `${path}/keys`) {
          issuer.requests.jwks++;
          body = { keys: issuer.published.map((k) => k.publicJwk) };
        }
        if (body === undefined) { res.writeHead(404).end(); return; }
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      });
      await new Promise<void>((resolve, reject) => {
        s.once('error', reject);
        s.listen(port, '127.0.0.1', () => { s.off('error', reject); resolve(); });
      });
      server = s;
    },
    async halt() {
      const s = server;
      if (!s) return;
      server = undefined;
      await new Promise<void>((resolve) => { s.close(() => resolve()); s.closeAllConnections(); });
    },
    async stop() {
      await issuer.halt();
      await rm(dir, { recursive: true, force: true });
    },
  };
  if (opts.listen !== false) await issuer.start();
  return issuer;
}

// The OIDC token authenticator against a local HTTPS issuer (discovery + JWKS over TLS with a test
// CA): claim checks with their exact rules, the user and group mapping with Kubernetes' prefix
// rules, key rotation and unknown key ids (refetch, rate-limited), and the background start.
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import t from 'tap';
import { OidcAuthenticator, usernamePrefixFor, untrustedIssuer, type OidcAuthenticatorOptions, type OidcCheck } from '../../../src/auth/authenticators/oidc.js';
import { startOidcIssuer, type OidcIssuer } from '../../helpers/oidc-issuer.js';
import { waitFor } from '../../helpers/wait-for.js';

const silent = pino({ level: 'silent' });

function options(issuer: OidcIssuer, over: Partial<OidcAuthenticatorOptions> = {}): OidcAuthenticatorOptions {
  return { issuerUrl: issuer.url, clientId: 'corectl', signingAlgs: ['RS256'], usernameClaim: 'sub', usernamePrefix: '', groupsClaim: 'groups', groupsPrefix: '', ...over };
}

async function ready(issuer: OidcIssuer, over: Partial<OidcAuthenticatorOptions> = {}, keys: { now?: () => number; minRefetchIntervalMs?: number } = {}): Promise<OidcAuthenticator> {
  const a = new OidcAuthenticator(options(issuer, over), { log: silent, caPem: issuer.caPem, initialBackoffMs: 10, maxBackoffMs: 100, ...keys });
  await a.start();
  return a;
}

const errorOf = (r: OidcCheck): string => ('error' in r ? r.error : 'user' in r ? `accepted as ${r.user.name}` : 'not ours');

t.test('prefix rules of the options table', async (t) => {
  const issuerUrl = 'https://issuer.example';
  t.equal(usernamePrefixFor({ issuerUrl, usernameClaim: 'sub', usernamePrefix: '' }), 'https://issuer.example#', 'default: issuer URL and #');
  t.equal(usernamePrefixFor({ issuerUrl, usernameClaim: 'email', usernamePrefix: '' }), '', 'email: no prefix');
  t.equal(usernamePrefixFor({ issuerUrl, usernameClaim: 'sub', usernamePrefix: '-' }), '', '"-" disables it');
  t.equal(usernamePrefixFor({ issuerUrl, usernameClaim: 'email', usernamePrefix: 'oidc:' }), 'oidc:', 'a given prefix wins, for email too');
  t.equal(untrustedIssuer('a.b'), undefined);
  t.equal(untrustedIssuer('{"iss":"x"}.e30.x'), undefined);
  t.equal(untrustedIssuer(`x.${Buffer.from('{"iss":"accounts.google.com"}').toString('base64url')}.x`), 'https://accounts.google.com');
});

t.test('tokens from the issuer: users, groups, and every refusal', async (t) => {
  const issuer = await startOidcIssuer({ path: '/realm' });
  t.teardown(() => issuer.stop());
  const a = await ready(issuer);
  t.teardown(() => a.close());
  t.ok(a.keys.ready, 'discovery and keys loaded over HTTPS with the test CA');

  const ok = await a.check(await issuer.mint(issuer.claims({ groups: ['dev', 'ops'] })));
  t.same(ok, { user: { name: `${issuer.url}#alice`, groups: ['dev', 'ops'] } }, 'sub with the issuer prefix, groups as given');
  t.same(await a.authenticateToken(await issuer.mint(issuer.claims({ groups: 'solo' }))), { name: `${issuer.url}#alice`, groups: ['solo'] }, 'a string groups claim is one group');
  t.same(await a.authenticateToken(await issuer.mint(issuer.claims())), { name: `${issuer.url}#alice`, groups: [] }, 'no groups claim: no groups');
  t.same(await a.authenticateToken(await issuer.mint(issuer.claims({ groups: null }))), { name: `${issuer.url}#alice`, groups: [] }, 'null groups: none');
  t.same(await a.authenticateToken(await issuer.mint(issuer.claims({ aud: ['other', 'corectl'] }))), { name: `${issuer.url}#alice`, groups: [] }, 'aud array containing the client id');
  t.same(await a.authenticateToken(await issuer.mint(issuer.claims({ nbf: Math.floor(Date.now() / 1000) + 30 }))), { name: `${issuer.url}#alice`, groups: [] }, 'nbf 30 s ahead is within the 1 minute leeway');
  t.same(await a.authenticateToken(await issuer.mint(issuer.claims(), { kid: null })), { name: `${issuer.url}#alice`, groups: [] }, 'no kid: the published keys are tried');

  const refused = async (what: string, token: string, reason: RegExp): Promise<void> => {
    const r = await a.check(token);
    t.match(errorOf(r), reason, what);
    t.equal(await a.authenticateToken(token), undefined, `${what}: no user`);
  };
  await refused('RS384 when only RS256 is allowed', await issuer.mint(issuer.claims(), { alg: 'RS384' }), /unsupported algorithm.*"RS384"/);
  await refused('PS256 when only RS256 is allowed', await issuer.mint(issuer.claims(), { alg: 'PS256' }), /unsupported algorithm.*"PS256"/);
  await refused('HS256 (with the public key as the secret)', await issuer.mint(issuer.claims(), { key: new TextEncoder().encode(JSON.stringify(issuer.current.publicJwk)), kid: issuer.current.kid }), /unsupported algorithm.*"HS256"/);
  await refused('wrong audience', await issuer.mint(issuer.claims({ aud: 'someone-else' })), /expected audience "corectl"/);
  await refused('no audience', await issuer.mint(issuer.claims({ aud: undefined })), /expected audience/);
  await refused('expired', await issuer.mint(issuer.claims({ exp: Math.floor(Date.now() / 1000) - 2 })), /expired/);
  await refused('no exp', await issuer.mint(issuer.claims({ exp: undefined })), /expired/);
  await refused('exp not a number', await issuer.mint(issuer.claims({ exp: 'tomorrow' })), /malformed "exp"/);
  await refused('not yet valid (nbf 2 minutes ahead)', await issuer.mint(issuer.claims({ nbf: Math.floor(Date.now() / 1000) + 120 })), /nbf/);
  const forger = issuer.newKey();
  await refused('bad signature (an unpublished key, the published kid)', await issuer.mint(issuer.claims(), { key: forger, kid: issuer.current.kid }), /failed to verify signature/);
  const good = await issuer.mint(issuer.claims());
  const [h, p] = good.split('.');
  const tampered = `${h}.${Buffer.from(JSON.stringify(issuer.claims({ sub: 'root' }))).toString('base64url')}.${good.split('.')[2]}`;
  await refused('payload changed after signing', tampered, /failed to verify signature/);
  t.ok(p, 'token has a payload');
  await refused('no username claim', await issuer.mint(issuer.claims({ sub: undefined })), /claim not present/);
  await refused('username claim not a string', await issuer.mint(issuer.claims({ sub: 42 })), /not a string/);
  await refused('groups claim of numbers', await issuer.mint(issuer.claims({ groups: [1, 2] })), /groups claim/);

  t.same(await a.check(await issuer.mint(issuer.claims({ iss: 'https://elsewhere.example' }))), { notOurs: true }, 'another issuer: not ours (other authenticators may try it)');
  t.same(await a.check(await issuer.mint(issuer.claims({ iss: `${issuer.url}/` }))), { notOurs: true }, 'the issuer must match exactly (trailing slash)');
  t.same(await a.check('not-a-jwt'), { notOurs: true }, 'not a JWT: not ours');
});

t.test('email as the user name, email_verified, prefixes', async (t) => {
  const issuer = await startOidcIssuer();
  t.teardown(() => issuer.stop());
  const a = await ready(issuer, { usernameClaim: 'email', groupsPrefix: 'oidc:' });
  t.teardown(() => a.close());
  const mint = (extra: Record<string, unknown>): Promise<string> => issuer.mint(issuer.claims({ email: 'alice@example.com', ...extra }));
  t.same(await a.authenticateToken(await mint({ groups: ['dev'] })), { name: 'alice@example.com', groups: ['oidc:dev'] }, 'email: no user prefix; groups prefixed');
  t.same(await a.authenticateToken(await mint({ email_verified: true })), { name: 'alice@example.com', groups: [] }, 'email_verified true');
  t.match(errorOf(await a.check(await mint({ email_verified: false }))), /email not verified/, 'email_verified false is refused');
  t.match(errorOf(await a.check(await mint({ email_verified: 'true' }))), /email_verified/, 'email_verified must be a boolean');

  const b = await ready(issuer, { usernameClaim: 'email', usernamePrefix: 'corp:' });
  t.teardown(() => b.close());
  t.same(await b.authenticateToken(await mint({})), { name: 'corp:alice@example.com', groups: [] }, 'a given prefix applies to email too');
  const c = await ready(issuer, { usernamePrefix: '-' });
  t.teardown(() => c.close());
  t.same(await c.authenticateToken(await mint({ email_verified: false })), { name: 'alice', groups: [] }, '"-": no prefix; email_verified only matters for the email claim');
});

t.test('ES256 only', async (t) => {
  const issuer = await startOidcIssuer({ keyAlg: 'ES256' });
  t.teardown(() => issuer.stop());
  const a = await ready(issuer, { signingAlgs: ['ES256'] });
  t.teardown(() => a.close());
  t.same(await a.authenticateToken(await issuer.mint(issuer.claims())), { name: `${issuer.url}#alice`, groups: [] }, 'an ES256 token');
  const rsa = issuer.newKey('RS256');
  issuer.published.push(rsa);
  t.match(errorOf(await a.check(await issuer.mint(issuer.claims(), { key: rsa }))), /unsupported algorithm.*"RS256"/, 'RS256 is not in the list');
});

t.test('key rotation and unknown key ids: refetch, rate-limited', async (t) => {
  const issuer = await startOidcIssuer();
  t.teardown(() => issuer.stop());
  let now = 1_000_000;
  const a = await ready(issuer, {}, { now: () => now, minRefetchIntervalMs: 5000 });
  t.teardown(() => a.close());
  const before = issuer.requests.jwks;

  const stranger = issuer.newKey();
  t.match(errorOf(await a.check(await issuer.mint(issuer.claims(), { key: stranger }))), /no issuer key with id/, 'unknown kid: refused');
  t.equal(issuer.requests.jwks, before + 1, 'after one refetch of the JWKS');
  t.equal(issuer.requests.discovery, 1, 'discovery is not repeated');
  await Promise.all(Array.from({ length: 20 }, async () => a.check(await issuer.mint(issuer.claims(), { key: stranger, kid: randomBytes(4).toString('hex') }))));
  t.equal(issuer.requests.jwks, before + 1, 'more unknown kids within the interval fetch nothing');

  issuer.rotate();
  const rotated = await issuer.mint(issuer.claims());
  t.match(errorOf(await a.check(rotated)), /no issuer key with id/, 'a rotated key inside the interval is not fetched yet');
  now += 5000;
  t.same(await a.authenticateToken(rotated), { name: `${issuer.url}#alice`, groups: [] }, 'once the interval passed, the new key is fetched and the token accepted');
  t.equal(issuer.requests.jwks, before + 2);
  now += 5000;
  const concurrent = issuer.newKey();
  await Promise.all(Array.from({ length: 10 }, async () => a.check(await issuer.mint(issuer.claims(), { key: concurrent }))));
  t.equal(issuer.requests.jwks, before + 3, 'concurrent unknown kids share one fetch');
});

t.test('issuer down at start: not initialized, then retried until it works', async (t) => {
  const issuer = await startOidcIssuer({ listen: false });
  t.teardown(() => issuer.stop());
  const lines: string[] = [];
  const log = pino({ level: 'trace' }, new Writable({ write(c: Buffer, _e, cb) { lines.push(c.toString()); cb(); } }));
  const a = new OidcAuthenticator(options(issuer), { log, caPem: issuer.caPem, initialBackoffMs: 10, maxBackoffMs: 100 });
  t.teardown(() => a.close());
  const started = a.start();
  const token = await issuer.mint(issuer.claims());
  t.match(errorOf(await a.check(token)), /not initialized/, 'our token fails while the issuer is unreachable');
  await waitFor('a logged retry', () => lines.some((l) => l.includes('initializing the authenticator failed')));
  await issuer.start();
  await started;
  t.ok(a.keys.ready);
  t.same(await a.authenticateToken(token), { name: `${issuer.url}#alice`, groups: [] }, 'accepted once the issuer answers');
  t.notOk(lines.some((l) => l.includes(token) || l.includes(token.split('.')[2]!)), 'the token is never logged');
});

t.test('a long outage: retries do not pile up listeners', async (t) => {
  const issuer = await startOidcIssuer({ listen: false });
  t.teardown(() => issuer.stop());
  const warnings: string[] = [];
  const onWarning = (w: Error): void => { warnings.push(w.name); };
  process.on('warning', onWarning);
  t.teardown(() => { process.off('warning', onWarning); });
  let attempts = 0;
  const log = pino({ level: 'error' }, new Writable({ write(_c: Buffer, _e, cb) { attempts++; cb(); } }));
  const a = new OidcAuthenticator(options(issuer), { log, caPem: issuer.caPem, initialBackoffMs: 1, maxBackoffMs: 2 });
  t.teardown(() => a.close());
  void a.start();
  await waitFor('30 failed attempts', () => attempts >= 30);
  a.close();
  await new Promise((r) => setImmediate(r));
  t.same(warnings.filter((w) => w === 'MaxListenersExceededWarning'), [], 'no listener leak warning');
});

t.test('discovery naming another issuer, and an issuer certificate we do not trust, never load', async (t) => {
  const issuer = await startOidcIssuer();
  t.teardown(() => issuer.stop());
  issuer.discoveryIssuer = 'https://impostor.example';
  const lines: string[] = [];
  const log = pino({ level: 'info' }, new Writable({ write(c: Buffer, _e, cb) { lines.push(c.toString()); cb(); } }));
  const a = new OidcAuthenticator(options(issuer), { log, caPem: issuer.caPem, initialBackoffMs: 10, maxBackoffMs: 50 });
  t.teardown(() => a.close());
  void a.start();
  await waitFor('two discovery attempts', () => issuer.requests.discovery >= 2);
  t.notOk(a.keys.ready, 'a mismatching discovery issuer is not accepted');
  t.ok(lines.some((l) => l.includes('issuer did not match')), 'and the reason is logged');
  t.equal(issuer.requests.jwks, 0, 'its keys are never fetched');
  a.close();

  delete issuer.discoveryIssuer;
  const lines2: string[] = [];
  const log2 = pino({ level: 'info' }, new Writable({ write(c: Buffer, _e, cb) { lines2.push(c.toString()); cb(); } }));
  const b = new OidcAuthenticator(options(issuer), { log: log2, initialBackoffMs: 10, maxBackoffMs: 50 });
  t.teardown(() => b.close());
  void b.start();
  await waitFor('a failed attempt', () => lines2.some((l) => l.includes('initializing the authenticator failed')));
  t.notOk(b.keys.ready, 'without --oidc-ca-file the host roots do not trust the test CA');
  t.match(errorOf(await b.check(await issuer.mint(issuer.claims()))), /not initialized/);
});

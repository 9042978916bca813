/**
 * The service-account token authenticator on its own (no server): signature over several keys
 * (with and without kid, keys from certificates and private-key PEM), issuer and audience
 * checks, exp/nbf with leeway on an injected clock, lookup (not ready, uid mismatch, deleting
 * objects), legacy tokens, and the issuer's expiration cap.
 */
import { generateKeyPairSync } from 'node:crypto';
import { SignJWT } from 'jose';
import t from 'tap';
import {
  signingKeyFromPem, verificationKeyOf, verificationKeysFromPem, type SigningKey,
} from '../../src/auth/service-account-keys.js';
import { ServiceAccountTokenAuthenticator, type LookedUpObject, type ServiceAccountLookup } from '../../src/auth/service-account-token.js';
import { TokenIssuer } from '../../src/daemons/apiserver/serviceaccount/token-issuer.js';
import { createCA } from '../../src/util/pki.js';
import { createPublicKey } from 'node:crypto';

const pem = (kind: 'ec' | 'rsa'): string => (kind === 'ec'
  ? generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
  : generateKeyPairSync('rsa', { modulusLength: 2048 })).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

const ec = signingKeyFromPem(pem('ec'));
const rsa = signingKeyFromPem(pem('rsa'));
const other = signingKeyFromPem(pem('ec'));
const pub = (k: SigningKey): ReturnType<typeof verificationKeyOf> => verificationKeyOf(createPublicKey(k.key));
const ISS = 'https://iss.test';
let now = 1_800_000_000;

const issuer = (k: SigningKey, max = 0): TokenIssuer => new TokenIssuer({ signer: k, issuer: ISS, apiAudiences: ['api'], maxExpirationSeconds: max, now: () => now });
const subject = { namespace: 'ns', serviceAccount: { name: 'sa', uid: 'sa-uid' }, pod: { name: 'p', uid: 'p-uid' } };

const objects = new Map<string, LookedUpObject & { token?: string }>();
const lookup: ServiceAccountLookup = {
  serviceAccount: async (ns, n) => objects.get(`sa/${ns}/${n}`),
  pod: async (ns, n) => objects.get(`pod/${ns}/${n}`),
  secret: async (ns, n) => objects.get(`secret/${ns}/${n}`),
  node: async (n) => objects.get(`node/${n}`),
};
let ready = true;
const authn = new ServiceAccountTokenAuthenticator({ keys: [pub(ec), pub(rsa)], issuers: [ISS], audiences: ['api'], lookup: () => (ready ? lookup : undefined), now: () => now });

t.beforeEach(() => {
  objects.clear();
  objects.set('sa/ns/sa', { uid: 'sa-uid', deleting: false });
  objects.set('pod/ns/p', { uid: 'p-uid', deleting: false });
  ready = true;
});

t.test('bound tokens: keys, issuer, audience, times', async (t) => {
  for (const k of [ec, rsa]) {
    const { token } = await issuer(k).issue(subject, [], 3600);
    const u = await authn.authenticateToken(token);
    t.equal(u?.name, 'system:serviceaccount:ns:sa', `${k.alg} token`);
    t.equal(u?.uid, 'sa-uid');
    t.same(u?.groups, ['system:serviceaccounts', 'system:serviceaccounts:ns']);
    t.same(u?.extra?.['authentication.kubernetes.io/pod-name'], ['p']);
    t.match(u?.extra?.['authentication.kubernetes.io/credential-id']?.[0], /^JTI=/);
  }
  t.equal(await authn.authenticateToken((await issuer(other).issue(subject, [], 3600)).token), undefined, 'unknown key');
  t.equal(await authn.authenticateToken((await issuer(ec).issue(subject, ['vault'], 3600)).token), undefined, 'no API audience');
  const { token } = await issuer(ec).issue(subject, [], 600);
  now += 600 + 59;
  t.ok(await authn.authenticateToken(token), 'within the 60 s leeway');
  now += 2;
  t.equal(await authn.authenticateToken(token), undefined, 'expired');
  const early = await issuer(ec).issue(subject, [], 600);
  now -= 1000;
  t.equal(await authn.authenticateToken(early.token), undefined, 'not valid yet');
  now += 1000;
  const foreign = await new SignJWT({}).setProtectedHeader({ alg: ec.alg }).setIssuer('https://elsewhere').sign(ec.key);
  t.equal(await authn.authenticateToken(foreign), undefined, 'another issuer: not ours');
  t.equal(await authn.authenticateToken('plain-token'), undefined, 'not a JWT');
  const noKid = await new SignJWT({ 'kubernetes.io': { namespace: 'ns', serviceaccount: { name: 'sa', uid: 'sa-uid' } } })
    .setProtectedHeader({ alg: rsa.alg }).setIssuer(ISS).setSubject('system:serviceaccount:ns:sa').setAudience('api').setExpirationTime(now + 100).sign(rsa.key);
  t.equal((await authn.authenticateToken(noKid))?.name, 'system:serviceaccount:ns:sa', 'a token without kid tries every key');
});

t.test('lookup revokes', async (t) => {
  const { token } = await issuer(ec).issue(subject, [], 3600);
  ready = false;
  t.equal(await authn.authenticateToken(token), undefined, 'store not ready');
  ready = true;
  objects.set('pod/ns/p', { uid: 'other', deleting: false });
  t.equal(await authn.authenticateToken(token), undefined, 'pod re-created');
  objects.set('pod/ns/p', { uid: 'p-uid', deleting: true });
  t.equal(await authn.authenticateToken(token), undefined, 'pod being deleted');
  objects.set('pod/ns/p', { uid: 'p-uid', deleting: false });
  objects.delete('sa/ns/sa');
  t.equal(await authn.authenticateToken(token), undefined, 'account deleted');
  const noLookup = new ServiceAccountTokenAuthenticator({ keys: [pub(ec)], issuers: [ISS], audiences: ['api'], now: () => now });
  t.ok(await noLookup.authenticateToken(token), 'without lookup the signature and claims suffice');
});

t.test('legacy tokens', async (t) => {
  const legacy = await new SignJWT({
    'kubernetes.io/serviceaccount/namespace': 'ns', 'kubernetes.io/serviceaccount/secret.name': 's',
    'kubernetes.io/serviceaccount/service-account.name': 'sa', 'kubernetes.io/serviceaccount/service-account.uid': 'sa-uid',
  }).setProtectedHeader({ alg: ec.alg, kid: ec.kid }).setIssuer('kubernetes/serviceaccount').setSubject('system:serviceaccount:ns:sa').sign(ec.key);
  objects.set('secret/ns/s', { uid: 's', deleting: false, token: legacy });
  t.equal((await authn.authenticateToken(legacy))?.name, 'system:serviceaccount:ns:sa');
  objects.set('secret/ns/s', { uid: 's', deleting: false, token: 'rotated' });
  t.equal(await authn.authenticateToken(legacy), undefined, 'the Secret holds another token');
  const noLegacy = new ServiceAccountTokenAuthenticator({ keys: [pub(ec)], issuers: [ISS], audiences: ['api'], acceptLegacy: false });
  t.equal(await noLegacy.authenticateToken(legacy), undefined);
});

t.test('verification keys from PEM: certificates, private keys, several per file', async (t) => {
  const ca = await createCA({ commonName: 'k' });
  const keys = verificationKeysFromPem(`${ca.certPem}\n${pem('rsa')}\n${createPublicKey(ec.key).export({ type: 'spki', format: 'pem' }).toString()}`, 'test');
  t.equal(keys.length, 3);
  t.equal(keys[2]?.kid, ec.kid, 'kid is the SPKI hash, same for the private and public form');
  t.throws(() => verificationKeysFromPem('nothing here', 'file'), /no PEM key/);
});

t.test('the issuer caps the lifetime', async (t) => {
  const capped = await issuer(ec, 1200).issue(subject, [], 7200);
  t.equal(capped.expiresAt - now, 1200);
  const free = await issuer(ec).issue(subject, [], 7200);
  t.equal(free.expiresAt - now, 7200);
});

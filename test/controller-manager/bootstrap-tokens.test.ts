// The bootstrapsigner and tokencleaner controllers (both off by default, as in Kubernetes),
// run by a real controller manager against a real API server: the signer keeps one detached JWS
// per signing token on kube-public/cluster-info (checked with jose against the token secret) and
// drops those of tokens that go away; the cleaner deletes expired token Secrets only.
import { compactVerify } from 'jose';
import t from 'tap';
import type { KubeObject } from '../../src/api/resources/types.js';
import type { ResourceRef } from '../../src/client/rest-client.js';
import { computeDetachedSignature, detachedSignatureValid } from '../../src/auth/bootstrap/jws.js';
import { IMPLEMENTED, isControllerEnabled } from '../../src/daemons/controller-manager/controller-registry.js';
import { startCluster, waitFor } from './fixtures/cluster.js';

const SECRETS = (namespace: string): ResourceRef => ({ group: '', version: 'v1', resource: 'secrets', namespace });
const PUBLIC_CMS: ResourceRef = { group: '', version: 'v1', resource: 'configmaps', namespace: 'kube-public' };
const b64 = (s: string): string => Buffer.from(s).toString('base64');
const rfc3339 = (ms: number): string => new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');
type Data = Record<string, string>;
const dataOf = (o: KubeObject): Data => (o.data as Data | undefined) ?? {};

function tokenSecret(id: string, secret: string, extra: Record<string, string | undefined> = {}, type = 'bootstrap.kubernetes.io/token'): KubeObject {
  const data: Record<string, string | undefined> = {
    'token-id': id, 'token-secret': secret, 'usage-bootstrap-authentication': 'true', 'usage-bootstrap-signing': 'true', ...extra,
  };
  return {
    apiVersion: 'v1', kind: 'Secret', metadata: { name: `bootstrap-token-${id}`, namespace: 'kube-system' }, type,
    data: Object.fromEntries(Object.entries(data).filter(([, v]) => v !== undefined).map(([k, v]) => [k, b64(v!)])),
  } as KubeObject;
}

/** Verifies a detached JWS as a JOSE library would: the payload put back between the dots. */
async function verifies(detached: string, content: string, id: string, secret: string): Promise<boolean> {
  const [header, empty, sig] = detached.split('.');
  if (empty !== '') return false;
  const key = new Uint8Array(32);
  key.set(Buffer.from(secret));
  try {
    const r = await compactVerify(`${header}.${Buffer.from(content).toString('base64url')}.${sig}`, key, { algorithms: ['HS256'] });
    return r.protectedHeader.kid === id && Buffer.from(r.payload).toString() === content;
  } catch {
    return false;
  }
}

t.test('both are known, implemented and off by default', async (t) => {
  for (const name of ['bootstrapsigner', 'tokencleaner']) {
    t.notOk(isControllerEnabled(name, ['*']), `${name}: off with "*"`);
    t.ok(isControllerEnabled(name, ['*', name]), `${name}: on when named`);
    t.ok(IMPLEMENTED[name as keyof typeof IMPLEMENTED], `${name}: implemented`);
  }
});

t.test('the detached signature is Kubernetes\' (its test vectors) and verifies with jose', async (t) => {
  // Kubernetes' cluster-bootstrap/token/jws test: content, id and secret, and the results it expects.
  const content = 'Hello from the other side. I must have called a thousand times.';
  const [id, secret] = ['joshua', 'my voice is my passcode'];
  const sig = computeDetachedSignature(content, id, secret);
  t.equal(sig, 'eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..VShe2taLd-YTrmWuRkcL_8QTNDHYxQIEBsAYYiIj1_8');
  t.equal(computeDetachedSignature('', id, secret), 'eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..7Ui1ALizW4jXphVUB7xUqC9vLYLL9RZeOFfVLoB7Tgk', 'empty content');
  t.equal(computeDetachedSignature(content, id, ''), 'eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..UfkqvDGiIFxrMnFseDj9LYJOLNrvjW8aHhF71mvvAs8', 'empty secret');
  t.ok(await verifies(sig, content, id, secret), 'jose verifies it');
  t.ok(detachedSignatureValid(sig, content, id, secret));
  t.notOk(detachedSignatureValid(sig + 'foo', content, id, secret), 'a longer signature');
  t.notOk(detachedSignatureValid(sig, content + '!', id, secret), 'other content');
  t.notOk(detachedSignatureValid(sig, content, id, 'my voice is my passcodf'), 'other secret');
});

t.test('bootstrapsigner: signatures follow the tokens and the content', async (t) => {
  const c = await startCluster(['--controllers=bootstrapsigner']);
  t.teardown(() => c.stop());
  const content = 'apiVersion: v1\nkind: Config\nclusters: []\n';
  await c.client.create(PUBLIC_CMS, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cluster-info', namespace: 'kube-public' }, data: { kubeconfig: content, 'jws-kubeconfig-zzzzzz': 'forged', other: 'kept' } });
  await c.client.create(SECRETS('kube-system'), tokenSecret('aaaaaa', 'aaaaaaaaaaaaaaaa'));
  await c.client.create(SECRETS('kube-system'), tokenSecret('nosign', 'aaaaaaaaaaaaaaaa', { 'usage-bootstrap-signing': undefined }));
  await c.client.create(SECRETS('kube-system'), tokenSecret('falsey', 'aaaaaaaaaaaaaaaa', { 'usage-bootstrap-signing': 'false' }));
  await c.client.create(SECRETS('kube-system'), tokenSecret('expird', 'aaaaaaaaaaaaaaaa', { expiration: rfc3339(Date.now() - 60_000) }));
  await c.client.create(SECRETS('kube-system'), tokenSecret('idmism', 'aaaaaaaaaaaaaaaa', { 'token-id': 'other1' }));
  await c.client.create(SECRETS('kube-system'), tokenSecret('opaque', 'aaaaaaaaaaaaaaaa', {}, 'Opaque'));
  // Created last: once its signature is there, every Secret above has been seen.
  await c.client.create(SECRETS('kube-system'), tokenSecret('bbbbbb', 'bbbbbbbbbbbbbbbb'));
  const get = (): Promise<KubeObject> => c.client.get(PUBLIC_CMS, 'cluster-info');
  const signed = await waitFor('both signatures', async () => { const cm = await get(); return dataOf(cm)['jws-kubeconfig-bbbbbb'] && dataOf(cm)['jws-kubeconfig-aaaaaa'] ? cm : false; });
  t.same(Object.keys(dataOf(signed)).sort(), ['jws-kubeconfig-aaaaaa', 'jws-kubeconfig-bbbbbb', 'kubeconfig', 'other'],
    'one per signing token; none for tokens not for signing, expired, with a mismatched id or of another type; the forged one is gone, other keys stay');
  t.ok(await verifies(dataOf(signed)['jws-kubeconfig-aaaaaa']!, content, 'aaaaaa', 'aaaaaaaaaaaaaaaa'), 'aaaaaa\'s signature verifies with its secret');
  t.ok(await verifies(dataOf(signed)['jws-kubeconfig-bbbbbb']!, content, 'bbbbbb', 'bbbbbbbbbbbbbbbb'), 'bbbbbb\'s too');
  t.notOk(await verifies(dataOf(signed)['jws-kubeconfig-aaaaaa']!, content, 'aaaaaa', 'bbbbbbbbbbbbbbbb'), 'not with another secret');

  const changed = 'apiVersion: v1\nkind: Config\nclusters: [{name: x}]\n';
  await c.client.update(PUBLIC_CMS, { ...signed, data: { ...dataOf(signed), kubeconfig: changed } });
  const resigned = await waitFor('signatures of the new content', async () => { const cm = await get(); return await verifies(dataOf(cm)['jws-kubeconfig-aaaaaa'] ?? '', changed, 'aaaaaa', 'aaaaaaaaaaaaaaaa') && cm; });
  t.ok(await verifies(dataOf(resigned)['jws-kubeconfig-bbbbbb']!, changed, 'bbbbbb', 'bbbbbbbbbbbbbbbb'), 'a changed kubeconfig is signed again');

  await c.client.delete(SECRETS('kube-system'), 'bootstrap-token-aaaaaa');
  const dropped = await waitFor('the deleted token\'s signature to go', async () => { const cm = await get(); return !dataOf(cm)['jws-kubeconfig-aaaaaa'] && cm; });
  t.ok(dataOf(dropped)['jws-kubeconfig-bbbbbb'], 'the other token\'s signature stays');

  // A token that expires soon: its signature goes when it does (no cleaner runs here).
  await c.client.create(SECRETS('kube-system'), tokenSecret('shortl', 'cccccccccccccccc', { expiration: rfc3339(Date.now() + 3000) }));
  await waitFor('the short-lived token signed', async () => !!dataOf(await get())['jws-kubeconfig-shortl']);
  await waitFor('its signature gone after expiry', async () => !dataOf(await get())['jws-kubeconfig-shortl']);
  t.ok(await c.client.get(SECRETS('kube-system'), 'bootstrap-token-shortl'), 'the expired token itself is still there (the cleaner is off)');

  const tok = await c.client.get(SECRETS('kube-system'), 'bootstrap-token-bbbbbb');
  await c.client.update(SECRETS('kube-system'), { ...tok, data: { ...dataOf(tok), 'usage-bootstrap-signing': b64('false') } });
  await waitFor('usage-bootstrap-signing turned off drops the signature', async () => !dataOf(await get())['jws-kubeconfig-bbbbbb']);
  t.pass('signatures follow the usage');
});

t.test('tokencleaner: expired token Secrets are deleted, nothing else', async (t) => {
  const c = await startCluster(['--controllers=tokencleaner']);
  t.teardown(() => c.stop());
  const past = rfc3339(Date.now() - 60_000);
  await c.client.create(SECRETS('kube-system'), tokenSecret('keep01', 'aaaaaaaaaaaaaaaa'));
  await c.client.create(SECRETS('kube-system'), tokenSecret('keep02', 'aaaaaaaaaaaaaaaa', { expiration: rfc3339(Date.now() + 3600_000) }));
  await c.client.create(SECRETS('kube-system'), tokenSecret('opaque', 'aaaaaaaaaaaaaaaa', { expiration: past }, 'Opaque'));
  await c.client.create(SECRETS('default'), { ...tokenSecret('elsewh', 'aaaaaaaaaaaaaaaa', { expiration: past }), metadata: { name: 'bootstrap-token-elsewh', namespace: 'default' } });
  await c.client.create(SECRETS('kube-system'), tokenSecret('gone01', 'aaaaaaaaaaaaaaaa', { expiration: past }));
  await c.client.create(SECRETS('kube-system'), tokenSecret('gone02', 'aaaaaaaaaaaaaaaa', { expiration: 'not a time' }));
  await c.client.create(SECRETS('kube-system'), tokenSecret('soon01', 'aaaaaaaaaaaaaaaa', { expiration: rfc3339(Date.now() + 3000) }));
  const absent = async (ns: string, name: string): Promise<boolean> => {
    try { await c.client.get(SECRETS(ns), name); return false; } catch (e) { if ((e as { code?: number }).code === 404) return true; throw e; }
  };
  await waitFor('the expired token deleted', () => absent('kube-system', 'bootstrap-token-gone01'));
  await waitFor('the token with an unparseable expiration deleted', () => absent('kube-system', 'bootstrap-token-gone02'));
  t.notOk(await absent('kube-system', 'bootstrap-token-soon01'), 'a token expiring later is kept for now');
  await waitFor('the later token deleted once it expires', () => absent('kube-system', 'bootstrap-token-soon01'));
  t.notOk(await absent('kube-system', 'bootstrap-token-keep01'), 'a token without expiration stays');
  t.notOk(await absent('kube-system', 'bootstrap-token-keep02'), 'an unexpired token stays');
  t.notOk(await absent('kube-system', 'bootstrap-token-opaque'), 'an Opaque Secret with an expiration key stays');
  t.notOk(await absent('default', 'bootstrap-token-elsewh'), 'a token Secret outside kube-system stays');
});

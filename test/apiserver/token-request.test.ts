/**
 * TokenRequest (serviceaccounts/token) and service-account token authentication on a real
 * in-process API server: claims, defaults and validation, pod binding, lookup (a deleted pod
 * or account revokes), audiences, legacy Secret tokens, and kubectl `create token` +
 * `auth whoami` with the issued token.
 */
import { execFile } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SignJWT } from 'jose';
import t from 'tap';
import { isApiError } from '../../src/api/meta/status.js';
import type { KubeObject } from '../../src/api/resources/types.js';
import { signingKeyFromPem } from '../../src/auth/service-account-keys.js';
import { loadCoreconfig } from '../../src/client/coreconfig.js';
import { RestClient } from '../../src/client/rest-client.js';
import { h2request, startApiserver } from '../helpers/apiserver.js';
import { kubectl } from '../helpers/kubectl.js';

const ISSUER = 'https://issuer.corectl.test';
const dir = await mkdtemp(join(tmpdir(), 'corectl-tokenrequest-'));
const keyPem = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const keyFile = join(dir, 'sa.key');
await writeFile(keyFile, keyPem, { mode: 0o600 });

const api = await startApiserver({ args: ['--feature-gates=TokenRequest=true', `--service-account-signing-key-file=${keyFile}`, `--service-account-issuer=${ISSUER}`] });
const client = new RestClient({ connection: await loadCoreconfig({ path: api.coreconfigPath }), contentType: 'application/json' });
t.teardown(async () => {
  client.close();
  await api.stop();
  await rm(dir, { recursive: true, force: true });
});

const SA = { group: '', version: 'v1', resource: 'serviceaccounts', namespace: 'default' };
const PODS = { group: '', version: 'v1', resource: 'pods', namespace: 'default' };
const SECRETS = { group: '', version: 'v1', resource: 'secrets', namespace: 'default' };

type TokenRequest = KubeObject & { spec?: { audiences?: string[]; expirationSeconds?: number }; status?: { token?: string; expirationTimestamp?: string } };

function requestToken(sa: string, spec: Record<string, unknown> = {}): Promise<TokenRequest> {
  return client.create<TokenRequest>(SA, { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec }, { name: sa, subresource: 'token' });
}

function claims(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;
}

/** GET as the token's holder (no client certificate); the status code and body. */
async function asToken(token: string, path = '/api/v1/namespaces/default/pods'): Promise<{ status: number; body: string }> {
  const r = await h2request(api.url, { path, ca: await readFile(api.caFile), headers: { authorization: `Bearer ${token}` } });
  return { status: r.status, body: r.body };
}

async function whoami(token: string): Promise<{ username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> }> {
  const ca = await readFile(api.caFile);
  const r = await h2request(api.url, {
    path: '/apis/authentication.k8s.io/v1/selfsubjectreviews', method: 'POST', ca,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' }),
  });
  if (r.status !== 201) throw new Error(`whoami: ${r.status} ${r.body}`);
  return (JSON.parse(r.body) as { status: { userInfo: Record<string, never> } }).status.userInfo;
}

const robot = await client.create<KubeObject>(SA, { metadata: { name: 'robot' } });

t.test('a token for a service account: claims, defaults, and it authenticates', async (t) => {
  const before = Math.floor(Date.now() / 1000);
  const tr = await requestToken('robot');
  t.equal(tr.kind, 'TokenRequest');
  t.same(tr.spec?.audiences, [ISSUER], 'audiences default to the API audiences (the issuer)');
  t.equal(tr.spec?.expirationSeconds, 3600);
  const token = tr.status?.token ?? '';
  const c = claims(token);
  t.equal(c.iss, ISSUER);
  t.equal(c.sub, 'system:serviceaccount:default:robot');
  t.same(c.aud, [ISSUER]);
  t.equal((c.exp as number) - (c.iat as number), 3600);
  t.ok((c.iat as number) >= before - 1 && c.nbf === c.iat);
  t.same(c['kubernetes.io'], { namespace: 'default', serviceaccount: { name: 'robot', uid: robot.metadata?.uid } });
  t.equal(Date.parse(tr.status?.expirationTimestamp ?? ''), (c.exp as number) * 1000, 'expirationTimestamp matches exp');
  t.equal((await asToken(token)).status, 200);
  const me = await whoami(token);
  t.equal(me.username, 'system:serviceaccount:default:robot');
  t.equal(me.uid, robot.metadata?.uid);
  t.same(me.groups, ['system:serviceaccounts', 'system:serviceaccounts:default', 'system:authenticated']);
});

t.test('validation and missing objects', async (t) => {
  const short = await requestToken('robot', { expirationSeconds: 60 }).catch((e: unknown) => e);
  t.ok(isApiError(short) && short.code === 422);
  t.match((short as Error).message, 'TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes');
  const missing = await requestToken('nobody').catch((e: unknown) => e);
  t.ok(isApiError(missing) && missing.code === 404);
  t.match((missing as Error).message, 'serviceaccounts "nobody" not found');
  const kind = await requestToken('robot', { boundObjectRef: { kind: 'ConfigMap', apiVersion: 'v1', name: 'x' } }).catch((e: unknown) => e);
  t.ok(isApiError(kind) && kind.code === 400);
  t.match((kind as Error).message, 'cannot bind token to object of type /v1, Kind=ConfigMap');
  const long = await requestToken('robot', { expirationSeconds: 7200 });
  const c = claims(long.status?.token ?? '');
  t.equal((c.exp as number) - (c.iat as number), 7200);
});

t.test('a token bound to a pod lives as long as the pod', async (t) => {
  const pod = await client.create<KubeObject>(PODS, { metadata: { name: 'bound' }, spec: { serviceAccountName: 'robot', containers: [{ name: 'c', image: 'busybox' }] } });
  await client.create<KubeObject>(PODS, { metadata: { name: 'other-sa' }, spec: { containers: [{ name: 'c', image: 'busybox' }] } });
  const wrongSa = await requestToken('robot', { boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'other-sa' } }).catch((e: unknown) => e);
  t.ok(isApiError(wrongSa) && wrongSa.code === 400, 'a pod running as another account cannot be bound');
  const wrongUid = await requestToken('robot', { boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'bound', uid: 'not-the-uid' } }).catch((e: unknown) => e);
  t.ok(isApiError(wrongUid) && wrongUid.code === 409, 'uid mismatch is a conflict');
  const tr = await requestToken('robot', { boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'bound', uid: pod.metadata?.uid } });
  const token = tr.status?.token ?? '';
  t.same((claims(token)['kubernetes.io'] as Record<string, unknown>).pod, { name: 'bound', uid: pod.metadata?.uid });
  const me = await whoami(token);
  t.same(me.extra?.['authentication.kubernetes.io/pod-name'], ['bound']);
  t.same(me.extra?.['authentication.kubernetes.io/pod-uid'], [pod.metadata?.uid]);
  await client.delete(PODS, 'bound', { gracePeriodSeconds: 0 });
  await client.delete(PODS, 'other-sa', { gracePeriodSeconds: 0 });
  t.equal((await asToken(token)).status, 401, 'the pod is gone: the token no longer authenticates');
});

t.test('a deleted (or re-created) service account revokes its tokens', async (t) => {
  await client.create<KubeObject>(SA, { metadata: { name: 'temp' } });
  const token = (await requestToken('temp')).status?.token ?? '';
  t.equal((await asToken(token)).status, 200);
  await client.delete(SA, 'temp');
  t.equal((await asToken(token)).status, 401, 'deleted');
  await client.create<KubeObject>(SA, { metadata: { name: 'temp' } });
  t.equal((await asToken(token)).status, 401, 're-created with another uid');
});

t.test('audiences: a token for another audience is not an API credential', async (t) => {
  const tr = await requestToken('robot', { audiences: ['vault'] });
  t.same(claims(tr.status?.token ?? '').aud, ['vault']);
  t.equal((await asToken(tr.status?.token ?? '')).status, 401);
});

t.test('legacy Secret tokens authenticate while the Secret holds them', async (t) => {
  const signer = signingKeyFromPem(keyPem);
  const legacy = await new SignJWT({
    'kubernetes.io/serviceaccount/namespace': 'default',
    'kubernetes.io/serviceaccount/secret.name': 'robot-token',
    'kubernetes.io/serviceaccount/service-account.name': 'robot',
    'kubernetes.io/serviceaccount/service-account.uid': robot.metadata?.uid ?? '',
  }).setProtectedHeader({ alg: signer.alg, kid: signer.kid }).setIssuer('kubernetes/serviceaccount').setSubject('system:serviceaccount:default:robot').sign(signer.key);
  t.equal((await asToken(legacy)).status, 401, 'no Secret holds it yet');
  await client.create<KubeObject>(SECRETS, {
    metadata: { name: 'robot-token', annotations: { 'kubernetes.io/service-account.name': 'robot', 'kubernetes.io/service-account.uid': robot.metadata?.uid ?? '' } },
    type: 'kubernetes.io/service-account-token', data: { token: Buffer.from(legacy).toString('base64') },
  });
  t.equal((await asToken(legacy)).status, 200);
  t.equal((await whoami(legacy)).username, 'system:serviceaccount:default:robot');
  await client.delete(SECRETS, 'robot-token');
  t.equal((await asToken(legacy)).status, 401, 'Secret deleted: revoked');
});

const k = kubectl(33) ?? kubectl(30) ?? kubectl(29);
t.test('kubectl create token, then auth whoami with it', { skip: k ? false : 'no kubectl.1.29+ installed' }, async (t) => {
  const run = (args: string[], config = api.coreconfigPath): Promise<string> => new Promise((resolve, reject) => {
    execFile(k!, [`--kubeconfig=${config}`, ...args], { timeout: 30_000 }, (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout)));
  });
  const token = (await run(['create', 'token', 'robot', '--duration=20m'])).trim();
  const c = claims(token);
  t.equal((c.exp as number) - (c.iat as number), 1200);
  // A kubeconfig with only the token (a client certificate would win over it).
  const caData = Buffer.from(await readFile(api.caFile)).toString('base64');
  const cfg = join(dir, 'token.kubeconfig');
  await writeFile(cfg, [
    'apiVersion: v1', 'kind: Config', 'current-context: sa',
    'clusters:', '- name: c', '  cluster:', `    server: ${api.url}`, `    certificate-authority-data: ${caData}`,
    'users:', '- name: sa', '  user:', `    token: ${token}`,
    'contexts:', '- name: sa', '  context:', '    cluster: c', '    user: sa', '',
  ].join('\n'));
  const who = JSON.parse(await run(['auth', 'whoami', '-o', 'json'], cfg)) as { status: { userInfo: { username: string; groups: string[] } } };
  t.equal(who.status.userInfo.username, 'system:serviceaccount:default:robot');
  t.ok(who.status.userInfo.groups.includes('system:serviceaccounts:default'));
  const pods = await run(['get', 'pods', '-o', 'name'], cfg);
  t.type(pods, 'string', 'get pods works with the token (AlwaysAllow)');
});

t.test('without a signing key the subresource says why', async (t) => {
  const plain = await startApiserver();
  t.teardown(() => plain.stop());
  const c2 = new RestClient({ connection: await loadCoreconfig({ path: plain.coreconfigPath }), contentType: 'application/json' });
  t.teardown(() => c2.close());
  await c2.create(SA, { metadata: { name: 'robot' } });
  const e = await c2.create(SA, { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: {} }, { name: 'robot', subresource: 'token' }).catch((x: unknown) => x);
  t.ok(isApiError(e) && e.code === 404);
  t.match((e as Error).message, '--service-account-signing-key-file');
});

// HTTP basic (--basic-auth-file) and the token webhook (--authentication-token-webhook-config-file)
// on the full in-process API server, over raw HTTP/2 and with real kubectl 1.27 and 1.33:
// who each method authenticates, the refusals (wrong password, unknown user, a token the
// webhook refuses, the webhook down or failing), the webhook's answer cache and its retries,
// and that a broken webhook costs only its own tokens.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { h2request, runExpectingStartFailure, startApiserver, type StartedApiserver } from '../helpers/apiserver.js';
import { kubectl } from '../helpers/kubectl.js';
import { tokenReviewServer, type TokenReviewServer } from '../helpers/webhook-server.js';

const b64 = (s: string): string => Buffer.from(s).toString('base64');
const k127 = kubectl(27);
const k133 = kubectl(33);

const PASSWORDS = [
  's3cret,alice,uid-alice,"devs,ops"',
  'pw-bob,bob,uid-bob',
  '',
].join('\n');

function webhookConfig(server: string, caPem: string): string {
  return [
    'apiVersion: v1', 'kind: Config', 'current-context: webhook',
    'clusters:', '- name: authn', '  cluster:', `    server: ${server}`, `    certificate-authority-data: ${b64(caPem)}`,
    'users:', '- name: apiserver', '  user:', '    token: apiserver-secret',
    'contexts:', '- name: webhook', '  context:', '    cluster: authn', '    user: apiserver', '',
  ].join('\n');
}

/** A coreconfig with the cluster only: credentials come from kubectl's own flags. */
function anonymousConfig(s: StartedApiserver): string {
  return [
    'apiVersion: v1', 'kind: Config', 'current-context: test',
    'clusters:', '- name: test', '  cluster:', `    server: ${s.url}`, `    certificate-authority-data: ${b64(s.ca.certPem)}`,
    'users:', '- name: nobody', '  user: {}',
    'contexts:', '- name: test', '  context:', '    cluster: test', '    user: nobody', '',
  ].join('\n');
}

function run(bin: string, config: string, cacheDir: string, args: string[]): Promise<{ code: number; out: string; err: string }> {
  // execFile (async): the server runs in this process, so the event loop must stay free.
  return new Promise((resolve) => {
    execFile(bin, [...args, '--kubeconfig', config, '--cache-dir', cacheDir], { timeout: 60_000 },
      (e, out, err) => resolve({ code: e ? (typeof e.code === 'number' ? e.code : 1) : 0, out, err }));
  });
}

interface Who { username: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> }

/** The requester as the server sees it (SelfSubjectReview v1): `auth whoami` on 1.33, a raw create on 1.27 (its whoami speaks only v1alpha1/v1beta1). */
async function whoami(minor: number, bin: string, config: string, dir: string, creds: string[]): Promise<{ code: number; who?: Who; err: string }> {
  const cache = join(dir, `kcache-${minor}`);
  let r;
  if (minor >= 28) {
    r = await run(bin, config, cache, ['auth', 'whoami', '-o', 'json', ...creds]);
  } else {
    const file = join(dir, 'ssr.json');
    await writeFile(file, JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' }));
    r = await run(bin, config, cache, ['create', '--raw', '/apis/authentication.k8s.io/v1/selfsubjectreviews', '-f', file, ...creds]);
  }
  if (r.code !== 0) return { code: r.code, err: r.err };
  return { code: 0, who: (JSON.parse(r.out) as { status: { userInfo: Who } }).status.userInfo, err: r.err };
}

interface Fixture { s: StartedApiserver; hook: TokenReviewServer; dir: string; config: string }

async function setup(t: Test, extraArgs: string[] = []): Promise<Fixture> {
  const dir = await mkdtemp(join(tmpdir(), 'authn-basic-webhook-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const hook = await tokenReviewServer();
  t.teardown(() => hook.close());
  hook.answer = (rv) => {
    const token = rv.spec.token as string;
    if (token === 'wh-good') return { authenticated: true, user: { username: 'webhook-user', uid: 'wh-1', groups: ['wh-group'], extra: { scopes: ['read', 'write'] } } };
    if (token === 'wh-other-audience') return { authenticated: true, audiences: ['someone-else'], user: { username: 'elsewhere' } };
    if (token === 'wh-error') return { authenticated: false, error: 'token revoked' };
    return { authenticated: false };
  };
  const passwords = join(dir, 'passwords.csv');
  const hookConfig = join(dir, 'webhook.yaml');
  await writeFile(passwords, PASSWORDS);
  await writeFile(hookConfig, webhookConfig(hook.url, hook.caPem));
  const s = await startApiserver({ args: [`--basic-auth-file=${passwords}`, `--authentication-token-webhook-config-file=${hookConfig}`, ...extraArgs] });
  t.teardown(() => s.stop());
  const config = join(dir, 'coreconfig-nobody');
  await writeFile(config, anonymousConfig(s), { mode: 0o600 });
  return { s, hook, dir, config };
}

const basic = (user: string, password: string): Record<string, string> => ({ authorization: `Basic ${b64(`${user}:${password}`)}` });
const bearer = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` });

async function whoamiRaw(s: StartedApiserver, headers: Record<string, string>): Promise<{ status: number; who?: Who }> {
  const r = await h2request(s.url, {
    path: '/apis/authentication.k8s.io/v1/selfsubjectreviews', method: 'POST', ca: s.ca.certPem,
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' }),
  });
  return r.status === 201 || r.status === 200 ? { status: r.status, who: JSON.parse(r.body).status.userInfo } : { status: r.status };
}

t.test('HTTP basic: the file\'s users, refusals with 401', async (t) => {
  const { s } = await setup(t);
  let r = await whoamiRaw(s, basic('alice', 's3cret'));
  t.same(r.who, { username: 'alice', uid: 'uid-alice', groups: ['devs', 'ops', 'system:authenticated'] }, 'alice with uid and groups');
  r = await whoamiRaw(s, basic('bob', 'pw-bob'));
  t.same(r.who, { username: 'bob', uid: 'uid-bob', groups: ['system:authenticated'] }, 'three columns: no groups');

  r = await whoamiRaw(s, basic('alice', 'wrong'));
  t.equal(r.status, 401, 'wrong password: 401, not anonymous');
  r = await whoamiRaw(s, basic('alice', ''));
  t.equal(r.status, 401, 'empty password: 401');
  r = await whoamiRaw(s, basic('mallory', 's3cret'));
  t.equal(r.status, 401, 'unknown user: 401');
  r = await whoamiRaw(s, basic('bob', 's3cret'));
  t.equal(r.status, 401, 'another user\'s password: 401');
  r = await whoamiRaw(s, {});
  // The server runs AlwaysAllow (the default), so anonymous requests are off, as in Kubernetes.
  t.equal(r.status, 401, 'no credentials under AlwaysAllow: 401 (anonymous reset to false)');

  // A valid password on a connection whose client certificate is someone else's: basic comes first, as in Kubernetes.
  const res = await h2request(s.url, {
    path: '/apis/authentication.k8s.io/v1/selfsubjectreviews', method: 'POST', ca: s.ca.certPem,
    cert: await readFile(s.clientCertFile), key: await readFile(s.clientKeyFile),
    headers: { ...basic('bob', 'pw-bob'), 'content-type': 'application/json' },
    body: JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' }),
  });
  t.equal(JSON.parse(res.body).status.userInfo.username, 'bob', 'basic before x509');
});

t.test('token webhook: TokenReview v1 to the service, user, audiences, refusals', async (t) => {
  const { s, hook } = await setup(t);
  let r = await whoamiRaw(s, bearer('wh-good'));
  t.same(r.who, { username: 'webhook-user', uid: 'wh-1', groups: ['wh-group', 'system:authenticated'], extra: { scopes: ['read', 'write'] } });
  const sent = hook.reviews[0]!;
  t.equal(sent.review.apiVersion, 'authentication.k8s.io/v1');
  t.equal(sent.review.kind, 'TokenReview');
  t.equal(sent.review.spec.token, 'wh-good');
  t.ok(Array.isArray(sent.review.spec.audiences) && sent.review.spec.audiences.length > 0, 'the server\'s audiences are asked for');
  t.equal(sent.authorization, 'Bearer apiserver-secret', 'the coreconfig\'s credentials are presented');

  r = await whoamiRaw(s, bearer('wh-unknown'));
  t.equal(r.status, 401, 'not authenticated by the webhook: 401');
  r = await whoamiRaw(s, bearer('wh-error'));
  t.equal(r.status, 401, 'status.error: 401');
  r = await whoamiRaw(s, bearer('wh-other-audience'));
  t.equal(r.status, 401, 'authenticated for another audience only: 401');
});

t.test('token webhook cache: a second request within the TTL is not sent; errors are not cached', async (t) => {
  const { s, hook } = await setup(t, ['--authentication-token-webhook-cache-ttl=1h']);
  t.equal((await whoamiRaw(s, bearer('wh-good'))).who?.username, 'webhook-user');
  t.equal((await whoamiRaw(s, bearer('wh-good'))).who?.username, 'webhook-user');
  t.equal(hook.reviews.filter((x) => x.review.spec.token === 'wh-good').length, 1, 'one review for two requests');
  await whoamiRaw(s, bearer('wh-unknown'));
  await whoamiRaw(s, bearer('wh-unknown'));
  t.equal(hook.reviews.filter((x) => x.review.spec.token === 'wh-unknown').length, 1, '"not authenticated" is cached too');
  await whoamiRaw(s, bearer('wh-error'));
  await whoamiRaw(s, bearer('wh-error'));
  t.equal(hook.reviews.filter((x) => x.review.spec.token === 'wh-error').length, 2, 'a failure (status.error) is not cached');
});

t.test('token webhook cache off (--authentication-token-webhook-cache-ttl=0s): every request asks', async (t) => {
  const { s, hook } = await setup(t, ['--authentication-token-webhook-cache-ttl=0s']);
  await whoamiRaw(s, bearer('wh-good'));
  await whoamiRaw(s, bearer('wh-good'));
  t.equal(hook.reviews.length, 2);
});

t.test('token webhook failing or down: its tokens get 401, retries are bounded, other methods still work', async (t) => {
  const { s, hook } = await setup(t);
  hook.answer = () => ({ status: 500, body: 'boom' });
  let r = await whoamiRaw(s, bearer('wh-good'));
  t.equal(r.status, 401, 'a webhook answering 500 fails its token');
  t.equal(hook.reviews.length, 5, '500 is retried, 5 attempts in all');
  hook.answer = () => ({ status: 400, body: 'bad' });
  hook.reviews.length = 0;
  r = await whoamiRaw(s, bearer('wh-good'));
  t.equal(r.status, 401);
  t.equal(hook.reviews.length, 1, '400 is not retried');

  await hook.close();
  r = await whoamiRaw(s, bearer('wh-good'));
  t.equal(r.status, 401, 'webhook down: 401 for its token');
  r = await whoamiRaw(s, basic('alice', 's3cret'));
  t.equal(r.who?.username, 'alice', 'basic still works');
  const admin = await h2request(s.url, {
    path: '/api/v1/namespaces', ca: s.ca.certPem,
    cert: await readFile(s.clientCertFile), key: await readFile(s.clientKeyFile),
  });
  t.equal(admin.status, 200, 'client certificates still work');
});

t.test('kubectl 1.27 and 1.33: --username/--password and --token', async (t) => {
  const { s, hook, dir, config } = await setup(t);
  for (const [minor, bin] of [[27, k127], [33, k133]] as const) {
    if (!bin) { t.comment(`kubectl.1.${minor} not installed: skipped`); continue; }
    let r = await whoami(minor, bin, config, dir, ['--username', 'alice', '--password', 's3cret']);
    t.equal(r.code, 0, `1.${minor} basic: ${r.err}`);
    t.equal(r.who?.username, 'alice', `1.${minor}: --username/--password → alice`);
    t.same(r.who?.groups, ['devs', 'ops', 'system:authenticated']);
    r = await whoami(minor, bin, config, dir, ['--username', 'alice', '--password', 'nope']);
    t.not(r.code, 0, `1.${minor}: wrong password refused`);
    t.match(r.err, /Unauthorized|must be logged in/, `1.${minor}: as 401`);
    r = await whoami(minor, bin, config, dir, ['--token', 'wh-good']);
    t.equal(r.code, 0, `1.${minor} webhook: ${r.err}`);
    t.equal(r.who?.username, 'webhook-user', `1.${minor}: --token → the webhook's user`);
    t.same(r.who?.groups, ['wh-group', 'system:authenticated']);
    r = await whoami(minor, bin, config, dir, ['--token', 'wh-unknown']);
    t.not(r.code, 0, `1.${minor}: a token the webhook refuses is refused`);
    t.match(r.err, /Unauthorized|must be logged in/);
  }
  t.ok(hook.reviews.length >= 1);
});

t.test('start-up errors name the option', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'authn-opts-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const bad = join(dir, 'bad.csv');
  await writeFile(bad, 'onlypassword,user\n');
  let r = await runExpectingStartFailure([`--basic-auth-file=${bad}`]);
  t.not(r.code, 0);
  t.match(r.stderr, /--basic-auth-file.*must have at least 3 columns \(password, user name, user uid\), found 2/);
  r = await runExpectingStartFailure([`--basic-auth-file=${join(dir, 'missing.csv')}`]);
  t.match(r.stderr, /--basic-auth-file/);
  r = await runExpectingStartFailure([`--authentication-token-webhook-config-file=${join(dir, 'missing.yaml')}`]);
  t.match(r.stderr, /--authentication-token-webhook-config-file/);
});

// OpenID Connect through the real HTTP stack of a real API server (in-process) and real kubectl
// 1.27 and 1.33 with --token, against a local HTTPS issuer (test/helpers/oidc-issuer.ts):
// the user and groups a token maps to, every refusal (alg not allowed, audience, expiry, nbf,
// issuer, signature, unknown key), key rotation, the issuer down at start, option errors, and
// that no token ever reaches the logs.
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino, type Logger } from 'pino';
import t from 'tap';
import { buildAuthentication } from '../../src/daemons/apiserver/auth-setup.js';
import { h2request, startApiserver, type StartedApiserver } from '../helpers/apiserver.js';
import { kubectl } from '../helpers/kubectl.js';
import { kubectlRunner } from '../helpers/kubectl-run.js';
import { startOidcIssuer, type OidcIssuer } from '../helpers/oidc-issuer.js';
import { connectClient } from '../helpers/rest-client.js';
import { waitFor } from '../helpers/wait-for.js';

const k133 = kubectl(33);
const k127 = kubectl(27);

function capture(): { log: Logger; text: () => string } {
  const lines: string[] = [];
  const log = pino({ level: 'trace' }, new Writable({ write(c: Buffer, _e, cb) { lines.push(c.toString()); cb(); } }));
  return { log, text: () => lines.join('') };
}

function oidcArgs(issuer: OidcIssuer, extra: string[] = []): string[] {
  return [`--oidc-issuer-url=${issuer.url}`, '--oidc-client-id=corectl', `--oidc-ca-file=${issuer.caFile}`, '--oidc-groups-claim=groups', ...extra];
}

/** A coreconfig with the cluster's CA and no credentials: kubectl's --token supplies them. */
async function tokenConfig(s: StartedApiserver): Promise<string> {
  const path = join(s.dir, 'coreconfig-token');
  await writeFile(path, [
    'apiVersion: v1', 'kind: Config', 'current-context: t',
    'clusters:', '- name: t', '  cluster:', `    server: ${s.url}`, `    certificate-authority: ${s.caFile}`,
    'users:', '- name: t', '  user: {}',
    'contexts:', '- name: t', '  context:', '    cluster: t', '    user: t', '',
  ].join('\n'), { mode: 0o600 });
  return path;
}

async function getPods(s: StartedApiserver, token: string): Promise<{ status: number; body: string }> {
  const ca = await import('node:fs/promises').then((f) => f.readFile(s.caFile));
  return h2request(s.url, { path: '/api/v1/namespaces/default/pods', ca, headers: { authorization: `Bearer ${token}` } });
}

t.test('OIDC tokens through the API server: users, groups, refusals, rotation, kubectl', async (t) => {
  const issuer = await startOidcIssuer();
  t.teardown(() => issuer.stop());
  const logs = capture();
  const s = await startApiserver({ log: logs.log, args: ['--authorization-mode=RBAC', ...oidcArgs(issuer, ['--oidc-groups-prefix=oidc:'])] });
  t.teardown(() => s.stop());
  const tokens: string[] = [];
  const mint = async (...a: Parameters<OidcIssuer['mint']>): Promise<string> => { const tok = await issuer.mint(...a); tokens.push(tok); return tok; };

  // Everyone authenticated may ask who they are and read discovery (Kubernetes' system:basic-user
  // and system:discovery grant it).
  const admin = await connectClient(s);
  t.teardown(() => admin.close());
  const role = await admin.request('POST', '/apis/rbac.authorization.k8s.io/v1/clusterroles', { body: {
    apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'whoami' },
    rules: [
      { apiGroups: ['authentication.k8s.io'], resources: ['selfsubjectreviews'], verbs: ['create'] },
      { nonResourceURLs: ['/api', '/api/*', '/apis', '/apis/*', '/version'], verbs: ['get'] },
    ],
  } });
  t.equal(role.status, 201, JSON.stringify(role.json));
  const binding = await admin.request('POST', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', { body: {
    apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'whoami' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'whoami' },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'system:authenticated' }],
  } });
  t.equal(binding.status, 201, JSON.stringify(binding.json));

  const user = `${issuer.url}#alice`;
  const good = await mint(issuer.claims({ groups: ['dev', 'ops'] }));
  // Discovery runs in the background: poll until the token authenticates (403: known, not allowed).
  const first = await waitFor('the OIDC authenticator to load the issuer', async () => { const r = await getPods(s, good); return r.status === 403 && r; });
  t.match(JSON.parse(first.body).message, `User "${user}" cannot list resource "pods"`, 'a good token is the issuer-prefixed subject');

  const refusals: Array<[string, string]> = [
    ['alg RS384, only RS256 allowed (error 3)', await mint(issuer.claims(), { alg: 'RS384' })],
    ['alg HS256 keyed with the public key', await mint(issuer.claims(), { key: new TextEncoder().encode(JSON.stringify(issuer.current.publicJwk)), kid: issuer.current.kid })],
    ['wrong audience', await mint(issuer.claims({ aud: 'another-client' }))],
    ['expired', await mint(issuer.claims({ exp: Math.floor(Date.now() / 1000) - 5 }))],
    ['not yet valid (nbf beyond the 1 minute leeway)', await mint(issuer.claims({ nbf: Math.floor(Date.now() / 1000) + 300 }))],
    ['unknown issuer', await mint(issuer.claims({ iss: 'https://127.0.0.1:1/elsewhere' }))],
    ['bad signature (unpublished key, published kid)', await mint(issuer.claims(), { key: issuer.newKey(), kid: issuer.current.kid })],
  ];
  for (const [what, token] of refusals) {
    const r = await getPods(s, token);
    t.equal(r.status, 401, `${what}: 401`);
    t.equal(JSON.parse(r.body).reason, 'Unauthorized', `${what}: a Status with reason Unauthorized`);
  }

  const review = async (token: string): Promise<{ authenticated?: boolean; user?: { username?: string; groups?: string[] } }> => {
    const rr = await admin.request('POST', '/apis/authentication.k8s.io/v1/tokenreviews', { body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } } });
    t.equal(rr.status, 201, 'TokenReview answered');
    return rr.json.status ?? {};
  };
  const reviewed = await review(good);
  t.equal(reviewed.authenticated, true, 'TokenReview: an OIDC token authenticates');
  t.equal(reviewed.user?.username, user);
  t.same(reviewed.user?.groups, ['oidc:dev', 'oidc:ops', 'system:authenticated']);
  t.notOk((await review(refusals[2]![1])).authenticated, 'TokenReview: the wrong-audience token does not');

  const jwksBefore = issuer.requests.jwks;
  const stranger = await mint(issuer.claims(), { key: issuer.newKey(), kid: randomBytes(6).toString('hex') });
  t.equal((await getPods(s, stranger)).status, 401, 'unknown key id: 401');
  t.equal(issuer.requests.jwks, jwksBefore + 1, 'after the JWKS was fetched again');

  issuer.rotate();
  const rotated = await mint(issuer.claims({ sub: 'bob' }));
  // The unknown-kid refetch just above may still hold the rate limit (5 s): poll.
  const r = await waitFor('the rotated key to be fetched', async () => { const x = await getPods(s, rotated); return x.status === 403 && x; }, 20_000);
  t.match(JSON.parse(r.body).message, `User "${issuer.url}#bob"`, 'a token signed with the rotated key is accepted');
  t.equal((await getPods(s, good)).status, 401, 'the withdrawn key no longer verifies');

  const cfg = await tokenConfig(s);
  const fresh = await mint(issuer.claims({ groups: ['dev', 'ops'] }));
  const expired = await mint(issuer.claims({ exp: Math.floor(Date.now() / 1000) - 5 }));
  for (const bin of [k133, k127]) {
    if (!bin) { t.comment('a kubectl version is missing'); continue; }
    const k = kubectlRunner(bin, cfg, join(s.dir, `kcache-${bin.slice(-2)}`));
    if (bin === k133) {
      // run, not ok/json: those put the arguments (the token) in the assertion names.
      const out = await k.run(['auth', 'whoami', `--token=${fresh}`, '-o', 'json']);
      t.equal(out.code, 0, `${k.ver} auth whoami: ${out.stderr}`);
      const who = JSON.parse(out.stdout || '{}');
      t.equal(who.status?.userInfo?.username, `${issuer.url}#alice`, `${k.ver} auth whoami: the user`);
      t.same(who.status?.userInfo?.groups, ['oidc:dev', 'oidc:ops', 'system:authenticated'], `${k.ver} auth whoami: prefixed groups and system:authenticated`);
    } else {
      // kubectl 1.27 asks for SelfSubjectReview v1beta1, which is not served: the 403 names the user.
      const denied = await k.run(['get', 'pods', `--token=${fresh}`]);
      t.not(denied.code, 0, `${k.ver} get pods: refused`);
      t.match(denied.stderr, `User "${issuer.url}#alice" cannot list resource "pods"`, `${k.ver}: the 403 names the OIDC user`);
    }
    const refused = await k.run(['get', 'pods', `--token=${expired}`]);
    t.not(refused.code, 0, `${k.ver}: an expired token fails`);
    t.match(refused.stderr, /Unauthorized|must be logged in/, `${k.ver}: as unauthorized`);
  }

  const text = logs.text();
  t.ok(text.includes('oidc token refused'), 'refusals are logged (with their reason)');
  t.ok(text.includes('expected audience'), 'the reason names the check');
  for (const tok of tokens) {
    const sig = tok.split('.')[2]!;
    if (text.includes(sig)) { t.fail('a token reached the logs'); break; }
  }
  t.pass('no token (signature part) in the logs');
});

t.test('issuer down at start: OIDC fails, certificates work, OIDC works once the issuer is up', async (t) => {
  const issuer = await startOidcIssuer({ listen: false });
  t.teardown(() => issuer.stop());
  const s = await startApiserver({ args: oidcArgs(issuer) });
  t.teardown(() => s.stop());
  const token = await issuer.mint(issuer.claims());
  t.equal((await getPods(s, token)).status, 401, 'an OIDC token is refused while the issuer is unreachable');
  const admin = await connectClient(s);
  t.teardown(() => admin.close());
  t.equal((await admin.request('GET', '/api/v1/namespaces/default/pods')).status, 200, 'a client certificate still works');
  await issuer.start();
  await waitFor('OIDC to work once the issuer answers', async () => (await getPods(s, token)).status === 200, 30_000);
  t.pass('the same token is accepted once discovery and keys are loaded');
  t.equal(issuer.requests.discovery, 1, 'discovery once it answered');
});

t.test('bad --oidc-* values are start-up errors naming the option', async (t) => {
  const log = pino({ level: 'silent' });
  const base = { anonymousAuth: true };
  const oidc = { issuerUrl: 'https://issuer.example', clientId: 'c', caFile: '', signingAlgs: ['RS256'], usernameClaim: 'sub', usernamePrefix: '', groupsClaim: '', groupsPrefix: '' };
  await t.rejects(buildAuthentication({ ...base, oidc: { ...oidc, signingAlgs: ['HS256'] } }, log), /^--oidc-signing-algs: unsupported signing alg "HS256"/);
  await t.rejects(buildAuthentication({ ...base, oidc: { ...oidc, signingAlgs: ['none'] } }, log), /^--oidc-signing-algs/);
  await t.rejects(buildAuthentication({ ...base, oidc: { ...oidc, issuerUrl: 'http://issuer.example' } }, log), /^--oidc-issuer-url: .*https is required/);
  await t.rejects(buildAuthentication({ ...base, oidc: { ...oidc, issuerUrl: 'https://' } }, log), /^--oidc-issuer-url/);
  await t.rejects(buildAuthentication({ ...base, oidc: { ...oidc, clientId: '' } }, log), /^--oidc-client-id/);
  await t.rejects(buildAuthentication({ ...base, oidc: { ...oidc, caFile: '/nonexistent/ca.crt' } }, log), /^--oidc-ca-file: cannot read/);
  await t.rejects(buildAuthentication({ ...base, oidc: { ...oidc, usernameClaim: '' } }, log), /^--oidc-username-claim/);
  await t.rejects(startApiserver({ args: ['--oidc-issuer-url=https://issuer.example', '--oidc-client-id=c', '--oidc-signing-algs=RS256,HS512'] }), /--oidc-signing-algs/, 'the API server does not start');
  await t.rejects(startApiserver({ process: true, args: ['--oidc-issuer-url=https://issuer.example', '--oidc-client-id=c', '--oidc-ca-file=/nonexistent/ca.crt'] }),
    /exited with code 1[\s\S]*apiserver: --oidc-ca-file: cannot read "\/nonexistent\/ca.crt"/, '`corectl apiserver` prints one line naming the option and exits 1');
  const ok = await buildAuthentication({ ...base, oidc: { ...oidc, issuerUrl: 'https://127.0.0.1:1' } }, log);
  ok.close();
  t.pass('good values build (the issuer is contacted in the background)');
});

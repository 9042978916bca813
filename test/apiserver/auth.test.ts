import t from 'tap';
import * as http2 from 'node:http2';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { TokenFileAuthenticator, parseCsvLine } from '../../src/auth/token-file.js';
import { anonymousAllowed, buildAuthentication, buildAuthorizer } from '../../src/daemons/apiserver/auth-setup.js';
import type { RestHandler } from '../../src/daemons/apiserver/chain.js';
import { createCA, issueCert } from '../../src/util/pki.js';
import { h1request, h2request, startApiserver } from '../helpers/apiserver.js';

let sawAuthorizationHeader = false;
const echoUser: RestHandler = {
  async handle(ctx, req, res) {
    if (req.headers['authorization'] !== undefined) sawAuthorizationHeader = true;
    res.setHeader('Content-Type', 'application/json');
    res.end(JSON.stringify(ctx.user));
  },
};

const TOKENS = [
  'tok-bob,bob,42,"g1,g2"',
  '',
  'tok-carol, carol ,7',
  'tok-admin,root,1,system:masters',
].join('\n');

t.test('token file parsing', async (t) => {
  t.same(parseCsvLine('a,b,"c,d",e'), ['a', 'b', 'c,d', 'e']);
  t.same(parseCsvLine('a,"say ""hi""",c'), ['a', 'say "hi"', 'c']);
  t.same(parseCsvLine(' a, b'), ['a', 'b']);
  const { authenticator } = TokenFileAuthenticator.fromText(TOKENS);
  t.same(await authenticator.authenticateToken('tok-bob'), { name: 'bob', uid: '42', groups: ['g1', 'g2'] });
  t.same(await authenticator.authenticateToken('tok-carol'), { name: 'carol ', uid: '7', groups: [] });
  t.equal(await authenticator.authenticateToken('nope'), undefined);
  t.throws(() => TokenFileAuthenticator.fromText('only,two'), /at least 3 columns/);
  const dup = TokenFileAuthenticator.fromText('t,a,1\nt,b,2');
  t.equal((await dup.authenticator.authenticateToken('t'))?.name, 'b');
  t.equal(dup.warnings.length, 1);
});

t.test('authorization modes at start-up', async (t) => {
  t.throws(() => buildAuthorizer(['RBAC']), /--authorization-mode: authorization mode "RBAC" is not implemented yet/);
  t.throws(() => buildAuthorizer(['Bogus']), /--authorization-mode: unknown authorization mode "Bogus"/);
  const user = { name: 'u', groups: [] };
  const attrs = { user, verb: 'get', isResourceRequest: false, path: '/x', namespace: '', apiGroup: '', apiVersion: '', resource: '', subresource: '', name: '' };
  t.equal((await buildAuthorizer(['AlwaysDeny', 'AlwaysAllow']).authorize(attrs)).decision, 'allow', 'AlwaysDeny has no opinion; a later mode decides');
  t.not((await buildAuthorizer(['AlwaysDeny']).authorize(attrs)).decision, 'allow');
  t.equal((await buildAuthorizer(['AlwaysDeny']).authorize({ ...attrs, user: { name: 'm', groups: ['system:masters'] } })).decision, 'allow');
  await t.rejects(buildAuthentication({ anonymousAuth: true, clientCaFile: '/nonexistent/ca.crt' }, pino({ level: 'silent' })), /--client-ca-file: cannot read/);
  await t.rejects(buildAuthentication({ anonymousAuth: true, tokenAuthFile: '/nonexistent/tokens' }, pino({ level: 'silent' })), /--token-auth-file/);
});

t.test('client certificates, tokens and anonymous', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-tokens-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, 'tokens.csv'), TOKENS);
  const s2 = await startApiserver({ rest: echoUser, serving: { tokenAuthFile: join(dir, 'tokens.csv') } });
  t.teardown(() => s2.stop());
  const ca = await readFile(s2.caFile);

  const alice = await s2.issueClient('alice', ['dev', 'ops']);
  const r = await h2request(s2.url, { path: '/api/v1/namespaces/default/pods', ca, cert: alice.certPem, key: alice.keyPem });
  t.equal(r.status, 200);
  t.same(JSON.parse(r.body), { name: 'alice', groups: ['dev', 'ops', 'system:authenticated'] }, 'CN → name, O → groups');

  const r1 = await h1request(s2.url, { path: '/api/v1/pods', ca, cert: alice.certPem, key: alice.keyPem });
  t.equal(JSON.parse(r1.body).name, 'alice', 'HTTP/1.1 too');

  const strangerCa = await createCA({ commonName: 'stranger' });
  const mallory = await issueCert({ ca: strangerCa, commonName: 'mallory', organizations: ['system:masters'], usages: 'client' });
  const bad = await h2request(s2.url, { path: '/api/v1/pods', ca, cert: mallory.certPem, key: mallory.keyPem });
  t.equal(bad.status, 401, 'a certificate from another CA is rejected');
  t.match(JSON.parse(bad.body), { kind: 'Status', reason: 'Unauthorized', code: 401, message: 'Unauthorized' });

  const serverOnly = await issueCert({ ca: s2.ca, commonName: 'srv', usages: 'server' });
  t.equal((await h2request(s2.url, { path: '/api/v1/pods', ca, cert: serverOnly.certPem, key: serverOnly.keyPem })).status, 401, 'a serving-only certificate is no client identity');

  const bob = await h2request(s2.url, { path: '/api/v1/pods', ca, headers: { authorization: 'Bearer tok-bob' } });
  t.same(JSON.parse(bob.body), { name: 'bob', uid: '42', groups: ['g1', 'g2', 'system:authenticated'] });
  const lower = await h2request(s2.url, { path: '/api/v1/pods', ca, headers: { authorization: 'bearer tok-carol' } });
  t.equal(JSON.parse(lower.body).name, 'carol ');

  const badToken = await h2request(s2.url, { path: '/api/v1/pods', ca, headers: { authorization: 'Bearer wrong' } });
  t.equal(badToken.status, 401, 'an unknown bearer token is 401 even with anonymous on');

  t.notOk(sawAuthorizationHeader, 'the Authorization header is removed after authentication');

  const anon = await h2request(s2.url, { path: '/api/v1/pods', ca });
  t.same(JSON.parse(anon.body), { name: 'system:anonymous', groups: ['system:unauthenticated'] });
});

t.test('anonymous off: no credentials → 401', async (t) => {
  const s = await startApiserver({ rest: echoUser, serving: { anonymousAuth: false } });
  t.teardown(() => s.stop());
  const ca = await readFile(s.caFile);
  const r = await h2request(s.url, { path: '/healthz', ca });
  t.equal(r.status, 401);
  t.match(JSON.parse(r.body), { kind: 'Status', status: 'Failure', reason: 'Unauthorized', code: 401 });
  const ok = await h2request(s.url, { path: '/healthz', ca, cert: await readFile(s.clientCertFile), key: await readFile(s.clientKeyFile) });
  t.equal(ok.status, 200);
});

t.test('AlwaysAllow turns anonymous requests off, with Kubernetes\' warning (issue 27: anonymous cluster-admin)', async (t) => {
  const lines: string[] = [];
  const log = pino({ level: 'warn' }, { write: (l: string) => { lines.push(l); } });
  // A standalone API server with default options: --anonymous-auth=true, --authorization-mode=AlwaysAllow.
  const s = await startApiserver({ log });
  t.teardown(() => s.stop());
  const ca = await readFile(s.caFile);
  for (const path of ['/api/v1/secrets', '/api/v1/namespaces/kube-system/secrets', '/apis', '/healthz']) {
    const r = await h2request(s.url, { path, ca });
    t.equal(r.status, 401, `anonymous ${path}`);
    t.match(JSON.parse(r.body), { kind: 'Status', reason: 'Unauthorized', code: 401 });
  }
  const create = await h2request(s.url, { path: '/api/v1/namespaces', method: 'POST', ca, body: JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'anon' } }), headers: { 'content-type': 'application/json' } });
  t.equal(create.status, 401, 'anonymous create');
  const admin = await h2request(s.url, { path: '/api/v1/secrets', ca, cert: await readFile(s.clientCertFile), key: await readFile(s.clientKeyFile) });
  t.equal(admin.status, 200, 'a certificate user still gets in');
  t.ok(lines.some((l) => l.includes('AnonymousAuth is not allowed with the AlwaysAllow authorizer. Resetting AnonymousAuth to false. You should use a different authorizer')), 'the warning is logged');
  // AlwaysAllow anywhere in the list counts; without it, --anonymous-auth stands.
  const quiet = pino({ level: 'silent' });
  t.notOk(anonymousAllowed({ anonymousAuth: true, authorizationMode: [] }, quiet), 'the default mode is AlwaysAllow');
  t.notOk(anonymousAllowed({ anonymousAuth: true, authorizationMode: ['AlwaysDeny', 'AlwaysAllow'] }, quiet));
  t.ok(anonymousAllowed({ anonymousAuth: true, authorizationMode: ['AlwaysDeny'] }, quiet));
  t.notOk(anonymousAllowed({ anonymousAuth: false, authorizationMode: ['AlwaysDeny'] }, quiet));
});

t.test('AlwaysDeny → 403 in Kubernetes wording', async (t) => {
  const s = await startApiserver({ rest: echoUser, serving: { authorizationMode: ['AlwaysDeny'] } });
  t.teardown(() => s.stop());
  const ca = await readFile(s.caFile);
  const alice = await s.issueClient('alice', ['dev']);
  const as = { ca, cert: alice.certPem, key: alice.keyPem };
  const list = await h2request(s.url, { path: '/api/v1/namespaces/default/pods', ...as });
  t.equal(list.status, 403);
  t.same(JSON.parse(list.body), {
    kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure',
    message: 'pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default": Everything is forbidden.',
    reason: 'Forbidden', details: { kind: 'pods' }, code: 403,
  });
  const get = await h2request(s.url, { path: '/apis/apps/v1/deployments/web/scale', ...as });
  t.equal(JSON.parse(get.body).message,
    'deployments.apps "web" is forbidden: User "alice" cannot get resource "deployments/scale" in API group "apps" at the cluster scope: Everything is forbidden.');
  const health = await h2request(s.url, { path: '/healthz', ...as });
  t.equal(health.status, 403);
  t.equal(JSON.parse(health.body).message, 'forbidden: User "alice" cannot get path "/healthz": Everything is forbidden.');
  const admin = await h2request(s.url, { path: '/api/v1/pods', ca, cert: await readFile(s.clientCertFile), key: await readFile(s.clientKeyFile) });
  t.equal(admin.status, 200, 'system:masters is always allowed');
});

// Requests on one connection share its client certificate's user; other connections do not.
function get(s: http2.ClientHttp2Session, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const r = s.request({ ':path': '/api/v1/namespaces/default/pods', ...headers });
    let status = 0;
    let body = '';
    r.on('response', (h) => { status = Number(h[':status']); });
    r.setEncoding('utf8');
    r.on('data', (d: string) => { body += d; });
    r.on('end', () => resolve({ status, body }));
    r.on('error', reject);
  });
}

function connect(url: string, tls: http2.SecureClientSessionOptions): Promise<http2.ClientHttp2Session> {
  return new Promise((resolve, reject) => {
    const s = http2.connect(url, tls);
    s.once('connect', () => resolve(s));
    s.once('error', reject);
  });
}

t.test('a connection keeps its certificate user; tokens on it change nothing; other connections are their own', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-authconn-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, 'tokens.csv'), 'tok-bob,bob,42,"g1"\n');
  const s = await startApiserver({ rest: echoUser, serving: { tokenAuthFile: join(dir, 'tokens.csv') } });
  t.teardown(() => s.stop());
  const ca = await readFile(s.caFile);
  const alice = await s.issueClient('alice', ['dev']);

  const withCert = await connect(s.url, { ca, cert: alice.certPem, key: alice.keyPem });
  t.teardown(() => withCert.close());
  const want = { name: 'alice', groups: ['dev', 'system:authenticated'] };
  for (let i = 0; i < 3; i++) t.same(JSON.parse((await get(withCert)).body), want, `request ${i + 1} on the connection`);
  t.same(JSON.parse((await get(withCert, { authorization: 'Bearer tok-bob' })).body), want, 'the certificate decides over a token');
  t.same(JSON.parse((await get(withCert, { authorization: 'Bearer wrong' })).body), want, 'an unknown token next to a valid certificate is not looked at');
  t.notOk(sawAuthorizationHeader, 'the Authorization header is still removed');

  const plain = await connect(s.url, { ca });
  t.teardown(() => plain.close());
  t.same(JSON.parse((await get(plain, { authorization: 'Bearer tok-bob' })).body), { name: 'bob', uid: '42', groups: ['g1', 'system:authenticated'] }, 'another connection: its own credentials');
  t.equal((await get(plain, { authorization: 'Bearer wrong' })).status, 401);
  t.same(JSON.parse((await get(plain)).body), { name: 'system:anonymous', groups: ['system:unauthenticated'] });
});

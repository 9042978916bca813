// Request-header (front proxy) authentication, --requestheader-*: the user, groups and extras
// of the configured headers count only on a connection whose client certificate chains to
// --requestheader-client-ca-file and whose CN is in --requestheader-allowed-names; headers on
// any other connection are ignored (the request is the certificate's own user, anonymous, or
// refused); the identity headers never reach the handler; a trusted proxy's connection is not
// pinned to one user. Then the full server: the extension-apiserver-authentication ConfigMap
// in kube-system (read with kubectl 1.27 and 1.33), restored when deleted or changed.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import * as http2 from 'node:http2';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { RequestContext, UserInfo } from '../../src/daemons/apiserver/context.js';
import { createCA, importPrivateKeyPem, issueCert, loadX509, type CertificateAuthority, type CertKeyPem } from '../../src/util/pki.js';
import { h1request, h2request, startApiserver, type StartedApiserver } from '../helpers/apiserver.js';
import { kubectl } from '../helpers/kubectl.js';
import { waitFor } from '../helpers/wait-for.js';

const k127 = kubectl(27);
const same = (a: Record<string, string>, b: Record<string, string>): boolean =>
  Object.keys(a).length === Object.keys(b).length && Object.keys(b).every((k) => a[k] === b[k]);
const k133 = kubectl(33);

interface Seen { user: UserInfo; headers: string[] }

const HEADERS = {
  requestheaderUsernameHeaders: ['X-Remote-User', 'X-Other-User'],
  requestheaderGroupHeaders: ['X-Remote-Group'],
  requestheaderExtraHeadersPrefix: ['X-Remote-Extra-'],
};

/** A serving-only API server whose stub handler records the user and the x-remote/x-other headers it still sees. */
async function stubServer(t: import('tap').Test, serving: Record<string, unknown>): Promise<{ s: StartedApiserver; seen: Seen[] }> {
  const seen: Seen[] = [];
  const s = await startApiserver({
    rest: {
      async handle(ctx: RequestContext, req, res) {
        seen.push({ user: ctx.user, headers: Object.keys(req.headers).filter((h) => h.startsWith('x-remote') || h.startsWith('x-other')) });
        res.statusCode = 200;
        res.end('{}');
      },
    },
    // The helper's allow-all authorizer (not AlwaysAllow, which turns anonymous requests off).
    serving: { ...serving },
  });
  t.teardown(() => s.stop());
  return { s, seen };
}

t.test('front proxy on its own CA: trusted, untrusted and not-allowed certificates', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'authn-rh-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const proxyCa = await createCA({ commonName: 'front-proxy-ca' });
  const proxyCaFile = join(dir, 'front-proxy-ca.crt');
  await writeFile(proxyCaFile, proxyCa.certPem);
  const proxy = await issueCert({ ca: proxyCa, commonName: 'front-proxy-client', usages: 'client' });
  const otherProxy = await issueCert({ ca: proxyCa, commonName: 'other-proxy', usages: 'client' });
  const rogueCa = await createCA({ commonName: 'front-proxy-ca' }); // same name, another key
  const rogue = await issueCert({ ca: rogueCa, commonName: 'front-proxy-client', usages: 'client' });

  const { s, seen } = await stubServer(t, { requestheaderClientCaFile: proxyCaFile, requestheaderAllowedNames: ['front-proxy-client'], ...HEADERS });
  const bob = await s.issueClient('bob', ['dev']);
  const identity = { 'x-remote-user': 'jane', 'x-remote-group': ['g1', 'g2, x'] as unknown as string, 'x-remote-extra-acme.com%2Fproject': 'p1', 'x-remote-extra-scopes': ['a', 'b'] as unknown as string };
  const send = async (c: CertKeyPem | undefined, headers: Record<string, string>, h1 = false) => {
    const n = seen.length;
    const r = await (h1 ? h1request : h2request)(s.url, { path: '/api/v1/pods', ca: s.ca.certPem, ...(c ? { cert: c.certPem, key: c.keyPem } : {}), headers });
    return { status: r.status, seen: seen.length > n ? seen[seen.length - 1] : undefined };
  };

  let r = await send(proxy, identity);
  t.equal(r.status, 200);
  t.same(r.seen?.user, { name: 'jane', groups: ['g1', 'g2, x', 'system:authenticated'], extra: { 'acme.com/project': ['p1'], scopes: ['a', 'b'] } }, 'HTTP/2: the proxy\'s user, repeated groups and extras apart, extra keys decoded');
  t.same(r.seen?.headers, [], 'the identity headers are removed before the handler');
  r = await send(proxy, identity, true);
  t.same(r.seen?.user, { name: 'jane', groups: ['g1', 'g2, x', 'system:authenticated'], extra: { 'acme.com/project': ['p1'], scopes: ['a', 'b'] } }, 'HTTP/1.1 too');
  t.same(r.seen?.headers, []);
  r = await send(proxy, { 'x-other-user': 'second-header' });
  t.equal(r.seen?.user.name, 'second-header', 'the first username header with a value wins, in the configured order');

  // Untrusted: the headers are ignored, never believed.
  r = await send(bob, identity);
  t.equal(r.status, 200);
  t.same(r.seen?.user, { name: 'bob', groups: ['dev', 'system:authenticated'] }, 'a client-CA certificate: its own user, headers ignored');
  t.same(r.seen?.headers, [], 'and the headers are removed all the same');
  const impostor = await s.issueClient('front-proxy-client');
  r = await send(impostor, identity);
  t.same(r.seen?.user, { name: 'front-proxy-client', groups: ['system:authenticated'] }, 'an allowed CN signed by the client CA, not the proxy CA: its own user, headers ignored');
  r = await send(otherProxy, identity);
  t.equal(r.status, 401, 'a proxy-CA certificate whose CN is not allowed: headers ignored, and no other method accepts it');
  r = await send(rogue, identity);
  t.equal(r.status, 401, 'a certificate of another CA with the right names: refused');
  r = await send(undefined, identity);
  t.equal(r.status, 200);
  t.same(r.seen?.user, { name: 'system:anonymous', groups: ['system:unauthenticated'] }, 'no certificate: anonymous, headers ignored');
  t.same(r.seen?.headers, []);
  r = await send(proxy, {});
  t.equal(r.status, 401, 'the proxy\'s certificate without a user header is no client certificate of --client-ca-file');
});

t.test('no --requestheader-allowed-names: any certificate of the proxy CA, and only of it', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'authn-rh-any-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const proxyCa = await createCA({ commonName: 'front-proxy-ca' });
  const proxyCaFile = join(dir, 'front-proxy-ca.crt');
  await writeFile(proxyCaFile, proxyCa.certPem);
  const anyProxy = await issueCert({ ca: proxyCa, commonName: 'whatever-proxy', usages: 'client' });
  const { s, seen } = await stubServer(t, { requestheaderClientCaFile: proxyCaFile, ...HEADERS });
  const bob = await s.issueClient('bob');
  const send = async (c: CertKeyPem) => {
    await h2request(s.url, { path: '/api/v1/pods', ca: s.ca.certPem, cert: c.certPem, key: c.keyPem, headers: { 'x-remote-user': 'jane' } });
    return seen[seen.length - 1]!.user.name;
  };
  t.equal(await send(anyProxy), 'jane', 'any CN of the proxy CA');
  t.equal(await send(bob), 'bob', 'a client-CA certificate: headers ignored');
});

/** A CA signed by `parent` (CA: true when `isCa`), as an intermediate, or a forgery when not a CA. */
async function subordinate(parent: CertificateAuthority, cn: string, isCa: boolean): Promise<CertificateAuthority> {
  const x509 = await loadX509();
  const keys = await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify']);
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: '0' + Math.floor(Math.random() * 1e9).toString(16), subject: [{ CN: [cn] }], issuer: parent.cert.subjectName,
    notBefore: new Date(Date.now() - 60_000), notAfter: new Date(Date.now() + 3600_000),
    publicKey: keys.publicKey, signingKey: parent.key, signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' },
    extensions: [new x509.BasicConstraintsExtension(isCa, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.digitalSignature, true)],
  });
  const pkcs8 = Buffer.from(await crypto.subtle.exportKey('pkcs8', keys.privateKey)).toString('base64').replace(/(.{64})/g, '$1\n');
  const keyPem = `-----BEGIN PRIVATE KEY-----\n${pkcs8}\n-----END PRIVATE KEY-----\n`;
  return { cert, key: await importPrivateKeyPem(keyPem), certPem: cert.toString('pem') + '\n', keyPem };
}

t.test('intermediates: a chain through a CA intermediate is trusted; one through a non-CA certificate is not', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'authn-rh-chain-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const root = await createCA({ commonName: 'front-proxy-root' });
  const rootFile = join(dir, 'root.crt');
  await writeFile(rootFile, root.certPem);
  const intermediate = await subordinate(root, 'front-proxy-intermediate', true);
  const viaIntermediate = await issueCert({ ca: intermediate, commonName: 'front-proxy-client', usages: 'client' });
  const notCa = await subordinate(root, 'some-leaf', false);
  const forged = await issueCert({ ca: notCa, commonName: 'front-proxy-client', usages: 'client' });
  const { s, seen } = await stubServer(t, { requestheaderClientCaFile: rootFile, requestheaderAllowedNames: ['front-proxy-client'], ...HEADERS });
  const send = (leaf: CertKeyPem, chainPem: string) => h2request(s.url, {
    path: '/api/v1/pods', ca: s.ca.certPem, cert: leaf.certPem + chainPem, key: leaf.keyPem, headers: { 'x-remote-user': 'jane' },
  });
  let r = await send(viaIntermediate, intermediate.certPem);
  t.equal(r.status, 200);
  t.equal(seen[seen.length - 1]!.user.name, 'jane', 'leaf ← CA intermediate ← root: trusted');
  const n = seen.length;
  r = await send(forged, notCa.certPem);
  t.equal(r.status, 401, 'leaf ← non-CA certificate ← root: refused');
  t.equal(seen.length, n);
});

t.test('one CA for both: a proxy connection is not pinned to the certificate\'s user', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'authn-rh-shared-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const ca = await createCA({ commonName: 'shared-ca' });
  const caFile = join(dir, 'ca.crt');
  await writeFile(caFile, ca.certPem);
  const proxy = await issueCert({ ca, commonName: 'front-proxy-client', usages: 'client' });
  const carol = await issueCert({ ca, commonName: 'carol', usages: 'client' });
  const { s, seen } = await stubServer(t, { clientCaFile: caFile, requestheaderClientCaFile: caFile, requestheaderAllowedNames: ['front-proxy-client'], ...HEADERS });

  const session = async (c: CertKeyPem, heads: Array<Record<string, string>>): Promise<string[]> => {
    const sess = http2.connect(s.url, { ca: s.ca.certPem, cert: c.certPem, key: c.keyPem });
    try {
      const names: string[] = [];
      for (const h of heads) {
        await new Promise<void>((resolve, reject) => {
          const req = sess.request({ ':path': '/api/v1/pods', ...h });
          req.on('response', () => undefined);
          req.on('error', reject);
          req.resume();
          req.on('end', () => resolve());
          req.end();
        });
        names.push(seen[seen.length - 1]!.user.name);
      }
      return names;
    } finally {
      sess.close();
    }
  };
  t.same(await session(proxy, [{}, { 'x-remote-user': 'jane' }, {}, { 'x-remote-user': 'joe' }]),
    ['front-proxy-client', 'jane', 'front-proxy-client', 'joe'], 'each request on the proxy\'s connection names its own user');
  t.same(await session(carol, [{}, { 'x-remote-user': 'jane' }]), ['carol', 'carol'], 'a CN outside allowed-names stays itself on its connection');
});

t.test('the extension-apiserver-authentication ConfigMap: contents, kubectl, kept current', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'authn-rh-cm-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const proxyCa = await createCA({ commonName: 'front-proxy-ca' });
  const proxyCaFile = join(dir, 'front-proxy-ca.crt');
  await writeFile(proxyCaFile, proxyCa.certPem);
  const proxy = await issueCert({ ca: proxyCa, commonName: 'front-proxy-client', usages: 'client' });
  const s = await startApiserver({
    args: [`--requestheader-client-ca-file=${proxyCaFile}`, '--requestheader-allowed-names=front-proxy-client',
      '--requestheader-username-headers=X-Remote-User', '--requestheader-group-headers=X-Remote-Group',
      '--requestheader-extra-headers-prefix=X-Remote-Extra-'],
  });
  t.teardown(() => s.stop());
  const { readFile } = await import('node:fs/promises');
  const admin = { ca: s.ca.certPem, cert: await readFile(s.clientCertFile), key: await readFile(s.clientKeyFile) };
  const path = '/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication';
  const want = {
    'client-ca-file': s.ca.certPem,
    'requestheader-allowed-names': '["front-proxy-client"]',
    'requestheader-client-ca-file': proxyCa.certPem,
    'requestheader-extra-headers-prefix': '["X-Remote-Extra-"]',
    'requestheader-group-headers': '["X-Remote-Group"]',
    'requestheader-username-headers': '["X-Remote-User"]',
  };
  const data = async (): Promise<Record<string, string> | undefined> => {
    const r = await h2request(s.url, { path, ...admin });
    return r.status === 200 ? JSON.parse(r.body).data : undefined;
  };
  t.same(await data(), want, 'published at start: both CAs and the header settings as JSON arrays');

  for (const [minor, bin] of [[27, k127], [33, k133]] as const) {
    if (!bin) { t.comment(`kubectl.1.${minor} not installed: skipped`); continue; }
    const r = await new Promise<{ code: number; out: string; err: string }>((resolve) => {
      execFile(bin, ['get', 'configmap', '-n', 'kube-system', 'extension-apiserver-authentication', '-o', 'json', '--kubeconfig', s.coreconfigPath, '--cache-dir', join(s.dir, `kc-${minor}`)],
        { timeout: 30_000 }, (e, out, err) => resolve({ code: e ? 1 : 0, out, err }));
    });
    t.equal(r.code, 0, r.err);
    t.same(JSON.parse(r.out).data, want, `kubectl 1.${minor} reads it`);
  }

  // The proxy works on this server too (full stack).
  const who = await h2request(s.url, {
    path: '/apis/authentication.k8s.io/v1/selfsubjectreviews', method: 'POST', ca: s.ca.certPem, cert: proxy.certPem, key: proxy.keyPem,
    headers: { 'content-type': 'application/json', 'x-remote-user': 'jane', 'x-remote-group': 'viewers' },
    body: JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' }),
  });
  t.same(JSON.parse(who.body).status.userInfo, { username: 'jane', groups: ['viewers', 'system:authenticated'] }, 'SelfSubjectReview through the proxy');

  // Kept current: deleted → written again; edited → restored.
  const del = await h2request(s.url, { path, method: 'DELETE', ...admin });
  t.equal(del.status, 200);
  t.same(await waitFor('the ConfigMap written again', async () => { const d = await data(); return d && same(d, want) ? d : undefined; }), want, 'deleted: written again');
  const put = await h2request(s.url, {
    path, method: 'PATCH', ...admin, headers: { 'content-type': 'application/merge-patch+json' },
    body: JSON.stringify({ data: { 'requestheader-allowed-names': '["mallory"]', extra: 'x' } }),
  });
  t.equal(put.status, 200, put.body);
  t.same(await waitFor('the ConfigMap restored', async () => { const d = await data(); return d && same(d, want) ? d : undefined; }), want, 'edited: restored');
});

t.test('start-up errors name the option', async (t) => {
  const { runExpectingStartFailure } = await import('../helpers/apiserver.js');
  const dir = await mkdtemp(join(tmpdir(), 'authn-rh-opts-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  let r = await runExpectingStartFailure([`--requestheader-client-ca-file=${join(dir, 'missing.crt')}`]);
  t.not(r.code, 0);
  t.match(r.stderr, /--requestheader-client-ca-file/);
  const empty = join(dir, 'empty.crt');
  await writeFile(empty, 'nothing here\n');
  r = await runExpectingStartFailure([`--requestheader-client-ca-file=${empty}`]);
  t.match(r.stderr, /--requestheader-client-ca-file.*no PEM certificate/);
});

import t from 'tap';
import * as http2 from 'node:http2';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RestHandler } from '../../src/daemons/apiserver/chain.js';
import { startApiserver } from '../helpers/apiserver.js';

// Requests on one connection share its client certificate's user; other connections do not.
let sawAuthorization = false;
const echoUser: RestHandler = {
  async handle(ctx, req, res) {
    if (req.headers['authorization'] !== undefined) sawAuthorization = true;
    res.setHeader('Content-Type', 'application/json');
    res.end(JSON.stringify(ctx.user));
  },
};

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
  t.notOk(sawAuthorization, 'the Authorization header is still removed');

  const plain = await connect(s.url, { ca });
  t.teardown(() => plain.close());
  t.same(JSON.parse((await get(plain, { authorization: 'Bearer tok-bob' })).body), { name: 'bob', uid: '42', groups: ['g1', 'system:authenticated'] }, 'another connection: its own credentials');
  t.equal((await get(plain, { authorization: 'Bearer wrong' })).status, 401);
  t.same(JSON.parse((await get(plain)).body), { name: 'system:anonymous', groups: ['system:unauthenticated'] });
});

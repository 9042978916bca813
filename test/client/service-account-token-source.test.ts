// The token source behind --use-service-account-credentials: creates the missing account, asks
// TokenRequest for 3600 s, reuses the token until 80 % of its lifetime, renews after, and a
// client using it sends the token and retries once with a fresh one after a 401.
import t from 'tap';
import { ManualClock } from '../../src/client/clock.js';
import { RestClient } from '../../src/client/rest-client.js';
import { ServiceAccountTokenSource } from '../../src/client/service-account-token-source.js';
import { startLocalH2, type Recorded } from './local-h2-server.js';

interface Api { accountExists: boolean; issued: number; valid: Set<string>; tokenBodies: unknown[] }

function json(res: import('node:http2').Http2ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

const notFound = { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404, message: 'not found' };

async function fakeApi(t: { teardown(f: () => unknown): void }, api: Api) {
  const srv = await startLocalH2((r: Recorded, res) => {
    const sa = '/api/v1/namespaces/kube-system/serviceaccounts';
    if (r.method === 'GET' && r.path === `${sa}/job-controller`) { if (api.accountExists) json(res, 200, { kind: 'ServiceAccount', apiVersion: 'v1', metadata: { name: 'job-controller' } }); else json(res, 404, notFound); return; }
    if (r.method === 'GET' && r.path === '/api/v1/namespaces/kube-system') { json(res, 200, { kind: 'Namespace', apiVersion: 'v1', metadata: { name: 'kube-system' } }); return; }
    if (r.method === 'POST' && r.path === sa) { api.accountExists = true; json(res, 201, JSON.parse(r.body.toString())); return; }
    if (r.method === 'POST' && r.path === `${sa}/job-controller/token`) {
      const body = JSON.parse(r.body.toString()) as { spec: { expirationSeconds: number } };
      api.tokenBodies.push(body);
      const token = `token-${++api.issued}`;
      api.valid.add(token);
      json(res, 201, { ...body, status: { token, expirationTimestamp: new Date(Date.now() + body.spec.expirationSeconds * 1000).toISOString() } });
      return;
    }
    if (r.path.startsWith('/api/v1/namespaces/default/configmaps')) {
      const auth = String(r.headers.authorization ?? '');
      if (!api.valid.has(auth.replace(/^Bearer /, ''))) { json(res, 401, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'Unauthorized', code: 401, message: 'Unauthorized' }); return; }
      json(res, 200, { kind: 'ConfigMapList', apiVersion: 'v1', metadata: {}, items: [] });
      return;
    }
    json(res, 404, notFound);
  });
  t.teardown(() => srv.close());
  return srv;
}

t.test('creates the account, reuses the token until 80 % of its life, then renews', async (t) => {
  const api: Api = { accountExists: false, issued: 0, valid: new Set(), tokenBodies: [] };
  const srv = await fakeApi(t, api);
  const manager = new RestClient({ connection: { server: srv.url }, contentType: 'application/json', qps: 0 });
  t.teardown(() => manager.close());
  const clock = new ManualClock(Date.now());
  const source = new ServiceAccountTokenSource({ client: manager, namespace: 'kube-system', name: 'job-controller', clock });
  t.equal(await source.token(), 'token-1');
  t.ok(api.accountExists, 'the missing account was created');
  t.same(api.tokenBodies[0], { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 3600 } });
  const [a, b] = await Promise.all([source.token(), source.token()]);
  t.same([a, b], ['token-1', 'token-1'], 'cached');
  await clock.advance(2870_000);
  t.equal(await source.token(), 'token-1', 'still used before 80 % of 3600 s');
  await clock.advance(10_000);
  t.equal(await source.token(), 'token-2', 'renewed once 20 % of the lifetime is left');
  source.reset();
  t.equal(await source.token(), 'token-3', 'reset drops the cached token');
});

t.test('a client with the source sends its token; after a 401 it gets a fresh one and retries once', async (t) => {
  const api: Api = { accountExists: true, issued: 0, valid: new Set(), tokenBodies: [] };
  const srv = await fakeApi(t, api);
  const manager = new RestClient({ connection: { server: srv.url }, contentType: 'application/json', qps: 0 });
  const source = new ServiceAccountTokenSource({ client: manager, namespace: 'kube-system', name: 'job-controller' });
  const client = new RestClient({ connection: { server: srv.url }, contentType: 'application/json', qps: 0, tokenSource: source });
  t.teardown(() => { client.close(); manager.close(); });
  const ref = { group: '', version: 'v1', resource: 'configmaps', namespace: 'default' };
  await client.list(ref);
  const sent = srv.requests.filter((r) => r.path.includes('configmaps')).map((r) => r.headers.authorization);
  t.same(sent, ['Bearer token-1']);
  api.valid.clear(); // the API server no longer accepts token-1
  await client.list(ref);
  const after = srv.requests.filter((r) => r.path.includes('configmaps')).map((r) => r.headers.authorization);
  t.same(after, ['Bearer token-1', 'Bearer token-1', 'Bearer token-2'], 'refused once, then a fresh token');
  api.valid.clear();
  source.reset();
  api.valid.add('never');
  // Every token refused: one retry only, then the 401 is the caller's.
  const issuedBefore = api.issued;
  const origAdd = api.valid.add.bind(api.valid);
  api.valid.add = () => api.valid; // tokens issued from now on are not accepted
  await t.rejects(client.list(ref), { message: 'Unauthorized' });
  api.valid.add = origAdd;
  t.equal(api.issued - issuedBefore, 2, 'one token, one fresh token after the 401, no more');
});

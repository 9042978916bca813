import t from 'tap';
import { isApiError } from '../../src/api/meta/status.js';
import { ManualClock } from '../../src/client/clock.js';
import { loadCoreconfig } from '../../src/client/coreconfig.js';
import { TokenBucket } from '../../src/client/rate-limiter.js';
import { RestClient, resourcePath, type ResourceRef } from '../../src/client/rest-client.js';
import type { WatchEvent } from '../../src/client/watch-stream.js';
import { startApiserver } from '../helpers/apiserver.js';
import { startLocalH2 } from './local-h2-server.js';

// Secrets skip the watch cache here, so a watch from a compacted revision is answered by the
// store itself: the 410 below does not depend on when a cache happened to start.
const api = await startApiserver({ args: ['--watch-cache-sizes=secrets#0'] });
t.teardown(() => api.stop());
const conn = await loadCoreconfig({ path: api.coreconfigPath });
const cms = (ns: string): ResourceRef => ({ group: '', version: 'v1', resource: 'configmaps', namespace: ns });

for (const contentType of ['application/json', 'application/vnd.kubernetes.protobuf'] as const) {
  t.test(`CRUD and watch against the API server (${contentType})`, async (t) => {
    const client = new RestClient({ connection: conn, contentType, qps: 0 });
    t.teardown(() => client.close());
    const ref = cms('default');
    const name = contentType === 'application/json' ? 'json-cm' : 'proto-cm';
    const created = await client.create(ref, { metadata: { name, labels: { app: 'x' } }, data: { a: '1' } });
    t.equal(created.metadata?.name, name);
    t.equal(created.kind, 'ConfigMap');
    t.ok(created.metadata?.resourceVersion);

    const got = await client.get(ref, name);
    t.same(got.data, { a: '1' });

    const list = await client.list(ref, { labelSelector: 'app=x' });
    t.ok(list.items.some((i) => i.metadata?.name === name));
    t.ok(list.metadata.resourceVersion);

    const watchAc = new AbortController();
    const stream = await client.watch(ref, { resourceVersion: list.metadata.resourceVersion, signal: watchAc.signal, fieldSelector: `metadata.name=${name}` });
    const events: WatchEvent[] = [];
    const collecting = (async () => {
      for await (const e of stream) { events.push(e); if (e.type === 'DELETED') break; }
    })();

    const updated = await client.update(ref, { ...got, data: { a: '2' } });
    t.same(updated.data, { a: '2' });
    // Optimistic concurrency: the stale resourceVersion is refused.
    const conflict = await client.update(ref, { ...got, data: { a: '3' } }).catch((e: unknown) => e);
    t.ok(isApiError(conflict, 'Conflict'), 'stale update is a Conflict ApiError');

    const patched = await client.patch(ref, name, 'merge', { data: { b: '9' } });
    t.same(patched.data, { a: '2', b: '9' });
    await client.delete(ref, name);
    const missing = await client.get(ref, name).catch((e: unknown) => e);
    t.ok(isApiError(missing, 'NotFound'), 'deleted object is NotFound');
    t.equal(isApiError(missing) ? missing.code : 0, 404);

    await collecting;
    watchAc.abort();
    t.same(events.map((e) => e.type), ['MODIFIED', 'MODIFIED', 'DELETED']);
    t.same(events[0].object.data, { a: '2' });
    t.equal(events[2].object.metadata?.name, name);
  });
}

t.test('watch from a compacted version reports ERROR 410', async (t) => {
  const client = new RestClient({ connection: conn, contentType: 'application/vnd.kubernetes.protobuf', qps: 0 });
  t.teardown(() => client.close());
  const secrets: ResourceRef = { group: '', version: 'v1', resource: 'secrets', namespace: 'default' };
  const made = await client.create(secrets, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'compaction-mark' } });
  await api.parts!.storage.default.compact(Number(made.metadata?.resourceVersion));
  const out: WatchEvent[] = [];
  try {
    for await (const e of await client.watch(secrets, { resourceVersion: '1' })) out.push(e);
  } catch (e) {
    t.ok(isApiError(e) && e.code === 410, 'or a 410 at open');
    return;
  }
  t.equal(out[0]?.type, 'ERROR');
  t.equal((out[0]?.object as { code?: number }).code, 410);
});

t.test('rate limiter: every request takes a token, paced by qps after the burst', async (t) => {
  const clock = new ManualClock();
  const b = new TokenBucket({ qps: 2, burst: 3, clock });
  t.equal(b.reserve(), 0);
  t.equal(b.reserve(), 0);
  t.equal(b.reserve(), 0);
  t.equal(b.reserve(), 500, 'the 4th token waits 1/qps');
  t.equal(b.reserve(), 1000, 'the 5th waits behind the 4th');
  await clock.advance(1000);
  t.equal(Math.round(b.available()), 0);
  t.equal(new TokenBucket({ qps: 0, burst: 1 }).reserve(), 0, 'qps 0 is unlimited');
  // take() waits on the clock; an aborted wait gives the token back.
  const c2 = new TokenBucket({ qps: 1, burst: 1, clock });
  await c2.take();
  const ac = new AbortController();
  const p = c2.take(ac.signal);
  ac.abort();
  await t.rejects(p);
  t.ok(c2.available() > -0.5, 'token returned');

  const client = new RestClient({ connection: conn, qps: 5, burst: 2 });
  t.teardown(() => client.close());
  for (let i = 0; i < 4; i++) await client.get(cms(''), 'x').catch(() => undefined);
  t.equal(client.limiter.taken, 4, 'one token per request');
});

t.test('retries honour Retry-After on 429 and never resend a POST that may have applied', async (t) => {
  let n = 0;
  const srv = await startLocalH2((req, res) => {
    n++;
    if (req.path.includes('/retry-me') && n === 1) {
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '3' });
      res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', reason: 'TooManyRequests', code: 429, message: 'slow down' }));
      return;
    }
    if (req.path.includes('/fail-503')) {
      res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' });
      res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', reason: 'ServiceUnavailable', code: 503, message: 'busy' }));
      return;
    }
    res.writeHead(req.method === 'POST' ? 201 : 200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ kind: 'ConfigMap', apiVersion: 'v1', metadata: { name: 'ok' } }));
  });
  const sleeps: number[] = [];
  const clock = { now: () => Date.now(), sleep: async (ms: number) => { sleeps.push(ms); } };
  const client = new RestClient({ connection: { server: srv.url }, contentType: 'application/json', qps: 0, clock });
  t.teardown(async () => { client.close(); await srv.close(); });

  const got = await client.get(cms('ns'), 'retry-me');
  t.equal(got.metadata?.name, 'ok');
  t.same(sleeps, [3000], 'waited Retry-After seconds');
  t.equal(srv.requests.length, 2);

  n = 0; sleeps.length = 0;
  const created = await client.create({ ...cms('ns'), resource: 'configmaps' }, { metadata: { name: 'retry-me' } }, { name: 'retry-me' });
  t.equal(created.metadata?.name, 'ok', 'POST is retried after 429');
  t.same(sleeps, [3000]);

  sleeps.length = 0;
  const before = srv.requests.length;
  const err = await client.create(cms('ns'), { metadata: { name: 'x' } }, { name: 'fail-503' }).catch((e: unknown) => e);
  t.ok(isApiError(err) && err.code === 503, 'a POST 503 is returned, not retried');
  t.equal(srv.requests.length - before, 1);

  const before2 = srv.requests.length;
  const err2 = await client.get(cms('ns'), 'fail-503').catch((e: unknown) => e);
  t.ok(isApiError(err2, 'ServiceUnavailable'));
  t.equal(srv.requests.length - before2, 11, 'a GET 503 with Retry-After is retried 10 times');
  t.equal(sleeps.filter((s) => s === 1000).length, 10);
});

// Names such as system:controller:x travel unescaped, as client-go (url.PathEscape) sends them.
t.test('path segments keep ":" and "@", escape the rest', async (t) => {
  t.equal(resourcePath({ group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'clusterrolebindings', name: 'system:controller:job-controller' }),
    '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/system:controller:job-controller');
  t.equal(resourcePath({ group: '', version: 'v1', resource: 'configmaps', namespace: 'a', name: 'x y/z@w' }), '/api/v1/namespaces/a/configmaps/x%20y%2Fz@w');
});

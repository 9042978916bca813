// The client with several API servers: it moves on after a connection failure or a 5xx, comes
// back to the first after failbackMs, and a reflector whose watch breaks resumes from its last
// resourceVersion (no relist, nothing missed or repeated).
import t from 'tap';
import type { KubeObject } from '../../src/api/resources/types.js';
import { serverList } from '../../src/client/coreconfig.js';
import { Reflector, type ListerWatcher } from '../../src/client/reflector.js';
import { RestClient, type KubeList, type ListOptions } from '../../src/client/rest-client.js';
import type { WatchEvent } from '../../src/client/watch-stream.js';
import { startLocalH2, type LocalServer } from './local-h2-server.js';

const CM = { group: '', version: 'v1', resource: 'configmaps', namespace: 'ns' };

function answering(name: string, status = (): number => 200): Promise<LocalServer> {
  return startLocalH2((_req, res) => {
    const code = status();
    res.writeHead(code, { 'content-type': 'application/json' });
    res.end(JSON.stringify(code === 200 ? { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name } } : { kind: 'Status', code, reason: 'InternalError', message: 'etcd is gone' }));
  });
}

t.test('serverList: one server or a comma-separated list', async (t) => {
  t.same(serverList('https://a:6443'), { server: 'https://a:6443' });
  t.same(serverList('https://a:6443, b:6443'), { server: 'https://a:6443', servers: ['https://a:6443', 'https://b:6443'] });
  t.throws(() => serverList(' , '));
});

t.test('a dead server: the next request goes to the other, then back after failbackMs', async (t) => {
  const a = await answering('a'), b = await answering('b');
  t.teardown(async () => { await b.close(); });
  const client = new RestClient({ connection: { server: a.url, servers: [a.url, b.url] }, qps: 0, contentType: 'application/json', transport: { failbackMs: 400 } });
  t.teardown(() => client.close());
  t.equal((await client.get(CM, 'x')).metadata?.name, 'a', 'the first server first');
  const port = Number(new URL(a.url).port);
  await a.close();
  t.equal((await client.get(CM, 'x')).metadata?.name, 'b', 'failed over without an error');
  t.equal(client.transport.server, b.url);
  // The first comes back on its port; after failbackMs the client returns to it.
  const { createServer } = await import('node:http2');
  const again = createServer((_req, res) => { res.writeHead(200, { 'content-type': 'application/json' }); res.end(JSON.stringify({ metadata: { name: 'a2' } })); });
  await new Promise<void>((r) => again.listen(port, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => { again.close(() => r()); }));
  const deadline = Date.now() + 10_000;
  let name = '';
  while (Date.now() < deadline && name !== 'a2') {
    name = (await client.get(CM, 'x')).metadata?.name ?? '';
    if (name !== 'a2') await new Promise((r) => setTimeout(r, 100));
  }
  t.equal(name, 'a2', 'failed back to the first server');
  client.close();
  // A second transport session may linger on `again`; close it.
});

t.test('a 5xx: an idempotent request is retried on the other server, a POST is not', async (t) => {
  const a = await answering('a', () => 504), b = await answering('b');
  t.teardown(async () => { await a.close(); await b.close(); });
  const client = new RestClient({ connection: { server: a.url, servers: [a.url, b.url] }, qps: 0, contentType: 'application/json', transport: { failbackMs: 60_000 } });
  t.teardown(() => client.close());
  t.equal((await client.get(CM, 'x')).metadata?.name, 'b', 'GET answered by the other server');
  t.equal(a.requests.length, 1);

  const c = await answering('c', () => 503), d = await answering('d');
  t.teardown(async () => { await c.close(); await d.close(); });
  const poster = new RestClient({ connection: { server: c.url, servers: [c.url, d.url] }, qps: 0, contentType: 'application/json', transport: { failbackMs: 60_000 } });
  t.teardown(() => poster.close());
  await t.rejects(poster.create(CM, { metadata: { name: 'x' } }), { code: 503 }, 'a POST that may have been applied is not resent');
  t.equal(d.requests.length, 0);
  t.equal((await poster.create(CM, { metadata: { name: 'x' } })).metadata?.name, 'd', 'the next request goes to the other server');
});

t.test('a reflector resumes a broken watch from its last resourceVersion, without a relist', async (t) => {
  const lists: ListOptions[] = [], watches: ListOptions[] = [];
  let round = 0;
  const ev = (rv: string): WatchEvent => ({ type: 'ADDED', object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `c${rv}`, namespace: 'ns', resourceVersion: rv } } });
  const lw: ListerWatcher = {
    async list(o) { lists.push(o); return { apiVersion: 'v1', kind: 'ConfigMapList', metadata: { resourceVersion: '10' }, items: [] } as KubeList; },
    async watch(o) {
      watches.push(o);
      const r = round++;
      return {
        async *[Symbol.asyncIterator]() {
          if (r === 0) { yield ev('11'); yield ev('12'); throw new Error('stream closed: the API server went away'); }
          if (r === 1) { yield ev('13'); }
          await new Promise((res) => o.signal?.addEventListener('abort', res, { once: true }));
        },
      };
    },
  };
  const seen: string[] = [];
  const ac = new AbortController();
  const reflector = new Reflector({ lw, sink: { replace: () => undefined, apply: (_t, o: KubeObject) => { seen.push(o.metadata!.resourceVersion!); } } });
  const run = reflector.run(ac.signal);
  const deadline = Date.now() + 10_000;
  while (seen.length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  ac.abort();
  await run;
  t.same(seen, ['11', '12', '13'], 'no gap, no duplicate');
  t.equal(lists.length, 1, 'no relist');
  t.equal(watches[1]?.resourceVersion, '12', 'resumed from the last version seen');
});

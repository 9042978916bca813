// resourceVersion edges of LIST, GET and WATCH as Kubernetes answers them: a resourceVersion in
// the future (up to 2^64-1) is a 504 Timeout Status with the ResourceVersionTooLarge cause for a
// read and a quiet watch; one past compaction is a 410 Expired in Kubernetes' words, for a list
// as an error and for a watch as an ERROR event naming the resourceVersion asked for.
import t from 'tap';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startApiserver } from '../helpers/apiserver.js';
import { connectClient, eventually, type RestClient } from '../helpers/rest-client.js';

const MAX_INT64 = '9223372036854775807';
const MAX_UINT64 = '18446744073709551615';
const base = '/api/v1/namespaces/rv/configmaps';

async function setup(c: RestClient): Promise<string> {
  await c.request('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'rv' } } });
  const r = await c.request('POST', base, { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a' } } });
  return r.json.metadata.resourceVersion as string;
}

function tooLarge(rv: string): object {
  return {
    kind: 'Status', apiVersion: 'v1', status: 'Failure', code: 504, reason: 'Timeout',
    message: new RegExp(`^Timeout: Too large resource version: ${rv}, current: \\d+$`),
    details: { causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }] },
  };
}

for (const cached of [true, false]) {
  t.test(`a resourceVersion in the future (${cached ? 'watch cache' : '--watch-cache=false'})`, async (t) => {
    const a = await startApiserver({ args: cached ? [] : ['--watch-cache=false'] });
    t.teardown(() => a.stop());
    const c = await connectClient(a);
    t.teardown(() => c.close());
    await setup(c);
    // (With the cache each waits 3 s for the revision, as the cacher does.)
    const list = await c.request('GET', `${base}?resourceVersion=${MAX_INT64}`);
    t.equal(list.status, 504, `LIST at ${MAX_INT64}`);
    t.match(list.json, tooLarge(MAX_INT64));
    if (cached) t.equal(list.json.details.retryAfterSeconds, 1, 'retry after a second, as the cacher says');
    const get = await c.request('GET', `${base}/a?resourceVersion=${MAX_UINT64}`);
    t.equal(get.status, 504, `GET at ${MAX_UINT64}`);
    t.match(get.json, tooLarge(MAX_UINT64));
    // Past 2^64-1 it is no resourceVersion at all.
    for (const path of [`${base}?resourceVersion=${MAX_UINT64}0`, `${base}?watch=true&resourceVersion=18446744073709551616`]) {
      const bad = await c.request('GET', path);
      t.equal(bad.status, 400, path);
      t.match(bad.json, { kind: 'Status', reason: 'BadRequest' });
    }
    // A watch there is accepted and waits for revisions that never come before its timeout.
    const w = c.stream(`${base}?watch=true&resourceVersion=${MAX_INT64}&timeoutSeconds=2&allowWatchBookmarks=true`);
    t.equal(await w.status(), 200);
    t.equal((await c.request('POST', base, { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'later' } } })).status, 201);
    t.equal(await w.next(15_000), undefined, 'no event (nor bookmark) before the watch times out');
  });
}

t.test('410 Expired in Kubernetes\' words for a list and a watch past compaction', async (t) => {
  const tmp = await mkdtemp(join(tmpdir(), 'corectl-rv410-'));
  t.teardown(() => rm(tmp, { recursive: true, force: true }));
  const data = join(tmp, 'data');
  const first = await startApiserver({ args: [`--data-dir=${data}`] });
  const fc = await connectClient(first);
  const old = await setup(fc);
  // A later write, so that `old` lies before the revision the restarted server loads at.
  await fc.request('POST', base, { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'later' } } });
  fc.close();
  await first.stop();

  // Restarted: the watch cache's history starts at the load revision; the store compacts every second.
  const a = await startApiserver({ args: [`--data-dir=${data}`, '--kvstore-compaction-interval=1s'] });
  t.teardown(() => a.stop());
  const c = await connectClient(a);
  t.teardown(() => c.close());
  const w = c.stream(`${base}?watch=true&resourceVersion=${old}&timeoutSeconds=20`);
  t.equal(await w.status(), 200, 'a watch answers 200 and says it in an event');
  const ev = JSON.parse((await w.next())!);
  t.match(ev, { type: 'ERROR', object: { kind: 'Status', status: 'Failure', code: 410, reason: 'Expired' } });
  t.match(ev.object.message, new RegExp(`^too old resource version: ${old} \\((\\d+)\\)$`), 'names the resourceVersion asked for');
  const oldest = Number(/\((\d+)\)$/.exec(ev.object.message)![1]);
  t.ok(oldest > Number(old), `then the last revision before the history (${oldest})`);
  t.equal(await w.next(), undefined, 'and ends');

  // Writes move the compaction point past `old`; an exact list there is then gone.
  let n = 0;
  const gone = await eventually(async () => {
    await c.request('POST', base, { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `c${n++}` } } });
    const r = await c.request('GET', `${base}?resourceVersion=${old}&resourceVersionMatch=Exact`);
    return r.status === 410 ? r : undefined;
  }, 20_000);
  t.match(gone.json, { kind: 'Status', code: 410, reason: 'Expired', message: 'The resourceVersion for the provided list is too old.' });
});

t.test('410 for a watch without the watch cache, in etcd\'s words', async (t) => {
  const a = await startApiserver({ args: ['--watch-cache=false', '--kvstore-compaction-interval=1s'] });
  t.teardown(() => a.stop());
  const c = await connectClient(a);
  t.teardown(() => c.close());
  const old = await setup(c);
  let n = 0;
  const ev = await eventually(async () => {
    await c.request('POST', base, { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `c${n++}` } } });
    const w = c.stream(`${base}?watch=true&resourceVersion=${old}&timeoutSeconds=5`);
    try {
      const line = await w.next(5000);
      const e = line === undefined ? undefined : JSON.parse(line) as { type: string; object: { message?: string } };
      return e?.type === 'ERROR' ? e : undefined;
    } finally {
      w.close();
    }
  }, 20_000);
  t.match(ev, { type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: 'The resourceVersion for the provided watch is too old.' } });
});

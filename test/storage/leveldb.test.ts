import t, { type Test } from 'tap';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openLevelBackend } from '../../src/storage/leveldb/level-backend.js';
import { verifyLevelStore } from '../../src/storage/leveldb/verify.js';
import { collectEvents, runConformance } from './conformance.js';

async function tempDir(t: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-leveldb-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

const buf = (s: string): Buffer => Buffer.from(s);

await runConformance(t, 'leveldb', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-leveldb-'));
  const backend = await openLevelBackend({ dir, ttlSweepIntervalMs: 200, progressIntervalMs: 200 });
  return {
    backend,
    async cleanup() {
      await backend.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
});

t.test('reopen recovers revision, data, history, compaction point and TTL deadlines', async (t) => {
  const dir = await tempDir(t);
  let b = await openLevelBackend({ dir, ttlSweepIntervalMs: 100 });
  const a1 = await b.create('/x/a', buf('a1'));
  const a2 = await b.update('/x/a', buf('a2'), a1.revision);
  await b.create('/x/b', buf('b1'));
  const d = await b.delete('/x/b');
  await b.compact(a2.revision);
  const e = await b.create('/x/e', buf('expires'), { ttlSeconds: 1 });
  const last = await b.create('/x/c', buf('c1'));
  await b.close();
  await t.rejects(b.get('/x/a'), { code: 'Unavailable' }, 'a closed backend answers Unavailable');

  const report = await verifyLevelStore(dir);
  t.same(report.problems, [], 'the closed store is consistent');
  t.equal(report.revision, last.revision);

  b = await openLevelBackend({ dir, ttlSweepIntervalMs: 100 });
  t.equal(await b.currentRevision(), last.revision, 'the revision survives');
  t.equal(await b.compactedRevision(), a2.revision, 'the compaction point survives');
  t.equal((await b.get('/x/a')).kv?.value.toString(), 'a2');
  t.equal((await b.get('/x/b')).kv, undefined);
  t.same((await b.range('/x/', { prefix: true, revision: d.revision - 1 })).kvs.map((kv) => kv.key), ['/x/a', '/x/b']);
  await t.rejects(b.get('/x/a', { revision: a1.revision }), { code: 'Compacted' });
  const next = await b.create('/x/d', buf('d1'));
  t.equal(next.revision, last.revision + 1, 'numbering continues');
  const evs = await collectEvents(b.watch('/x/', { prefix: true, fromRevision: d.revision }), 4);
  t.same(evs.map((ev) => `${ev.type} ${ev.kv.key}`), ['DELETE /x/b', 'PUT /x/e', 'PUT /x/c', 'PUT /x/d'], 'history replays across a restart');
  // The TTL deadline was stored: the key expires after the restart.
  const expired = await collectEvents(b.watch('/x/e', { fromRevision: next.revision + 1 }), 1, 10_000);
  t.match(expired, [{ type: 'DELETE', prevKv: { modRevision: e.revision } }]);
  await b.close();
  t.same((await verifyLevelStore(dir)).problems, []);
});

t.test('the data directory is locked against a second opener', async (t) => {
  const dir = await tempDir(t);
  const b = await openLevelBackend({ dir });
  t.teardown(() => b.close());
  await t.rejects(openLevelBackend({ dir }), { code: 'Unavailable', message: `data directory ${dir} is locked by another process` }, 'same process');

  const modUrl = new URL('../../src/storage/leveldb/level-backend.js', import.meta.url).href;
  const script = `
    const { openLevelBackend } = await import(${JSON.stringify(modUrl)});
    try { await openLevelBackend({ dir: ${JSON.stringify(dir)} }); console.log('OPENED'); }
    catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })); }`;
  const out = await new Promise<string>((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    let s = '';
    child.stdout.on('data', (c: Buffer) => { s += c.toString(); });
    child.on('error', reject);
    child.on('close', () => resolve(s.trim()));
  });
  t.same(JSON.parse(out), { code: 'Unavailable', message: `data directory ${dir} is locked by another process` }, 'another process');
  t.equal(fileURLToPath(modUrl).endsWith('level-backend.js'), true);
});

t.test('group commit batches concurrent writers and not a lone one', async (t) => {
  const dir = await tempDir(t);
  const b = await openLevelBackend({ dir });
  t.teardown(() => b.close());

  let s0 = b.stats;
  for (let i = 0; i < 10; i++) await b.create(`/seq/${i}`, buf('x'));
  let s1 = b.stats;
  t.equal(s1.batches - s0.batches, 10, 'a lone sequential writer gets one batch per write');

  s0 = b.stats;
  await Promise.all(Array.from({ length: 64 }, (_, i) => b.create(`/par/${i}`, buf('x'))));
  s1 = b.stats;
  t.equal(s1.writes - s0.writes, 64);
  t.ok(s1.batches - s0.batches <= 2, `64 concurrent creates took ${s1.batches - s0.batches} batches`);

  // Writers arriving while a batch is in flight join the next one.
  s0 = b.stats;
  const first = b.create('/late/0', buf('x'));
  await Promise.resolve();
  await new Promise((r) => setImmediate(r));
  const rest = Array.from({ length: 20 }, (_, i) => b.create(`/late/${i + 1}`, buf('x')));
  await Promise.all([first, ...rest]);
  s1 = b.stats;
  t.equal(s1.writes - s0.writes, 21);
  t.ok(s1.batches - s0.batches < 21, `21 writes took ${s1.batches - s0.batches} batches`);

  // CAS decisions see earlier writes that are not yet durable.
  const c = await b.create('/cas', buf('0'));
  const u1 = b.update('/cas', buf('1'), c.revision);
  const u2 = b.update('/cas', buf('2'), c.revision);
  const results = await Promise.allSettled([u1, u2]);
  t.equal(results.filter((r) => r.status === 'fulfilled').length, 1, 'exactly one CAS wins');
  t.match(results.find((r) => r.status === 'rejected'), { reason: { code: 'Conflict' } });
});

t.test('a watcher that does not consume is ended with Unavailable', async (t) => {
  const dir = await tempDir(t);
  const b = await openLevelBackend({ dir, watchQueueLimit: 50 });
  t.teardown(() => b.close());
  const w = b.watch('/q/', { prefix: true });
  for (let i = 0; i < 60; i++) await b.create(`/q/${i}`, buf('x'));
  await t.rejects(collectEvents(w, 1000, 5000), { code: 'Unavailable' });
  t.equal(b.stats.watchers, 0, 'the watch is unregistered');
  // History replay paces itself to the consumer instead of failing.
  const evs = await collectEvents(b.watch('/q/', { prefix: true, fromRevision: 1 }), 60, 10_000);
  t.equal(evs.length, 60);
});

t.test('compaction keeps the latest value of live keys and drops older history', async (t) => {
  const dir = await tempDir(t);
  const b = await openLevelBackend({ dir });
  let rev = 0;
  const c = await b.create('/k/live', buf('v0'));
  rev = c.revision;
  for (let i = 1; i <= 20; i++) rev = (await b.update('/k/live', buf(`v${i}`), rev)).revision;
  await b.create('/k/gone', buf('g'));
  const del = await b.delete('/k/gone');
  await b.compact(del.revision);
  t.equal((await b.get('/k/live', { revision: del.revision })).kv?.value.toString(), 'v20');
  t.equal((await b.get('/k/gone', { revision: del.revision })).kv, undefined);
  await b.close();
  const report = await verifyLevelStore(dir);
  t.same(report.problems, []);
  // Left: /k/live's newest value, and /k/gone's value below the point (the prevKv of its DELETE
  // at the point) plus that DELETE; the 20 older values of /k/live are gone.
  t.equal(report.logRecords, 3);
});

t.test('a history replay is not disturbed by a compaction that starts during it', async (t) => {
  const dir = await tempDir(t);
  const b = await openLevelBackend({ dir, watchQueueLimit: 100 });
  t.teardown(() => b.close());
  const r0 = await b.currentRevision();
  await Promise.all(Array.from({ length: 1000 }, (_, i) => b.create(`/hr/${i}`, buf(String(i)))));
  const w = b.watch('/hr/', { prefix: true, fromRevision: r0 + 1 });
  const it = w[Symbol.asyncIterator]();
  const first = await it.next();
  t.equal(first.done, false);
  // The replay is paced by this consumer (queue limit 100); compact past it meanwhile.
  await b.compact(r0 + 900);
  const revs = (first.value as { events: { kv: { modRevision: number } }[] }).events.map((e) => e.kv.modRevision);
  while (revs.length < 1000) {
    const n = await it.next();
    if (n.done) break;
    for (const e of n.value.events) revs.push(e.kv.modRevision);
  }
  w.close();
  t.same(revs, Array.from({ length: 1000 }, (_, i) => r0 + 1 + i), 'all 1000 events, in order, despite the compaction');
});

t.test('close() ends open watches with Unavailable and later calls fail', async (t) => {
  const dir = await tempDir(t);
  const b = await openLevelBackend({ dir });
  const w = b.watch('/z/', { prefix: true });
  const ended = t.rejects(collectEvents(w, 10, 5000), { code: 'Unavailable' });
  await b.close();
  await ended;
  await t.rejects(b.create('/z/1', buf('x')), { code: 'Unavailable' });
  await t.rejects(b.range('/z/', { prefix: true }), { code: 'Unavailable' });
  await t.rejects(collectEvents(b.watch('/z/', { prefix: true }), 1, 1000), { code: 'Unavailable' });
  // The directory can be opened again in this process once closed.
  const again = await openLevelBackend({ dir });
  await again.close();
});

t.test('a failed write stops the backend instead of diverging from the disk', async (t) => {
  const dir = await tempDir(t);
  const b = await openLevelBackend({ dir });
  const w = b.watch('/f/', { prefix: true });
  const watchEnded = t.resolves(collectEvents(w, 1, 5000).catch(() => []));
  await b.create('/f/ok', buf('x'));
  // Fault injection: the database underneath goes away between the decision and the write.
  await (b as unknown as { db: { close(): Promise<void> } }).db.close();
  await t.rejects(b.create('/f/lost', buf('y')), { code: 'Unavailable' });
  await t.rejects(b.create('/f/after', buf('z')), { code: 'Unavailable' }, 'the backend stays stopped');
  await t.rejects(b.get('/f/ok'), { code: 'Unavailable' });
  await b.close();
  await watchEnded;
  const again = await openLevelBackend({ dir });
  t.equal((await again.get('/f/ok')).kv?.value.toString(), 'x', 'what was acknowledged is there');
  t.equal((await again.get('/f/lost')).kv, undefined, 'what failed is not');
  await again.close();
});

for (const countWindow of [100_000, 5]) {
  t.test(`range counts are exact while writes are in flight (count window ${countWindow})`, async (t) => {
    const dir = await tempDir(t);
    const b = await openLevelBackend({ dir, countWindow });
    t.teardown(() => b.close());
    for (let i = 0; i < 50; i++) await b.create(`/n/${String(i).padStart(3, '0')}`, buf('x'));
    const pages: { count: number; revision: number }[] = [];
    let stop = false;
    const writer = (async () => {
      for (let i = 50; !stop && i < 2000; i++) {
        const k = `/n/${String(i % 120).padStart(3, '0')}`;
        // Unawaited writes keep decided-but-not-durable creates and deletes around.
        const p = b.create(k, buf('y')).catch(() => b.delete(k).catch(() => undefined));
        if (i % 16 === 0) await p;
      }
    })();
    for (let i = 0; i < 40; i++) {
      const r = await b.range('/n/', { prefix: true, limit: 3, after: '/n/001' });
      pages.push({ count: r.count, revision: r.revision });
    }
    stop = true;
    await writer;
    const wrong: string[] = [];
    for (const p of pages) {
      const full = await b.range('/n/', { prefix: true, revision: p.revision });
      const counted = await b.range('/n/', { prefix: true, revision: p.revision, countOnly: true });
      const page = await b.range('/n/', { prefix: true, revision: p.revision, limit: 2, after: '/n/010' });
      if (full.kvs.length !== p.count || counted.count !== p.count || page.count !== p.count) {
        wrong.push(`@${p.revision}: page said ${p.count}, full ${full.kvs.length}, countOnly ${counted.count}, history page ${page.count}`);
      }
    }
    t.same(wrong, [], 'every count matches the full range at the same revision');
  });
}

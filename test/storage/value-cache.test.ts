// The LevelDB backend's cache of recently written values (prevKv without a read): exact-revision
// answers, pending values never evicted, committed values evicted least recently used first
// within the byte budget, also after many evictions and refreshes (the eviction order survives
// deletes and re-inserts).
import t from 'tap';
import { ValueCache } from '../../src/storage/leveldb/value-cache.js';

const buf = (n: number, fill = 'v'): Buffer => Buffer.alloc(n, fill);

t.test('answers only for the exact revision; pending values stay until committed', async (t) => {
  const c = new ValueCache(1000);
  c.decided('a', 2, buf(10, 'a'));
  t.same(c.get('a', 2), buf(10, 'a'));
  t.equal(c.get('a', 3), undefined);
  for (let i = 0; i < 100; i++) { c.decided(`k${i}`, 10 + i, buf(100)); c.committed(`k${i}`, 10 + i); }
  t.same(c.get('a', 2), buf(10, 'a'), 'a pending value is never evicted');
  c.committed('a', 2);
  t.same(c.get('a', 2), buf(10, 'a'));
  c.deleted('a');
  t.equal(c.get('a', 2), undefined);
});

t.test('evicts least recently used first within the budget', async (t) => {
  const c = new ValueCache(1000); // values of 100 bytes: at most 10 (each under budget / 8)
  let rev = 1;
  const put = (k: string): number => { rev++; c.decided(k, rev, buf(100)); c.committed(k, rev); return rev; };
  const revs = new Map<string, number>();
  for (let i = 0; i < 10; i++) revs.set(`k${i}`, put(`k${i}`));
  t.ok(c.get('k0', revs.get('k0')!), 'k0 is refreshed by a read');
  revs.set('k10', put('k10'));
  t.equal(c.get('k1', revs.get('k1')!), undefined, 'k1, the least recently used, went first');
  t.ok(c.get('k0', revs.get('k0')!), 'the refreshed k0 stayed');
  // Many rounds of inserts, refreshes, updates and deletes: the cache keeps the newest ten.
  for (let round = 0; round < 50; round++) {
    for (let i = 0; i < 7; i++) revs.set(`r${round}-${i}`, put(`r${round}-${i}`));
    if (round % 3 === 0) c.deleted(`r${round}-0`);
    revs.set(`r${round}-1`, put(`r${round}-1`)); // an update: a new revision of a cached key
  }
  const last = [...revs].filter(([k]) => k.startsWith('r49-') || k.startsWith('r48-'));
  const hits = last.filter(([k, r]) => c.get(k, r) !== undefined).map(([k]) => k);
  t.ok(hits.includes('r49-1') && hits.includes('r49-6'), `the newest writes are cached (${hits.join(' ')})`);
  t.equal(c.get('r0-2', revs.get('r0-2')!), undefined, 'old entries were evicted');
  let cached = 0;
  for (const [k, r] of revs) if (c.get(k, r)) cached++;
  t.ok(cached <= 10, `no more than the budget holds (${cached})`);
});

t.test('stays fast once full (no rescans of evicted slots)', async (t) => {
  const c = new ValueCache(1024 * 1024);
  const v = buf(1000);
  let rev = 1;
  for (let i = 0; i < 200_000; i++) { rev++; c.decided(`/registry/x/${i}`, rev, v); c.committed(`/registry/x/${i}`, rev); }
  // 200 000 writes through a full cache: correctness only here (timings are for benchmarks);
  // the newest value is there and the oldest is gone.
  t.ok(c.get('/registry/x/199999', rev));
  t.equal(c.get('/registry/x/0', 2), undefined);
});

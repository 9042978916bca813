import t from 'tap';
import { ManualClock } from '../../src/client/clock.js';
import { ItemExponentialRateLimiter, WorkQueue, defaultControllerRateLimiter } from '../../src/client/workqueue.js';

t.test('dedup: a key added many times before processing is processed once', async (t) => {
  const q = new WorkQueue();
  q.add('a'); q.add('b'); q.add('a'); q.add('a');
  t.equal(q.length, 2);
  t.equal(await q.get(), 'a');
  t.equal(await q.get(), 'b');
  q.shutDown();
  t.equal(await q.get(), undefined, 'get after shutdown');
  q.add('c');
  t.equal(q.length, 0, 'adds ignored after shutdown');
});

t.test('a key added while processing is re-queued after done, never handed out twice at once', async (t) => {
  const q = new WorkQueue();
  q.add('k');
  const k = await q.get();
  t.equal(k, 'k');
  q.add('k');
  t.equal(q.length, 0, 'not queued while processing');
  let second: string | undefined;
  const p = q.get().then((v) => { second = v; });
  await new Promise((r) => setImmediate(r));
  t.equal(second, undefined, 'a second worker does not get it');
  q.done('k');
  await p;
  t.equal(second, 'k', 're-queued on done');
  q.done('k');
  t.equal(q.length, 0);
  q.shutDown();
});

t.test('runWorkers: n workers, never the same key concurrently, errors rate-limited', async (t) => {
  const q = new WorkQueue({ rateLimiter: new ItemExponentialRateLimiter(1, 10) });
  const ac = new AbortController();
  const active = new Set<string>();
  let maxParallel = 0;
  let overlap = false;
  const counts = new Map<string, number>();
  let failOnce = true;
  const running = q.runWorkers(4, async (key) => {
    if (active.has(key)) overlap = true;
    active.add(key);
    maxParallel = Math.max(maxParallel, active.size);
    counts.set(key, (counts.get(key) ?? 0) + 1);
    // Re-adding during processing must not run the key in parallel.
    if ((counts.get(key) ?? 0) === 1 && key !== 'k3') q.add(key);
    await new Promise((r) => setTimeout(r, 5));
    active.delete(key);
    if (key === 'k3' && failOnce) { failOnce = false; throw new Error('boom'); }
  }, ac.signal);
  for (let i = 0; i < 8; i++) q.add(`k${i}`);
  const end = Date.now() + 10_000;
  while ([...Array(8).keys()].some((i) => (counts.get(`k${i}`) ?? 0) < 2) || q.numRequeues('k3') > 0) {
    if (Date.now() > end) throw new Error('workers did not finish');
    await new Promise((r) => setTimeout(r, 5));
  }
  ac.abort();
  await running;
  t.notOk(overlap, 'no key processed twice at once');
  t.ok(maxParallel > 1 && maxParallel <= 4, 'several workers ran in parallel');
  t.equal(counts.get('k3'), 2, 'the failed key was retried');
  t.equal(q.numRequeues('k3'), 0, 'and forgotten after success');
});

t.test('per-item exponential backoff 5 ms to 1000 s, forget resets', async (t) => {
  const r = new ItemExponentialRateLimiter();
  const w = Array.from({ length: 5 }, () => r.when('x'));
  t.same(w, [5, 10, 20, 40, 80]);
  for (let i = 0; i < 40; i++) r.when('x');
  t.equal(r.when('x'), 1000_000, 'capped at 1000 s');
  t.equal(r.when('y'), 5, 'per item');
  r.forget('x');
  t.equal(r.when('x'), 5);
});

t.test('default limiter: the overall bucket (10 qps, burst 100) bounds many keys', async (t) => {
  const clock = new ManualClock();
  const r = defaultControllerRateLimiter(clock);
  const waits = Array.from({ length: 101 }, (_, i) => r.when(`k${i}`));
  t.ok(waits.slice(0, 100).every((w) => w === 5), 'the burst only pays the item backoff');
  t.equal(waits[100], 100, 'the 101st waits for a bucket token (1/10 s)');
});

t.test('addAfter and addRateLimited use the clock; shutDown cancels pending adds', async (t) => {
  const clock = new ManualClock();
  const q = new WorkQueue({ clock });
  q.addAfter('later', 1000);
  q.addRateLimited('rl');
  t.equal(q.length, 0);
  await clock.advance(5);
  t.equal(q.length, 1, 'rate-limited key after 5 ms');
  t.equal(await q.get(), 'rl');
  await clock.advance(994);
  t.equal(q.length, 0);
  await clock.advance(1);
  t.equal(await q.get(), 'later');
  q.addAfter('never', 10);
  q.shutDown();
  await clock.advance(100);
  t.equal(q.length, 0);
});

// The embedded store commits concurrent writes together and delivers each group commit as one
// watch batch of several revisions. A watch cache watcher that starts inside such a batch (from
// the history ring, or live when it asked for a revision the cache had not reached) must get
// exactly the events after its start, never the earlier ones of the batch.
import t, { type Test } from 'tap';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Backend, Watch } from '../../src/storage/interface.js';
import { openLevelBackend } from '../../src/storage/leveldb/level-backend.js';
import { createWatchCache, type WatchCache } from '../../src/storage/watch-cache/watch-cache.js';
import { EventRing } from '../../src/storage/watch-cache/event-ring.js';

const WRITES = 30;

async function open(t: Test): Promise<{ backend: Backend; cache: WatchCache }> {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-wcb-'));
  const backend = await openLevelBackend({ dir });
  const cache = createWatchCache(backend, { prefix: '/r/', olderThanHistory: 'expired' });
  t.teardown(async () => { await cache.close(); await rm(dir, { recursive: true, force: true }); });
  return { backend, cache };
}

/** Writes WRITES keys at once, so the store commits them in few batches. */
async function burst(backend: Backend, tag: string): Promise<number> {
  const rs = await Promise.all(Array.from({ length: WRITES }, (_, i) => backend.create(`/r/${tag}-${i}`, Buffer.from('{}'))));
  return Math.max(...rs.map((r) => r.revision));
}

/** The events' revisions until `until` is reached (or the deadline). */
async function revisions(w: Watch, until: number): Promise<number[]> {
  const out: number[] = [];
  const timer = setTimeout(() => w.close(), 10_000);
  try {
    for await (const b of w) {
      for (const e of b.events) out.push(e.kv.modRevision);
      if (b.revision >= until) break;
    }
  } finally {
    clearTimeout(timer);
    w.close();
  }
  return out;
}

const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i);

t.test('a watch resumed inside a group commit gets only the later events (history ring)', async (t) => {
  const { backend, cache } = await open(t);
  const start = await backend.currentRevision();
  // The store's own watch shows the writes arrive in batches of several revisions.
  const raw = backend.watch('/r/', { prefix: true, fromRevision: start + 1 });
  const last = await burst(backend, 'a');
  let biggest = 0;
  for await (const b of raw) { biggest = Math.max(biggest, b.events.length); if (b.revision >= last) break; }
  raw.close();
  t.ok(biggest > 1, `the store batched ${biggest} revisions together`);

  let wrong = 0;
  for (let r = start; r < last; r++) {
    const got = await revisions(cache.watch('/r/', { prefix: true, fromRevision: r + 1 }), last);
    if (JSON.stringify(got) !== JSON.stringify(range(r + 1, last))) { wrong++; t.same(got, range(r + 1, last), `from ${r + 1}`); }
  }
  t.equal(wrong, 0, `each of ${last - start} starts gets exactly the revisions after it`);
});

t.test('a watch from a revision the cache has not reached, delivered inside a group commit, starts there', async (t) => {
  const { backend, cache } = await open(t);
  const start = await backend.currentRevision();
  const from = start + 5;
  const w = cache.watch('/r/', { prefix: true, fromRevision: from });
  const seen = revisions(w, start + WRITES);
  await new Promise((r) => setTimeout(r, 20)); // let the watcher register before the writes
  const last = await burst(backend, 'b');
  t.equal(last, start + WRITES);
  t.same(await seen, range(from, last), 'nothing before the start revision');
});

t.test('EventRing.since cuts the batch it starts in, and skips one without later events', async (t) => {
  const ring = new EventRing({ minEvents: 100, maxEvents: 1000, windowMs: 60_000, now: () => 0 }, 1);
  const ev = (rev: number) => ({ type: 'PUT' as const, kv: { key: `/k${rev}`, value: Buffer.alloc(0), createRevision: rev, modRevision: rev, version: 1 } });
  const whole = { events: [ev(1), ev(2), ev(3)], revision: 3 };
  // A batch split among caches keeps the group's revision: this cache's part ends before it.
  const part = { events: [ev(4)], revision: 6 };
  const next = { events: [ev(7)], revision: 7 };
  ring.push(whole);
  ring.push(part);
  ring.push(next);
  const revs = (from: number): number[][] => ring.since(from).map((b) => b.events.map((e) => e.kv.modRevision));
  t.same(revs(1), [[1, 2, 3], [4], [7]]);
  t.equal(ring.since(1)[0], whole, 'a batch wholly after the start is the ring\'s own object');
  t.same(revs(2), [[2, 3], [4], [7]]);
  t.same(revs(3), [[3], [4], [7]]);
  t.same(revs(5), [[7]], 'the part with nothing after revision 4 is left out');
  t.same(revs(8), []);
});

/**
 * The storage conformance suite: the same behaviour checks against every Backend (LevelDB, etcd,
 * the watch cache, encryption wrappers). Not a test file itself; a backend's test file calls
 *
 *   runConformance(t, 'leveldb', async () => ({ backend, cleanup }));
 *
 * Each case opens a fresh backend through `open` and cleans it up afterwards. Cases never assume
 * absolute revisions (a shared etcd has its own history): they work relative to the revision read
 * at the start, but they do assume nobody else writes to the backend while a case runs.
 */
import type { Test } from 'tap';
import type { Backend, KeyValue, Watch, WatchBatch, WatchEvent } from '../../src/storage/interface.js';
import { MAX_VALUE_BYTES } from '../../src/storage/errors.js';

export interface ConformanceOptions {
  /** How long to wait for a progress notification (default 5000 ms). */
  readonly progressWithinMs?: number;
  /** How long to wait for a key written with ttlSeconds: 1 to expire (default 10 000 ms). */
  readonly ttlWithinMs?: number;
  /** Case titles to skip (with a reason shown in the output). */
  readonly skip?: Readonly<Record<string, string>>;
}

export type OpenBackend = () => Promise<{ backend: Backend; cleanup(): Promise<void> }>;

type Case = (t: Test, b: Backend, o: Required<Omit<ConformanceOptions, 'skip'>>) => Promise<void>;

const buf = (s: string): Buffer => Buffer.from(s);
const str = (kv: KeyValue | undefined): string | undefined => kv?.value.toString();

/** Collects at least `n` events (ignoring progress batches), then ends the watch. */
export async function collectEvents(w: Watch, n: number, timeoutMs = 10_000): Promise<WatchEvent[]> {
  const out: WatchEvent[] = [];
  if (n <= 0) return out;
  const timer = setTimeout(() => w.close(), timeoutMs);
  try {
    for await (const batch of w) {
      out.push(...batch.events);
      if (out.length >= n) break;
    }
  } finally {
    clearTimeout(timer);
  }
  return out;
}

/** Collects batches until `stop` says so, or the timeout ends the watch. */
async function collectBatches(w: Watch, stop: (b: WatchBatch, all: WatchBatch[]) => boolean, timeoutMs: number): Promise<WatchBatch[]> {
  const out: WatchBatch[] = [];
  const timer = setTimeout(() => w.close(), timeoutMs);
  try {
    for await (const batch of w) {
      out.push(batch);
      if (stop(batch, out)) break;
    }
  } finally {
    clearTimeout(timer);
  }
  return out;
}

/** Consumes a watch in the background, keeping every event. */
function startCollector(w: Watch): { events: WatchEvent[]; waitFor(n: number, ms: number): Promise<void>; stop(): Promise<void> } {
  const events: WatchEvent[] = [];
  let wake: (() => void) | undefined;
  const done = (async () => {
    for await (const batch of w) {
      events.push(...batch.events);
      wake?.();
    }
  })().catch(() => undefined);
  return {
    events,
    async waitFor(n, ms) {
      const deadline = Date.now() + ms;
      while (events.length < n) {
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`timed out waiting for ${n} events (have ${events.length})`);
        await new Promise<void>((r) => {
          const timer = setTimeout(r, Math.min(left, 100));
          wake = () => { clearTimeout(timer); r(); };
        });
      }
    },
    async stop() {
      w.close();
      await done;
    },
  };
}

const summary = (evs: readonly WatchEvent[]): string[] => evs.map((e) => `${e.type} ${e.kv.key}@${e.kv.modRevision}`);

const cases: Record<string, Case> = {
  'create and get': async (t, b) => {
    const r0 = await b.currentRevision();
    t.ok(r0 >= 1, 'revision starts at 1 or more');
    const { revision } = await b.create('/t/a', buf('v1'));
    t.equal(revision, r0 + 1, 'a create bumps the revision by one');
    t.equal(await b.currentRevision(), revision);
    const got = await b.get('/t/a');
    t.ok(got.revision >= revision);
    t.match(got.kv, { key: '/t/a', createRevision: revision, modRevision: revision, version: 1 });
    t.equal(str(got.kv), 'v1');
    const missing = await b.get('/t/missing');
    t.equal(missing.kv, undefined);
    t.ok(missing.revision >= revision);
  },

  'create on an existing key fails with KeyExists': async (t, b) => {
    await b.create('/t/a', buf('v1'));
    const r = await b.currentRevision();
    await t.rejects(b.create('/t/a', buf('v2')), { code: 'KeyExists' });
    t.equal(await b.currentRevision(), r, 'a failed write does not bump the revision');
    t.equal(str((await b.get('/t/a')).kv), 'v1');
  },

  'update is a compare-and-swap on modRevision': async (t, b) => {
    const c = await b.create('/t/a', buf('v1'));
    const u = await b.update('/t/a', buf('v2'), c.revision);
    t.equal(u.revision, c.revision + 1);
    t.match((await b.get('/t/a')).kv, { createRevision: c.revision, modRevision: u.revision, version: 2 });
    const err = await b.update('/t/a', buf('v3'), c.revision).then(() => undefined, (e: unknown) => e);
    t.match(err, { name: 'StorageError', code: 'Conflict', details: { actualModRevision: u.revision } });
    t.equal(await b.currentRevision(), u.revision);
    t.equal(str((await b.get('/t/a')).kv), 'v2');
    const racing = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => b.update('/t/a', buf(`r${i}`), u.revision)));
    t.equal(racing.filter((r) => r.status === 'fulfilled').length, 1, 'of concurrent CAS updates on one revision exactly one wins');
    t.ok(racing.every((r) => r.status === 'fulfilled' || (r.reason as { code?: string }).code === 'Conflict'), 'the others get Conflict');
    t.equal(await b.currentRevision(), u.revision + 1);
  },

  'update and delete of a missing key fail with KeyNotFound': async (t, b) => {
    await t.rejects(b.update('/t/none', buf('x'), 1), { code: 'KeyNotFound' });
    await t.rejects(b.delete('/t/none'), { code: 'KeyNotFound' });
    await t.rejects(b.delete('/t/none', 1), { code: 'KeyNotFound' });
  },

  'delete with and without an expected revision': async (t, b) => {
    const a = await b.create('/t/a', buf('va'));
    const c = await b.create('/t/c', buf('vc'));
    await t.rejects(b.delete('/t/a', a.revision + 100), { code: 'Conflict', details: { actualModRevision: a.revision } });
    const d1 = await b.delete('/t/a', a.revision);
    t.equal(d1.revision, c.revision + 1);
    t.match(d1.prevKv, { key: '/t/a', modRevision: a.revision, createRevision: a.revision, version: 1 });
    t.equal(d1.prevKv.value.toString(), 'va');
    const d2 = await b.delete('/t/c');
    t.equal(d2.revision, d1.revision + 1);
    t.equal(d2.prevKv.value.toString(), 'vc');
    t.equal((await b.get('/t/a')).kv, undefined);
    t.equal((await b.get('/t/c')).kv, undefined);
  },

  'every write bumps the revision by exactly one': async (t, b) => {
    let r = await b.currentRevision();
    let mod1 = 0;
    const writes: (() => Promise<{ revision: number }>)[] = [
      async () => { const w = await b.create('/t/1', buf('a')); mod1 = w.revision; return w; },
      () => b.create('/t/2', buf('b')),
      () => b.update('/t/1', buf('c'), mod1),
      () => b.delete('/t/2'),
      () => b.create('/t/2', buf('d')),
    ];
    for (const w of writes) {
      const before = r;
      const res = await w();
      t.equal(res.revision, before + 1);
      r = res.revision;
      await t.rejects(b.create('/t/1', buf('dup')), { code: 'KeyExists' });
      t.equal(await b.currentRevision(), r, 'failed writes and reads leave the revision alone');
      await b.get('/t/1');
      await b.range('/t/', { prefix: true });
      t.equal(await b.currentRevision(), r);
    }
  },

  'version and createRevision across delete and recreate': async (t, b) => {
    const c1 = await b.create('/t/k', buf('1'));
    const u1 = await b.update('/t/k', buf('2'), c1.revision);
    const u2 = await b.update('/t/k', buf('3'), u1.revision);
    t.match((await b.get('/t/k')).kv, { createRevision: c1.revision, modRevision: u2.revision, version: 3 });
    await b.delete('/t/k', u2.revision);
    const c2 = await b.create('/t/k', buf('4'));
    t.match((await b.get('/t/k')).kv, { createRevision: c2.revision, modRevision: c2.revision, version: 1 });
    t.match((await b.get('/t/k', { revision: u2.revision })).kv, { createRevision: c1.revision, version: 3 });
  },

  'range with prefix, end, after, limit, count and more': async (t, b) => {
    for (const k of ['/r/b', '/r/a', '/r/c/x', '/r/c', '/r/d', '/rz', '/q']) await b.create(k, buf(k));
    const all = await b.range('/r/', { prefix: true });
    t.same(all.kvs.map((kv) => kv.key), ['/r/a', '/r/b', '/r/c', '/r/c/x', '/r/d'], 'prefix, in byte order');
    t.equal(all.count, 5);
    t.equal(all.more, false);
    t.equal(all.revision, await b.currentRevision());
    t.equal(all.kvs[0]!.value.toString(), '/r/a');
    const span = await b.range('/r/b', { end: '/r/d' });
    t.same(span.kvs.map((kv) => kv.key), ['/r/b', '/r/c', '/r/c/x'], '[key, end)');
    t.equal(span.count, 3);
    const single = await b.range('/r/c');
    t.same(single.kvs.map((kv) => kv.key), ['/r/c'], 'no prefix and no end: the key alone');
    const p1 = await b.range('/r/', { prefix: true, limit: 2 });
    t.same(p1.kvs.map((kv) => kv.key), ['/r/a', '/r/b']);
    t.equal(p1.more, true);
    t.equal(p1.count, 5, 'count ignores limit');
    const p2 = await b.range('/r/', { prefix: true, limit: 2, after: '/r/b', revision: p1.revision });
    t.same(p2.kvs.map((kv) => kv.key), ['/r/c', '/r/c/x']);
    t.equal(p2.more, true);
    t.equal(p2.count, 5, 'count ignores after');
    const p3 = await b.range('/r/', { prefix: true, limit: 2, after: '/r/c/x', revision: p1.revision });
    t.same(p3.kvs.map((kv) => kv.key), ['/r/d']);
    t.equal(p3.more, false);
    const exact = await b.range('/r/', { prefix: true, limit: 5 });
    t.equal(exact.more, false, 'more is false when the limit is exactly reached');
    const counted = await b.range('/r/', { prefix: true, countOnly: true });
    t.equal(counted.count, 5);
    t.same(counted.kvs, []);
    const none = await b.range('/none/', { prefix: true });
    t.same({ kvs: none.kvs, count: none.count, more: none.more }, { kvs: [], count: 0, more: false });
  },

  'range and get at a past revision': async (t, b) => {
    const a1 = await b.create('/h/a', buf('a1'));
    const c1 = await b.create('/h/c', buf('c1'));
    const a2 = await b.update('/h/a', buf('a2'), a1.revision);
    const d = await b.delete('/h/c', c1.revision);
    await b.create('/h/b', buf('b1'));
    const at = async (rev: number): Promise<string[]> =>
      (await b.range('/h/', { prefix: true, revision: rev })).kvs.map((kv) => `${kv.key}=${kv.value.toString()}@${kv.modRevision}/v${kv.version}`);
    t.same(await at(a1.revision), [`/h/a=a1@${a1.revision}/v1`]);
    t.same(await at(c1.revision), [`/h/a=a1@${a1.revision}/v1`, `/h/c=c1@${c1.revision}/v1`]);
    t.same(await at(a2.revision), [`/h/a=a2@${a2.revision}/v2`, `/h/c=c1@${c1.revision}/v1`]);
    t.same(await at(d.revision), [`/h/a=a2@${a2.revision}/v2`], 'a deleted key is gone at the delete revision');
    const old = await b.range('/h/', { prefix: true, revision: c1.revision, limit: 1 });
    t.equal(old.revision, c1.revision, 'the result carries the revision it was read at');
    t.equal(old.count, 2);
    t.equal(old.more, true);
    const page2 = await b.range('/h/', { prefix: true, revision: c1.revision, limit: 1, after: '/h/a' });
    t.same(page2.kvs.map((kv) => kv.key), ['/h/c'], 'pagination at a past revision');
    t.equal(page2.more, false);
    t.equal(page2.count, 2);
    t.equal((await b.range('/h/', { prefix: true, revision: d.revision, countOnly: true })).count, 1, 'countOnly at a past revision');
    const g = await b.get('/h/c', { revision: a2.revision });
    t.equal(str(g.kv), 'c1');
    t.equal((await b.get('/h/c', { revision: d.revision })).kv, undefined);
    t.equal((await b.get('/h/b', { revision: a1.revision })).kv, undefined, 'not yet created');
  },

  'a revision above the current one fails with FutureRevision': async (t, b) => {
    await b.create('/t/a', buf('x'));
    const r = await b.currentRevision();
    await t.rejects(b.range('/t/', { prefix: true, revision: r + 1000 }), { code: 'FutureRevision' });
    await t.rejects(b.get('/t/a', { revision: r + 1000 }), { code: 'FutureRevision' });
  },

  'compaction: reads and watches below the point fail with Compacted': async (t, b) => {
    const a1 = await b.create('/c/a', buf('a1'));
    const a2 = await b.update('/c/a', buf('a2'), a1.revision);
    const x = await b.create('/c/x', buf('x'));
    const a3 = await b.update('/c/a', buf('a3'), a2.revision);
    await b.compact(x.revision);
    t.ok((await b.compactedRevision()) >= x.revision);
    await t.rejects(b.range('/c/', { prefix: true, revision: a2.revision }), { code: 'Compacted' });
    await t.rejects(b.get('/c/a', { revision: a1.revision }), { code: 'Compacted' });
    const atPoint = await b.range('/c/', { prefix: true, revision: x.revision });
    t.same(atPoint.kvs.map((kv) => `${kv.key}=${kv.value.toString()}`), ['/c/a=a2', '/c/x=x'], 'the compaction revision stays readable');
    t.equal(str((await b.get('/c/a')).kv), 'a3');
    await t.rejects(collectEvents(b.watch('/c/', { prefix: true, fromRevision: a1.revision }), 1, 5000), { code: 'Compacted' });
    const evs = await collectEvents(b.watch('/c/', { prefix: true, fromRevision: x.revision }), 2, 5000);
    t.same(summary(evs), [`PUT /c/x@${x.revision}`, `PUT /c/a@${a3.revision}`], 'a watch from the compaction revision works');
    t.equal(evs[1]!.prevKv?.value.toString(), 'a2', 'prevKv of the first event after the point');
  },

  'watch from a past revision replays history with prevKv': async (t, b) => {
    const r0 = await b.currentRevision();
    const a = await b.create('/w/a', buf('a1'));
    const u = await b.update('/w/a', buf('a2'), a.revision);
    await b.create('/x/other', buf('not watched'));
    const d = await b.delete('/w/a', u.revision);
    const evs = await collectEvents(b.watch('/w/', { prefix: true, fromRevision: r0 + 1 }), 3);
    t.same(summary(evs), [`PUT /w/a@${a.revision}`, `PUT /w/a@${u.revision}`, `DELETE /w/a@${d.revision}`]);
    t.equal(evs[0]!.prevKv, undefined, 'a create has no prevKv');
    t.equal(evs[0]!.kv.value.toString(), 'a1');
    t.match(evs[1]!.kv, { createRevision: a.revision, version: 2 });
    t.match(evs[1]!.prevKv, { modRevision: a.revision, version: 1 });
    t.equal(evs[1]!.prevKv?.value.toString(), 'a1');
    t.equal(evs[2]!.kv.value.length, 0, 'a DELETE carries an empty value');
    t.match(evs[2]!.prevKv, { modRevision: u.revision, version: 2 });
    t.equal(evs[2]!.prevKv?.value.toString(), 'a2');
  },

  'watch from now sees only later writes': async (t, b) => {
    const before = await b.create('/w/before', buf('x'));
    const c = startCollector(b.watch('/w/', { prefix: true }));
    try {
      // A remote backend may establish the watch asynchronously: write pings until one shows up.
      for (let i = 0; c.events.length === 0 && i < 50; i++) {
        await b.create(`/w/ping${i}`, buf('p'));
        await c.waitFor(1, 200).catch(() => undefined);
      }
      t.ok(c.events.length > 0, 'the watch is established');
      const n = c.events.length;
      const a = await b.create('/w/after', buf('y'));
      const u = await b.update('/w/before', buf('z'), before.revision);
      await c.waitFor(n + 2, 10_000);
      t.same(summary(c.events.slice(n)), [`PUT /w/after@${a.revision}`, `PUT /w/before@${u.revision}`]);
      t.notOk(c.events.some((e) => e.kv.modRevision <= before.revision), 'nothing from before the watch');
    } finally {
      await c.stop();
    }
  },

  'a single-key watch and a prefix watch see only their keys': async (t, b) => {
    const r0 = await b.currentRevision();
    const one = collectEvents(b.watch('/s/a', { fromRevision: r0 + 1 }), 2);
    const pre = collectEvents(b.watch('/s/a', { prefix: true, fromRevision: r0 + 1 }), 3);
    const w1 = await b.create('/s/a', buf('1'));
    const w2 = await b.create('/s/ab', buf('2'));
    await b.create('/s/b', buf('3'));
    await b.create('/sa', buf('4'));
    const w5 = await b.update('/s/a', buf('5'), w1.revision);
    t.same(summary(await one), [`PUT /s/a@${w1.revision}`, `PUT /s/a@${w5.revision}`]);
    t.same(summary(await pre), [`PUT /s/a@${w1.revision}`, `PUT /s/ab@${w2.revision}`, `PUT /s/a@${w5.revision}`]);
  },

  'a watch from a future revision starts there': async (t, b) => {
    const r0 = await b.currentRevision();
    const got = collectEvents(b.watch('/f/', { prefix: true, fromRevision: r0 + 2 }), 1);
    await b.create('/f/1', buf('1'));
    const second = await b.create('/f/2', buf('2'));
    t.same(summary(await got), [`PUT /f/2@${second.revision}`]);
  },

  'watch events are ordered with no gaps under concurrent writers': async (t, b) => {
    const r0 = await b.currentRevision();
    // From r0 + 1 rather than "now": a remote backend may establish a watch asynchronously.
    const live = b.watch('/p/', { prefix: true, fromRevision: r0 + 1 });
    const N = 400;
    const revs: number[] = [];
    let lateWatch: Promise<WatchEvent[]> | undefined;
    let lateFrom = 0;
    const worker = async (id: number): Promise<void> => {
      for (let i = 0; i < N / 16; i++) {
        const key = `/p/${id}/${i % 5}`;
        const cur = (await b.get(key)).kv;
        const res = cur ? await b.update(key, buf(`${id}-${i}`), cur.modRevision) : await b.create(key, buf(`${id}-${i}`));
        revs.push(res.revision);
        if (id === 0 && i === 5) {
          // A watch starting in the past while writers keep going: history, then live, no seam.
          lateFrom = r0 + 1;
          lateWatch = collectEvents(b.watch('/p/', { prefix: true, fromRevision: lateFrom }), N, 30_000);
        }
      }
    };
    const [evs] = await Promise.all([collectEvents(live, N, 30_000), Promise.all(Array.from({ length: 16 }, (_, id) => worker(id)))]);
    revs.sort((x, y) => x - y);
    t.equal(revs.length, N);
    t.same(revs, Array.from({ length: N }, (_, i) => r0 + 1 + i), 'concurrent writes get consecutive revisions');
    const seen = evs.map((e) => e.kv.modRevision);
    t.same(seen, revs, 'the live watch sees every revision once, in order');
    const late = (await lateWatch!).map((e) => e.kv.modRevision);
    t.same(late, revs, 'the catching-up watch sees every revision once, in order');
  },

  'events of a batch are in order and a batch revision covers its events': async (t, b) => {
    const r0 = await b.currentRevision();
    await Promise.all(Array.from({ length: 50 }, (_, i) => b.create(`/o/${i}`, buf('x'))));
    const batches = await collectBatches(b.watch('/o/', { prefix: true, fromRevision: r0 + 1 }),
      (_b, all) => all.reduce((n, x) => n + x.events.length, 0) >= 50, 10_000);
    let last = r0;
    for (const batch of batches) {
      for (const e of batch.events) {
        t.ok(e.kv.modRevision > last, 'ascending');
        last = e.kv.modRevision;
      }
      t.ok(batch.revision >= last, 'batch revision >= its events');
    }
    t.equal(last, r0 + 50);
  },

  'progress notifications': async (t, b, o) => {
    const c = await b.create('/g/a', buf('x'));
    const batches = await collectBatches(b.watch('/g/', { prefix: true, progressNotify: true }),
      (batch) => batch.events.length === 0, o.progressWithinMs);
    const last = batches[batches.length - 1];
    t.ok(last && last.events.length === 0, 'an empty batch arrives');
    t.ok((last?.revision ?? 0) >= c.revision, 'its revision covers what happened before the watch');
  },

  'a key with ttlSeconds expires as a DELETE event': async (t, b, o) => {
    const r0 = await b.currentRevision();
    const w = b.watch('/ttl/', { prefix: true, fromRevision: r0 + 1 });
    const c = await b.create('/ttl/e', buf('x'), { ttlSeconds: 1 });
    await b.create('/ttl/keep', buf('y'));
    const evs = await collectEvents(w, 3, o.ttlWithinMs);
    t.same(evs.map((e) => `${e.type} ${e.kv.key}`), ['PUT /ttl/e', 'PUT /ttl/keep', 'DELETE /ttl/e']);
    t.equal(evs[2]?.prevKv?.modRevision, c.revision);
    t.equal((await b.get('/ttl/e')).kv, undefined);
    t.equal(str((await b.get('/ttl/keep')).kv), 'y');
  },

  'values above MAX_VALUE_BYTES fail with ValueTooLarge': async (t, b) => {
    const r = await b.currentRevision();
    await t.rejects(b.create('/v/big', Buffer.alloc(MAX_VALUE_BYTES + 1)), { code: 'ValueTooLarge' });
    const c = await b.create('/v/ok', Buffer.alloc(256 * 1024, 7));
    t.equal(c.revision, r + 1);
    await t.rejects(b.update('/v/ok', Buffer.alloc(MAX_VALUE_BYTES + 1), c.revision), { code: 'ValueTooLarge' });
    t.equal((await b.get('/v/ok')).kv?.value.length, 256 * 1024);
  },

  'aborting the signal or close() ends the iteration': async (t, b) => {
    const ac = new AbortController();
    const w = b.watch('/a/', { prefix: true, signal: ac.signal });
    const ended = (async () => {
      let n = 0;
      for await (const batch of w) n += batch.events.length;
      return n;
    })();
    await b.create('/a/1', buf('x'));
    ac.abort();
    t.ok((await ended) <= 1, 'the iteration ends without an error');
    const w2 = b.watch('/a/', { prefix: true });
    const ended2 = (async () => { for await (const _ of w2) { /* none */ } return true; })();
    w2.close();
    t.equal(await ended2, true);
    const pre = new AbortController();
    pre.abort();
    const w3 = b.watch('/a/', { prefix: true, signal: pre.signal });
    t.same(await collectEvents(w3, 1, 2000), [], 'an already aborted signal ends at once');
  },
};

/** Registers one subtest per case; returns when all finished. */
export function runConformance(t: Test, name: string, open: OpenBackend, options: ConformanceOptions = {}): Promise<void> {
  const o = { progressWithinMs: options.progressWithinMs ?? 5000, ttlWithinMs: options.ttlWithinMs ?? 10_000 };
  return t.test(`${name} conformance`, async (t) => {
    for (const [title, fn] of Object.entries(cases)) {
      const skip = options.skip?.[title];
      if (skip) {
        await t.test(title, { skip }, async () => undefined);
        continue;
      }
      await t.test(title, async (t) => {
        const { backend, cleanup } = await open();
        try {
          await fn(t, backend, o);
        } finally {
          await cleanup();
        }
      });
    }
  }).then(() => undefined);
}

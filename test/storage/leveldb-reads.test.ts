// Reads of the LevelDB backend while writes of the same key are decided but not yet durable:
// get answers from the in-memory index and the value cache when it can, from LevelDB otherwise,
// and every answer is a consistent (value, revision) pair: the value is the key's value at the
// revision reported, every acknowledged write is seen, and a get never reports a revision at
// which the key held something else. Ranges and history reads across a compaction stay exact.
import t, { type Test } from 'tap';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openLevelBackend, type LevelBackend } from '../../src/storage/leveldb/level-backend.js';
import type { KeyValue } from '../../src/storage/interface.js';

async function open(t: Test, valueCacheBytes?: number): Promise<LevelBackend> {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-leveldb-reads-'));
  const b = await openLevelBackend({ dir, valueCacheBytes });
  t.teardown(async () => { await b.close(); await rm(dir, { recursive: true, force: true }); });
  return b;
}

const v = (s: string): Buffer => Buffer.from(s);

for (const cache of [undefined, 0]) {
  t.test(`gets racing writes of the same key are consistent (value cache ${cache === 0 ? 'off' : 'on'})`, async (t) => {
    const b = await open(t, cache);
    // What the key held from each revision on: revision -> value (undefined: absent).
    const history: [number, string | undefined][] = [[0, undefined]];
    const at = (rev: number): string | undefined => {
      let cur: string | undefined;
      for (const [r, val] of history) if (r <= rev) cur = val;
      return cur;
    };
    const checks: Promise<{ kv: KeyValue | undefined; revision: number; acked: number }>[] = [];
    const check = (acked: number): void => {
      checks.push(b.get('/k').then((r) => ({ ...r, acked })));
    };
    let acked = 0;
    let mod = 0;
    for (let i = 0; i < 300; i++) {
      let p: Promise<{ revision: number }>;
      const val = `v${i}`;
      if (i % 10 === 9) {
        p = b.delete('/k', mod);
        check(acked); // the delete is decided, not durable
        const { revision } = await p;
        history.push([revision, undefined]);
        mod = 0;
      } else {
        p = mod === 0 ? b.create('/k', v(val)) : b.update('/k', v(val), mod);
        check(acked); // the write is decided, not durable
        const { revision } = await p;
        history.push([revision, val]);
        mod = revision;
      }
      acked = history[history.length - 1]![0];
      check(acked);
    }
    // Judged once the whole history is known (a get may see a durable write before its writer
    // hears back).
    for (const { kv, revision, acked: seen } of await Promise.all(checks)) {
      if (revision < seen) t.fail(`revision ${revision} is older than the acknowledged ${seen}`);
      const want = at(revision);
      const got = kv?.value.toString();
      if (got !== want) t.fail(`at revision ${revision} the key held ${want}, get answered ${got}`);
      if (kv && kv.modRevision > revision) t.fail(`modRevision ${kv.modRevision} above revision ${revision}`);
    }
    t.pass(`${checks.length} gets were consistent`);
  });
}

t.test('a get after reopening reads values through the k/ pointers; ranges and history reads too', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-leveldb-reads-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  let b = await openLevelBackend({ dir });
  const revs: number[] = [];
  for (let i = 0; i < 50; i++) revs.push((await b.create(`/p/${String(i).padStart(2, '0')}`, v(`a${i}`))).revision);
  for (let i = 0; i < 50; i += 2) revs[i] = (await b.update(`/p/${String(i).padStart(2, '0')}`, v(`b${i}`), revs[i]!)).revision;
  const mid = await b.currentRevision();
  for (let i = 0; i < 50; i += 5) await b.delete(`/p/${String(i).padStart(2, '0')}`);
  await b.compact(mid);
  await b.close();
  b = await openLevelBackend({ dir, valueCacheBytes: 0 });
  t.teardown(() => b.close());
  t.equal((await b.get('/p/02')).kv?.value.toString(), 'b2');
  t.equal((await b.get('/p/03')).kv?.value.toString(), 'a3');
  t.equal((await b.get('/p/05')).kv, undefined);
  const all = await b.range('/p/', { prefix: true });
  t.equal(all.kvs.length, 40);
  t.same(all.kvs.slice(0, 3).map((kv) => kv.value.toString()), ['a1', 'b2', 'a3']);
  const page = await b.range('/p/', { prefix: true, limit: 7, after: '/p/10' });
  t.same(page.kvs.map((kv) => kv.key), ['/p/11', '/p/12', '/p/13', '/p/14', '/p/16', '/p/17', '/p/18']);
  t.equal(page.more, true);
  t.equal(page.count, 40);
  const past = await b.range('/p/', { prefix: true, revision: mid });
  t.equal(past.kvs.length, 50, 'the state at the compaction point is kept');
  t.same(past.kvs.slice(0, 2).map((kv) => kv.value.toString()), ['b0', 'a1']);
});

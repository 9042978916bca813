// The watch cache's sorted key store against a naive model, with random puts and deletes.
import t from 'tap';
import type { KeyValue } from '../../src/storage/interface.js';
import { SortedStore } from '../../src/storage/watch-cache/sorted-store.js';

t.test('ranges, pagination and counts match a sorted-array model', async (t) => {
  let seed = 42;
  const rnd = (n: number): number => { seed = (seed * 1103515245 + 12345) % 2147483648; return (seed >>> 8) % n; };
  const s = new SortedStore();
  const model = new Map<string, KeyValue>();
  let checks = 0;
  let mismatches = 0;
  for (let step = 0; step < 60_000; step++) {
    const k = '/p/' + String(rnd(5000)).padStart(rnd(2) ? 4 : 1, '0');
    if (rnd(3) === 0) { s.delete(k); model.delete(k); } else {
      const kv: KeyValue = { key: k, value: Buffer.alloc(0), createRevision: 1, modRevision: step, version: 1 };
      s.put(kv);
      model.set(k, kv);
    }
    if (step % 500 !== 0) continue;
    const keys = [...model.keys()].sort();
    const a = rnd(6000);
    const start = '/p/' + a;
    const end = rnd(4) ? '/p/' + (a + rnd(3000)) : '';
    const after = rnd(2) ? keys[rnd(keys.length)] : undefined;
    const limit = rnd(3) ? rnd(300) : 0;
    const inRange = keys.filter((x) => x >= start && (end === '' || x < end));
    const want = inRange.filter((x) => after === undefined || x > after);
    const got = s.range(start, end, after, limit);
    checks++;
    const ok = JSON.stringify(got.kvs.map((x) => x.key)) === JSON.stringify(limit ? want.slice(0, limit) : want)
      && got.more === (limit > 0 && want.length > limit)
      && s.count(start, end) === inRange.length
      && s.size === model.size
      && got.kvs.every((kv) => kv === model.get(kv.key));
    if (!ok) mismatches++;
  }
  t.equal(mismatches, 0, `${checks} random range checks`);
  t.ok(s.size > 1000, 'the store grew past several chunks');
});

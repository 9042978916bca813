// The bench's interleaved rows: loads take turns slice by slice, and each load's slices merge
// into one result (counts and seconds summed, latencies joined, steal weighted by time); the
// same for h2load runs and for the load client's GC tallies.
import t from 'tap';
import { interleave, mergeLoads, type LoadResult } from '../../bench/lib/h2-load.js';
import { mergeH2load, type H2loadResult } from '../../bench/lib/h2load.js';
import { addGcDelta, gcNote, type GcTally } from '../../bench/lib/gc-metrics.js';

const load = (ops: number, seconds: number, lat: number[], extra: Partial<LoadResult> = {}): LoadResult => ({ ops, errors: 0, seconds, lat: Float64Array.from(lat), ...extra });

t.test('loads take turns, round by round, and each keeps its own slices', async (t) => {
  const order: string[] = [];
  const slice = (name: string, ops: number) => async (): Promise<LoadResult> => { order.push(name); return load(ops, 1, [ops]); };
  const [a, b] = await interleave(3, [slice('a', 10), slice('b', 20)], mergeLoads);
  t.same(order, ['a', 'b', 'a', 'b', 'a', 'b']);
  t.equal(a!.ops, 30);
  t.equal(a!.seconds, 3);
  t.same([...a!.lat], [10, 10, 10]);
  t.equal(b!.ops, 60);
});

t.test('merged slices: sums, joined latencies, the first error, steal weighted by seconds', async (t) => {
  const m = mergeLoads([
    load(100, 1, [1, 2], { stealPct: 10 }),
    load(300, 3, [3], { errors: 2, firstError: 'HTTP 500', stealPct: 2 }),
    load(0, 1, [], { errors: 1, firstError: 'later' }),
  ]);
  t.equal(m.ops, 400);
  t.equal(m.errors, 3);
  t.equal(m.seconds, 5);
  t.same([...m.lat], [1, 2, 3]);
  t.equal(m.firstError, 'HTTP 500');
  t.equal(m.stealPct, (10 * 1 + 2 * 3) / 4, 'slices without a steal figure do not count');
  t.equal(mergeLoads([load(1, 1, [1])]).stealPct, undefined, 'no steal figure: none');
});

t.test('merged h2load runs of equal length: the mean rate, summed counts, joined latencies', async (t) => {
  const run = (rps: number, ok: number, total: number, lat: number[]): H2loadResult => ({ rps, ok, total, mean: '?', max: '?', lat: Float64Array.from(lat) });
  const m = mergeH2load([run(1000, 990, 1000, [1, 3]), run(3000, 3000, 3000, [2])]);
  t.equal(m.rps, 2000);
  t.equal(m.ok, 3990);
  t.equal(m.total, 4000);
  t.same([...m.lat], [1, 3, 2]);
  t.equal(m.mean, '2.00ms');
  t.equal(m.max, '3.00ms');
});

t.test('GC tallies add up over slices', async (t) => {
  const tally = (minor: [number, number, number], major?: [number, number, number]): GcTally => new Map([
    ['minor', { count: minor[0], sum: minor[1], over10ms: minor[2] }],
    ...(major ? [['major', { count: major[0], sum: major[1], over10ms: major[2] }] as const] : []),
  ]);
  let sum: GcTally = new Map();
  sum = addGcDelta(sum, tally([2, 0.004, 0]), tally([5, 0.010, 0]));
  sum = addGcDelta(sum, tally([9, 0.020, 0]), tally([10, 0.032, 1], [1, 0.050, 1]));
  const minor = sum.get('minor')!;
  t.same([minor.count, minor.over10ms], [4, 1]);
  t.ok(Math.abs(minor.sum - 0.018) < 1e-9, 'seconds summed');
  t.same(sum.get('major'), { count: 1, sum: 0.050, over10ms: 1 });
  t.equal(gcNote(new Map(), sum), 'GC minor 4×/18 ms (1 ≥ 10 ms), major 1×/50 ms (1 ≥ 10 ms)');
});

t.test('with slices, each load gets the time slices it ran in, in turn order', async (t) => {
  const slices: [number, number][][] = [];
  const wait = (ms: number) => async (): Promise<LoadResult> => { await new Promise((r) => setTimeout(r, ms)); return load(1, ms / 1000, [ms]); };
  await interleave(2, [wait(5), wait(5)], mergeLoads, slices);
  t.equal(slices.length, 2);
  t.equal(slices[0]!.length, 2);
  t.equal(slices[1]!.length, 2);
  const all = [slices[0]![0]!, slices[1]![0]!, slices[0]![1]!, slices[1]![1]!];
  for (let i = 0; i < all.length; i++) {
    t.ok(all[i]![1] - all[i]![0] >= 4, 'a slice spans its load');
    if (i > 0) t.ok(all[i]![0] >= all[i - 1]![1], 'slices follow each other');
  }
});

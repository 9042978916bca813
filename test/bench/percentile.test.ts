// The benches' percentiles are nearest rank: the p99 of 100 samples is the 99th, not the largest.
import t from 'tap';
import { pct, quantile } from '../../bench/lib/closed-loop.js';
import { percentile } from '../../bench/lib/h2-load.js';

t.test('nearest rank', async (t) => {
  const hundred = Array.from({ length: 100 }, (_, i) => i + 1);
  t.equal(pct(hundred, 99), 99);
  t.equal(pct(hundred, 50), 50);
  t.equal(pct(hundred, 100), 100);
  t.equal(pct(hundred, 0), 1, 'p0 is the smallest');
  t.equal(quantile([7], 0.99), 7);
  t.ok(Number.isNaN(quantile([], 0.5)));
  const five = [5, 1, 4, 2, 3];
  t.equal(percentile(Float64Array.from(five), 50), 3, 'percentile sorts its samples');
  t.equal(percentile(Float64Array.from(five), 99), 5);
  t.equal(percentile(Float64Array.from(Array.from({ length: 500 }, (_, i) => 500 - i)), 99), 495, 'the p99 of 500 samples is the fifth largest');
});

// What the benches print next to their figures: the GC pauses read from a server's /metrics
// (prom-client's own histogram text) and the machine's CPU steal from /proc/stat.
import t from 'tap';
import { Histogram, Registry } from 'prom-client';
import { clientGc, gcNote, parseGcTally } from '../../bench/lib/gc-metrics.js';
import { cpuTicks, stealNote, stealPercent } from '../../bench/lib/steal.js';

/** The GC histogram as prom-client's default metrics declare it (name, label, buckets). */
function gcHistogram(): { registry: Registry; h: Histogram<'kind'> } {
  const registry = new Registry();
  const h = new Histogram({ name: 'nodejs_gc_duration_seconds', help: 'gc', labelNames: ['kind'], buckets: [0.001, 0.01, 0.1, 1, 2, 5], registers: [registry] });
  return { registry, h };
}

t.test('GC pauses between two scrapes of prom-client text', async (t) => {
  const { registry, h } = gcHistogram();
  h.observe({ kind: 'minor' }, 0.004);
  const before = parseGcTally(await registry.metrics());
  t.same(before.get('minor'), { count: 1, sum: 0.004, over10ms: 0 });
  for (const s of [0.002, 0.003, 0.012]) h.observe({ kind: 'minor' }, s);
  h.observe({ kind: 'major' }, 0.025);
  h.observe({ kind: 'weakcb' }, 0.0001);
  const after = parseGcTally(await registry.metrics());
  t.same(after.get('major'), { count: 1, sum: 0.025, over10ms: 1 });
  t.equal(gcNote(before, after), 'GC minor 3×/17 ms (1 ≥ 10 ms), major 1×/25 ms (1 ≥ 10 ms)', 'only the pauses since the first scrape; weak callbacks left out');
  t.equal(gcNote(after, after), '', 'nothing between two equal scrapes');
  t.equal(gcNote(before, after, true), 'GC minor 3, major 1', 'counts only');
  t.same(parseGcTally('# no such metric\n'), new Map(), 'a server without the histogram gives an empty tally');
});

t.test('steal: percent of all CPU time between two samples', (t) => {
  t.equal(stealPercent({ steal: 10, total: 1000 }, { steal: 30, total: 1200 }), 10);
  t.equal(stealPercent({ steal: 10, total: 1000 }, { steal: 10, total: 1000 }), undefined, 'no time passed');
  t.equal(stealPercent(undefined, { steal: 1, total: 2 }), undefined);
  t.equal(stealNote(12.345), 'steal 12.3%');
  t.equal(stealNote(undefined), '');
  const now = cpuTicks();
  if (process.platform === 'linux') {
    t.ok(now && now.total > 0 && now.steal >= 0 && now.steal <= now.total, 'read from /proc/stat');
  } else {
    t.equal(now, undefined);
  }
  t.end();
});

t.test("the load client's own GC pauses, counted from the first call on", async (t) => {
  const before = clientGc();
  // Short-lived garbage that escapes (kept for a while), so the optimizer cannot drop it.
  let junk: unknown[] = [];
  let made = 0;
  for (let i = 0; i < 1_000_000; i++) {
    junk.push({ i, s: String(i) });
    if (junk.length === 1000) { made += junk.length; junk = []; }
  }
  t.ok(made > 0);
  // The observer hears of GCs asynchronously.
  let after = clientGc();
  for (let i = 0; i < 100 && (after.get('minor')?.count ?? 0) === (before.get('minor')?.count ?? 0); i++) {
    await new Promise((r) => setTimeout(r, 20));
    after = clientGc();
  }
  const minor = after.get('minor');
  t.ok(minor && minor.count > (before.get('minor')?.count ?? 0), 'scavenges counted');
  t.match(gcNote(before, after), /^GC minor \d+×\/\d+ ms/);
  after.get('minor')!.count += 100;
  t.not(clientGc().get('minor')!.count, after.get('minor')!.count, 'a snapshot is a copy');
});

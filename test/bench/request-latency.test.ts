// The server-side latency share a bench row prints, parsed from apiserver_request_duration_seconds
// as the API server's /metrics serves it.
import t from 'tap';
import { latencyNote, parseLatency, serverNote } from '../../bench/lib/request-latency.js';
import { parseGcTally } from '../../bench/lib/gc-metrics.js';

function text(post: [number, number, number], extra = ''): string {
  const [le5, le25, n] = post;
  const series = (verb: string, resource: string, sub: string, a: number, b: number, c: number): string => [
    `apiserver_request_duration_seconds_bucket{le="0.005",verb="${verb}",group="",version="v1",resource="${resource}",subresource="${sub}"} ${a}`,
    `apiserver_request_duration_seconds_bucket{le="0.025",verb="${verb}",group="",version="v1",resource="${resource}",subresource="${sub}"} ${b}`,
    `apiserver_request_duration_seconds_bucket{le="+Inf",verb="${verb}",group="",version="v1",resource="${resource}",subresource="${sub}"} ${c}`,
    `apiserver_request_duration_seconds_sum{verb="${verb}",group="",version="v1",resource="${resource}",subresource="${sub}"} 1.5`,
    `apiserver_request_duration_seconds_count{verb="${verb}",group="",version="v1",resource="${resource}",subresource="${sub}"} ${c}`,
  ].join('\n');
  return [
    '# HELP apiserver_request_duration_seconds Response latency distribution',
    '# TYPE apiserver_request_duration_seconds histogram',
    series('POST', 'configmaps', '', le5, le25, n),
    series('GET', 'configmaps', '', 7, 7, 7),
    series('POST', 'configmaps', 'status', 1, 1, 1000),
    series('POST', 'secrets', '', 0, 0, 1000),
    extra,
  ].join('\n');
}

t.test('one verb and resource, main resource only, cumulative per bound', async (t) => {
  const l = parseLatency(text([10, 90, 100]), 'POST', 'configmaps');
  t.equal(l.count, 100);
  t.equal(l.within.get(0.005), 10);
  t.equal(l.within.get(0.025), 90);
  t.equal(l.within.has(Number.POSITIVE_INFINITY), false);
  t.equal(l.sum, 1.5, 'summed seconds');
  t.same(parseLatency('', 'POST', 'configmaps'), { count: 0, sum: 0, within: new Map() });
});

t.test('the share within a bound between two scrapes', async (t) => {
  const a = parseLatency(text([10, 90, 100]), 'POST', 'configmaps');
  const b = parseLatency(text([10, 1080, 1100]), 'POST', 'configmaps');
  t.equal(latencyNote(a, b, 25), 'server-side 99.0% ≤ 25 ms of 1000');
  t.equal(latencyNote(a, b, 5), 'server-side 0.0% ≤ 5 ms of 1000');
  t.equal(latencyNote(a, b, 7), '', 'no such bucket: nothing said');
  t.equal(latencyNote(b, b, 25), '', 'no requests: nothing said');
});

t.test('one scrape gives the row note: latency share, then the GC pauses', async (t) => {
  const gc = (n: number, sec: number): string => `nodejs_gc_duration_seconds_bucket{le="0.01",kind="minor"} ${n}\nnodejs_gc_duration_seconds_sum{kind="minor"} ${sec}\nnodejs_gc_duration_seconds_count{kind="minor"} ${n}`;
  const a = text([10, 90, 100], gc(2, 0.004));
  const b = text([10, 1080, 1100], gc(7, 0.014));
  const note = serverNote(
    { latency: parseLatency(a, 'POST', 'configmaps'), gc: parseGcTally(a) },
    { latency: parseLatency(b, 'POST', 'configmaps'), gc: parseGcTally(b) }, 25);
  t.equal(note, 'server-side 99.0% ≤ 25 ms of 1000; GC minor 5×/10 ms');
});

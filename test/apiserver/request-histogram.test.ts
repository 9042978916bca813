import t from 'tap';
import { Histogram, Registry } from 'prom-client';
import { RequestHistogram } from '../../src/daemons/apiserver/request-histogram.js';
import { createApiserverMetrics, observeRequest } from '../../src/daemons/apiserver/metrics.js';
import { parseRequestInfo } from '../../src/daemons/apiserver/request-info.js';

const BUCKETS = [0.005, 0.025, 0.05, 0.1, 1, 60];
type L = 'verb' | 'resource';

t.test('a scrape shows what prom-client\'s Histogram shows for the same observations', async (t) => {
  const ours = new Registry();
  const theirs = new Registry();
  const h = new RequestHistogram<L>('req_seconds', 'Request latency.', BUCKETS, ours);
  const p = new Histogram<L>({ name: 'req_seconds', help: 'Request latency.', labelNames: ['verb', 'resource'], buckets: BUCKETS, registers: [theirs] });
  const a = { verb: 'GET', resource: 'pods' };
  const b = { verb: 'POST', resource: 'configmaps' };
  const c = { verb: 'LIST', resource: 'we"ird\\' };
  const seen: [string, Record<L, string>, number][] = [
    ['a', a, 0.001], ['a', a, 0.005], ['a', a, 0.03], ['b', b, 0.2], ['a', a, 120], ['c', c, 0.07], ['b', b, 0],
  ];
  for (const [key, labels, v] of seen) { h.observe(key, labels, v); p.observe(labels, v); }
  t.equal(await ours.metrics(), await theirs.metrics(), 'text exposition');
  t.same(await ours.getMetricsAsJSON(), (await theirs.getMetricsAsJSON()).map((m) => ({
    ...m, values: m.values.map((v) => ({ labels: v.labels, value: v.value, metricName: (v as { metricName?: string }).metricName })),
  })), 'JSON form');
  t.same(h.seriesOf('a'), { count: 4, sum: 0.001 + 0.005 + 0.03 + 120 });
  h.observe('a', a, Number.NaN);
  t.equal(h.seriesOf('a')?.count, 4, 'non-finite values are not recorded');
  ours.resetMetrics();
  t.equal(h.seriesOf('a'), undefined, 'reset empties it');
});

t.test('request counts reach apiserver_request_total at scrape time, once each', async (t) => {
  const m = createApiserverMetrics({ defaultMetrics: false });
  const other = createApiserverMetrics({ defaultMetrics: false });
  const info = parseRequestInfo('POST', new URL('https://x/api/v1/namespaces/ns/configmaps'));
  for (let i = 0; i < 3; i++) observeRequest(m, 'POST', info, 201, 0.01);
  observeRequest(m, 'POST', info, 409, 0.02);
  observeRequest(other, 'POST', info, 201, 0.01);
  const line = (text: string, code: number): string | undefined =>
    text.split('\n').find((l) => l.startsWith(`apiserver_request_total{verb="POST",group="",version="v1",resource="configmaps",subresource="",code="${code}"}`));
  let text = await m.registry.metrics();
  t.match(line(text, 201), / 3$/);
  t.match(line(text, 409), / 1$/);
  t.match(text, /apiserver_request_duration_seconds_count\{verb="POST",group="",version="v1",resource="configmaps",subresource=""\} 4/);
  text = await m.registry.metrics();
  t.match(line(text, 201), / 3$/, 'a second scrape counts nothing twice');
  observeRequest(m, 'POST', info, 201, 0.01);
  t.match(line(await m.registry.metrics(), 201), / 4$/);
  t.match(line(await other.registry.metrics(), 201), / 1$/, 'each server instance counts its own');
});

t.test('requests of alternating shapes are each counted under their own labels', async (t) => {
  const m = createApiserverMetrics({ defaultMetrics: false });
  const paths = ['/api/v1/namespaces/ns/configmaps', '/api/v1/namespaces/ns/pods', '/apis/apps/v1/namespaces/ns/deployments', '/api/v1/namespaces/ns/pods/p/status'];
  // Fresh strings for every request, as a server parses them: equal shapes still share labels.
  for (let round = 0; round < 3; round++) {
    for (const p of paths) observeRequest(m, 'POST', parseRequestInfo('POST', new URL(`https://x${p}`)), 201, 0.01);
    observeRequest(m, 'GET', parseRequestInfo('GET', new URL('https://x/api/v1/namespaces/ns/pods/p')), 200, 0.01);
  }
  const text = await m.registry.metrics();
  const count = (labels: string): string | undefined => text.split('\n').find((l) => l.startsWith(`apiserver_request_total{${labels}`))?.split(' ').pop();
  t.equal(count('verb="POST",group="",version="v1",resource="configmaps",subresource="",code="201"}'), '3');
  t.equal(count('verb="POST",group="",version="v1",resource="pods",subresource="",code="201"}'), '3');
  t.equal(count('verb="POST",group="apps",version="v1",resource="deployments",subresource="",code="201"}'), '3');
  t.equal(count('verb="POST",group="",version="v1",resource="pods",subresource="status",code="201"}'), '3');
  t.equal(count('verb="GET",group="",version="v1",resource="pods",subresource="",code="200"}'), '3');
});

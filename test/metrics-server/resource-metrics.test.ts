// The scraper's reading of kubelet's /metrics/resource and /stats/summary, and the usage the
// store derives from two snapshots (CPU as a rate over the window, memory the latest value).
import t from 'tap';
import { parsePrometheusText, snapshotFromResourceMetrics, snapshotFromSummary } from '../../src/daemons/metrics-server/resource-metrics.js';
import { MetricsStore } from '../../src/daemons/metrics-server/metrics-store.js';

const resource = (cpu: number, ccpu: number, ts: number): string => `# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the container in core-seconds
# TYPE container_cpu_usage_seconds_total counter
container_cpu_usage_seconds_total{container="app",namespace="default",pod="web-1"} ${ccpu} ${ts}
container_cpu_usage_seconds_total{container="side",namespace="default",pod="web-1"} 1 ${ts}
# TYPE container_memory_working_set_bytes gauge
container_memory_working_set_bytes{container="app",namespace="default",pod="web-1"} 1.048576e+07 ${ts}
container_memory_working_set_bytes{container="side",namespace="default",pod="web-1"} 2048 ${ts}
container_start_time_seconds{container="app",namespace="default",pod="web-1"} 1.6e+09 ${ts}
node_cpu_usage_seconds_total ${cpu} ${ts}
node_memory_working_set_bytes 2.147483648e+09 ${ts}
pod_cpu_usage_seconds_total{namespace="default",pod="web-1"} ${ccpu + 1} ${ts}
resource_scrape_error 0
`;

t.test('Prometheus text: labels with escapes, exponents, optional timestamps', async (t) => {
  const s = parsePrometheusText('a{x="q\\"uote",y="b\\\\s"} 1.5e+03 1700000000000\nb 2\n# comment\nbad line here\n');
  t.same(s, [{ name: 'a', labels: { x: 'q"uote', y: 'b\\s' }, value: 1500, timeMs: 1700000000000 }, { name: 'b', labels: {}, value: 2 }]);
});

t.test('a /metrics/resource snapshot, and usage from two of them', async (t) => {
  const first = snapshotFromResourceMetrics(resource(100, 10, 1_700_000_000_000), 0);
  t.same(first.node, { cpuSeconds: 100, memoryBytes: 2147483648, timeMs: 1_700_000_000_000 });
  t.equal(first.containers.length, 2);
  t.same(first.containers.find((c) => c.container === 'app'), { namespace: 'default', pod: 'web-1', container: 'app', cpuSeconds: 10, memoryBytes: 10485760, timeMs: 1_700_000_000_000 });
  const store = new MetricsStore();
  store.record('n1', first);
  t.equal(store.nodeUsage('n1'), undefined, 'one point gives no rate');
  t.same(store.podUsages(), [], 'nor pod usage');
  store.record('n1', snapshotFromResourceMetrics(resource(115, 12.5, 1_700_000_010_000), 0));
  t.same(store.nodeUsage('n1'), { cpuCores: 1.5, memoryBytes: 2147483648, timeMs: 1_700_000_010_000, windowMs: 10_000 }, '15 core-seconds in 10 s: 1.5 cores');
  const pods = store.podUsages();
  t.equal(pods.length, 1);
  t.same(pods[0]!.containers.map((c) => [c.name, c.usage.cpuCores, c.usage.memoryBytes]), [['app', 0.25, 10485760], ['side', 0, 2048]]);
  // A restarted container (its counter went down) has no usage, so the pod is left out.
  store.record('n1', snapshotFromResourceMetrics(resource(120, 0.5, 1_700_000_020_000), 0));
  t.same(store.podUsages(), [], 'a pod with a container whose counter restarted is not reported');
  store.retain(new Set());
  t.equal(store.nodeUsage('n1'), undefined, 'a node gone from the cluster is forgotten');
});

t.test('/stats/summary works too (cumulative usageCoreNanoSeconds)', async (t) => {
  const summary = (nanos: number, time: string) => ({
    node: { nodeName: 'n1', cpu: { time, usageCoreNanoSeconds: nanos, usageNanoCores: 1 }, memory: { time, workingSetBytes: 4096 } },
    pods: [{ podRef: { name: 'p', namespace: 'ns', uid: 'u' }, containers: [{ name: 'c', cpu: { time, usageCoreNanoSeconds: nanos / 2 }, memory: { time, workingSetBytes: 1024 } }] }],
  });
  const store = new MetricsStore();
  store.record('n1', snapshotFromSummary(summary(1e9, '2026-01-01T00:00:00Z')));
  store.record('n1', snapshotFromSummary(summary(3e9, '2026-01-01T00:00:04Z')));
  t.same(store.nodeUsage('n1'), { cpuCores: 0.5, memoryBytes: 4096, timeMs: Date.parse('2026-01-01T00:00:04Z'), windowMs: 4000 });
  t.same(store.podUsages()[0]?.containers[0]?.usage.cpuCores, 0.25);
});

// spec.metrics to a proposal, with the metrics APIs stubbed: Pods, Object (Value and
// AverageValue) and External metrics as Kubernetes computes them, the largest proposal wins,
// a failed metric is ScalingActive=False with Kubernetes' reason, and a failed metric never
// lets the others scale down.
import t from 'tap';
import type { KubeObject } from '../../../src/api/resources/types.js';
import { MetricsFailed, proposeReplicas, type MetricContext } from '../../../src/daemons/controller-manager/controllers/horizontalpodautoscaling/metric-specs.js';
import type { HpaMetricsClient } from '../../../src/daemons/controller-manager/controllers/horizontalpodautoscaling/metrics-client.js';
import type { ScaleClient } from '../../../src/daemons/controller-manager/controllers/horizontalpodautoscaling/scale-client.js';

const NOW = Date.parse('2026-01-01T00:10:00Z');
const pod = (name: string): KubeObject => ({
  metadata: { name, namespace: 'ns', labels: { app: 'a' } },
  spec: { containers: [{ name: 'c', resources: { requests: { cpu: '100m' } } }] },
  status: { phase: 'Running', startTime: '2026-01-01T00:00:00Z', conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: '2026-01-01T00:00:10Z' }] },
});
const metric = (value: number) => ({ value, timestamp: NOW - 10_000, windowMs: 30_000 });

function ctx(stub: Partial<HpaMetricsClient>, current = 2): MetricContext {
  return {
    namespace: 'ns', currentReplicas: current, selector: 'app=a', pods: () => [pod('p0'), pod('p1')],
    metrics: stub as HpaMetricsClient,
    scale: { mapping: async () => ({ ref: { group: 'networking.k8s.io', version: 'v1', resource: 'ingresses', namespace: 'ns' }, resources: [] }) } as unknown as ScaleClient,
    tolerance: 0.1, restClients: true, now: NOW,
  };
}

t.test('Pods, Object and External metrics', async (t) => {
  const pods = await proposeReplicas([{ type: 'Pods', pods: { metric: { name: 'qps' }, target: { type: 'AverageValue', averageValue: '10' } } }],
    ctx({ podsMetric: async () => new Map([['p0', metric(30_000)], ['p1', metric(10_000)]]) }));
  t.match(pods, { replicas: 4, metricName: 'pods metric qps' }, 'average 20 of a target 10 on 2 pods: 4');
  t.match(pods.statuses, [{ type: 'Pods', pods: { metric: { name: 'qps' }, current: { averageValue: '20' } } }]);

  const object = await proposeReplicas([{ type: 'Object', object: { describedObject: { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', name: 'main' }, metric: { name: 'rps' }, target: { type: 'Value', value: '100' } } }],
    ctx({ objectMetric: async (_ns, plural, group, name) => { t.same([plural, group, name], ['ingresses', 'networking.k8s.io', 'main']); return { value: 300_000, timestamp: NOW }; } }));
  t.match(object, { replicas: 6, metricName: 'Ingress metric rps' }, 'value 300 of a target 100: ratio 3 on 2 ready pods');

  const perPod = await proposeReplicas([{ type: 'External', external: { metric: { name: 'queue', selector: { matchLabels: { q: 'jobs' } } }, target: { type: 'AverageValue', averageValue: '30' } } }],
    ctx({ externalMetric: async (_ns, name, selector) => { t.same([name, selector], ['queue', 'q=jobs']); return { value: 150_000, timestamp: NOW }; } }));
  t.equal(perPod.replicas, 5, '150 queued at 30 per pod: 5');

  const both = await proposeReplicas([
    { type: 'External', external: { metric: { name: 'queue' }, target: { type: 'Value', value: '100' } } },
    { type: 'Pods', pods: { metric: { name: 'qps' }, target: { type: 'AverageValue', averageValue: '10' } } },
  ], ctx({ externalMetric: async () => ({ value: 100_000, timestamp: NOW }), podsMetric: async () => new Map([['p0', metric(30_000)], ['p1', metric(30_000)]]) }));
  t.match(both, { replicas: 6, metricName: 'pods metric qps' }, 'the largest proposal wins');
});

t.test('failures', async (t) => {
  const down = { podsMetric: async () => new Map([['p0', metric(1000)], ['p1', metric(1000)]]), externalMetric: async () => { throw new Error('no adapter'); } };
  const specs = [
    { type: 'Pods', pods: { metric: { name: 'qps' }, target: { type: 'AverageValue', averageValue: '10' } } },
    { type: 'External', external: { metric: { name: 'queue' }, target: { type: 'Value', value: '100' } } },
  ];
  const e = await proposeReplicas(specs, ctx(down)).catch((x: unknown) => x);
  t.ok(e instanceof MetricsFailed, 'a failed metric with the others scaling down: no proposal');
  t.match((e as MetricsFailed).failure, { reason: 'FailedGetExternalMetric', message: /^the HPA was unable to compute the replica count: failed to get external metric value: no adapter/ });
  const up = { podsMetric: async () => new Map([['p0', metric(40_000)], ['p1', metric(40_000)]]), externalMetric: async () => { throw new Error('no adapter'); } };
  t.equal((await proposeReplicas(specs, ctx(up))).replicas, 8, 'a failed metric does not stop a scale-up the others ask for');
  const noSelector = await proposeReplicas([{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 50 } } }], { ...ctx({}), selector: '' }).catch((x: unknown) => x);
  t.match((noSelector as MetricsFailed).failure, { reason: 'InvalidSelector' });
  const legacy = await proposeReplicas(specs.slice(0, 1), { ...ctx(down), restClients: false }).catch((x: unknown) => x);
  t.match((legacy as MetricsFailed).failure.message, /--horizontal-pod-autoscaler-use-rest-clients=true/, 'custom metrics need the REST clients');
});

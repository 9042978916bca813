// The replica calculator against cases of Kubernetes' replica_calculator_test.go: scale up and
// down by utilization, the tolerance, unready pods on a scale-up, missing metrics on a
// scale-down and a scale-up, average values, and the errors.
import t from 'tap';
import { plainMetricReplicas, resourceUtilizationReplicas, ReplicaCalcError, type PodInfo, type PodMetric } from '../../../src/daemons/controller-manager/controllers/horizontalpodautoscaling/replica-calculator.js';

const NOW = 1_800_000_000_000;
const MIN = 60_000;

/** Pods started 10 minutes ago, each requesting `requests[i]` millicores; `ready[i]` false: never became Ready. */
function pods(requests: number[], ready: boolean[] = []): PodInfo[] {
  return requests.map((r, i) => {
    const isReady = ready[i] ?? true;
    return {
      name: `p${i}`, phase: 'Running', deleting: false, startTime: NOW - 10 * MIN,
      ready: { status: isReady ? 'True' : 'False', lastTransitionTime: NOW - 10 * MIN + 10_000 },
      requests: { cpu: { c: r } }, containers: ['c'],
    };
  });
}

function metrics(levels: (number | undefined)[]): Map<string, PodMetric> {
  const m = new Map<string, PodMetric>();
  levels.forEach((v, i) => { if (v !== undefined) m.set(`p${i}`, { value: v, timestamp: NOW - 30_000, windowMs: 30_000 }); });
  return m;
}

const calc = (current: number, target: number, p: PodInfo[], m: Map<string, PodMetric>) =>
  resourceUtilizationReplicas({ currentReplicas: current, targetUtilization: target, resource: 'cpu', pods: p, metrics: m, tolerance: 0.1, now: NOW });

t.test('utilization', async (t) => {
  t.match(calc(3, 30, pods([1000, 1000, 1000]), metrics([300, 500, 700])), { replicas: 5, utilization: 50, rawAverage: 500 }, 'ScaleUp');
  t.match(calc(5, 50, pods([1000, 1000, 1000, 1000, 1000]), metrics([100, 300, 500, 250, 250])), { replicas: 3, utilization: 28 }, 'ScaleDown');
  t.match(calc(3, 100, pods([900, 1000, 1100]), metrics([1010, 1030, 1020])), { replicas: 3, utilization: 102 }, 'Tolerance: 102 % of a 100 % target changes nothing');
  t.match(calc(3, 30, pods([1000, 1000, 1000], [false, true, true]), metrics([300, 500, 700])), { replicas: 4, utilization: 60 }, 'ScaleUpUnreadyLessScale: the unready pod counts as 0 on a scale-up');
  t.match(calc(3, 30, pods([1000, 1000, 1000], [false, false, true]), metrics([100, 500, 700])), { replicas: 3 }, 'ScaleUpUnreadyNoScale: with the unready pods at 0 it is not above target any more');
});

t.test('missing metrics', async (t) => {
  t.match(calc(2, 100, pods([1000, 1000]), metrics([1900])), { replicas: 2, utilization: 190 }, 'MissingMetricsNoChangeLt: a missing pod at 0 brings the scale-up within tolerance');
  t.match(calc(4, 50, pods([1000, 1000, 1000, 1000], [false, true, true, true]), metrics([100, 100, 100])), { replicas: 3, utilization: 10 }, 'MissingMetricsUnreadyScaleDown: a missing pod counts as 100 % of its request');
  t.match(calc(2, 50, pods([1000, 1000]), metrics([400])), { replicas: 2 }, 'a missing pod at 100 % flips a scale-down into a scale-up: no change');
  t.match(calc(3, 50, pods([1000, 1000, 1000]), metrics([1000, 1000])), { replicas: 4 }, 'ScaleUp with a missing pod at 0 %: (1000+1000+0)/3000 = 66 % of 50 %');
});

t.test('CPU initialization: a pod in its first 5 minutes without a sample since it became Ready is unready', async (t) => {
  const p = pods([1000, 1000]);
  p[0] = { ...p[0]!, startTime: NOW - MIN, ready: { status: 'True', lastTransitionTime: NOW - 10_000 } };
  t.match(calc(2, 50, p, metrics([2000, 1000])), { replicas: 2, utilization: 100 }, 'scale-up counts the fresh pod as 0: (0+1000)/2000 = 50 %');
});

t.test('errors', async (t) => {
  t.throws(() => calc(1, 50, [], metrics([100])), ReplicaCalcError, 'no pods');
  t.throws(() => calc(1, 50, pods([1000]), new Map()), ReplicaCalcError, 'no metrics');
  const noRequest = pods([1000]);
  noRequest[0] = { ...noRequest[0]!, requests: {} };
  t.throws(() => calc(1, 50, noRequest, metrics([100])), /missing request for cpu in container c of Pod p0/);
  t.throws(() => calc(2, 50, pods([1000, 1000], [false, false]), metrics([100, 100])), /did not receive metrics for targeted pods/, 'all unready');
});

t.test('average value', async (t) => {
  const r = plainMetricReplicas({ currentReplicas: 3, targetAverage: 200, resource: 'memory', pods: pods([1, 1, 1]), metrics: metrics([300, 500, 700]), tolerance: 0.1, now: NOW });
  t.same(r.replicas, 8, 'ceil(1500/200 / 3 × 3)');
  t.equal(r.usage, 500);
  const down = plainMetricReplicas({ currentReplicas: 4, targetAverage: 1000, pods: pods([1, 1, 1, 1]), metrics: metrics([500, 500, 500]), tolerance: 0.1, now: NOW });
  t.equal(down.replicas, 3, 'the missing pod counts as the target on a scale-down: ceil(2500/1000)');
});

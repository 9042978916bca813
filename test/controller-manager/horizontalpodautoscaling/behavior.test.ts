// Normalization of a recommendation as Kubernetes' HorizontalController does it: the downscale
// stabilization and scale-up limit without behavior; with behavior the stabilization windows,
// the Pods/Percent policies over their periods, selectPolicy and min/max.
import t from 'tap';
import { defaultedBehavior, ReplicaNormalizer } from '../../../src/daemons/controller-manager/controllers/horizontalpodautoscaling/behavior.js';

function clock(): { now: () => number; advance(ms: number): void } {
  let n = 1_800_000_000_000;
  return { now: () => n, advance: (ms) => { n += ms; } };
}

t.test('without behavior', async (t) => {
  const c = clock();
  const n = new ReplicaNormalizer(300_000, c.now);
  t.match(n.normalize('k', 5, 5, 1, 10), { replicas: 5, ableToScale: { reason: 'ReadyForNewScale' }, limited: { status: 'False', reason: 'DesiredWithinRange' } });
  c.advance(60_000);
  t.match(n.normalize('k', 5, 2, 1, 10), { replicas: 5, ableToScale: { reason: 'ScaleDownStabilized' } }, 'a higher recommendation within the window holds the downscale');
  c.advance(241_000);
  t.match(n.normalize('k', 5, 2, 1, 10), { replicas: 2 }, 'once it is older than the window the downscale happens');
  t.match(n.normalize('up', 1, 10, 1, 10), { replicas: 4, limited: { status: 'True', reason: 'ScaleUpLimit' } }, 'at most max(2×current, 4) per step');
  t.match(n.normalize('up2', 3, 10, 1, 5), { replicas: 5, limited: { status: 'True', reason: 'TooManyReplicas' } });
  t.match(n.normalize('min', 3, 1, 2, 5), { replicas: 2, limited: { status: 'True', reason: 'TooFewReplicas' } });
});

t.test('with behavior: policies over their periods', async (t) => {
  const c = clock();
  const n = new ReplicaNormalizer(300_000, c.now);
  const b = defaultedBehavior({ scaleUp: { policies: [{ type: 'Pods', value: 1, periodSeconds: 60 }] }, scaleDown: { stabilizationWindowSeconds: 0, policies: [{ type: 'Percent', value: 50, periodSeconds: 60 }] } }, 300);
  let r = n.normalizeWithBehavior('k', 2, 6, 1, 10, b);
  t.match(r, { replicas: 3, limited: { status: 'True', reason: 'ScaleUpLimit' } }, 'one pod per minute');
  n.storeScaleEvent('k', 2, 3, b);
  c.advance(10_000);
  r = n.normalizeWithBehavior('k', 3, 6, 1, 10, b);
  t.equal(r.replicas, 3, 'the period\'s pod is spent');
  c.advance(51_000);
  r = n.normalizeWithBehavior('k', 3, 6, 1, 10, b);
  t.equal(r.replicas, 4, 'a new period allows one more');
  const d = new ReplicaNormalizer(300_000, c.now);
  t.match(d.normalizeWithBehavior('d', 10, 1, 1, 10, b), { replicas: 5, limited: { reason: 'ScaleDownLimit' } }, '50 % per minute down');
  const off = defaultedBehavior({ scaleDown: { selectPolicy: 'Disabled' } }, 0);
  t.equal(new ReplicaNormalizer(0, c.now).normalizeWithBehavior('x', 10, 1, 1, 10, off).replicas, 10, 'selectPolicy Disabled');
  const min = defaultedBehavior({ scaleUp: { selectPolicy: 'Min', policies: [{ type: 'Pods', value: 4, periodSeconds: 15 }, { type: 'Percent', value: 100, periodSeconds: 15 }] } }, 0);
  t.equal(new ReplicaNormalizer(0, c.now).normalizeWithBehavior('m', 10, 30, 1, 100, min).replicas, 14, 'Min picks the smaller of +4 and +100 %');
  t.equal(new ReplicaNormalizer(0, c.now).normalizeWithBehavior('m', 10, 30, 1, 100, defaultedBehavior({}, 0)).replicas, 20, 'the default scale-up: the larger of +4 and +100 %');
});

t.test('with behavior: stabilization windows', async (t) => {
  const c = clock();
  const n = new ReplicaNormalizer(300_000, c.now);
  const b = defaultedBehavior({ scaleUp: { stabilizationWindowSeconds: 60 } }, 300);
  t.equal(b.scaleDown.stabilizationWindowSeconds, 300, 'an unset scale-down window is the downscale delay');
  t.equal(n.normalizeWithBehavior('k', 3, 3, 1, 10, b).replicas, 3);
  c.advance(10_000);
  t.match(n.normalizeWithBehavior('k', 3, 8, 1, 10, b), { replicas: 3, ableToScale: { reason: 'ScaleUpStabilized' } }, 'the lowest recommendation of the up window holds the upscale');
  c.advance(55_000);
  t.equal(n.normalizeWithBehavior('k', 3, 8, 1, 10, b).replicas, 7, 'then the upscale, at the default rate (the larger of +4 and +100 %)');
});

t.test('horizontalpodautoscaling is selectable', async (t) => {
  const { assertSelectable } = await import('../fixtures/controller-harness.js');
  await assertSelectable(t, 'horizontalpodautoscaling');
});

import t from 'tap';
import type { KubeObject } from '../../src/api/resources/types.js';
import {
  ALL_CONTROLLER_NAMES, enabledControllers, isControllerEnabled, unknownControllers,
} from '../../src/daemons/controller-manager/controller-registry.js';
import {
  ControllerExpectations, compareForDeletion, podsToDelete, slowStartBatch,
} from '../../src/daemons/controller-manager/controllers/controller-utils.js';
import { replicaSetsToCleanUp } from '../../src/daemons/controller-manager/controllers/deployment/history.js';
import { deploymentProgressing, deploymentTimedOut } from '../../src/daemons/controller-manager/controllers/deployment/progress.js';
import { maxScaledDown } from '../../src/daemons/controller-manager/controllers/deployment/rolling.js';
import { isScalingEvent, proportionalSizes } from '../../src/daemons/controller-manager/controllers/deployment/sync.js';
import {
  equalIgnoreHash, maxSurge, maxUnavailable, newRSNewReplicas, podTemplateHash, resolveFenceposts, scaledValue,
  setNewReplicaSetAnnotations,
} from '../../src/daemons/controller-manager/controllers/deployment/util.js';

function deployment(replicas: number, surge: number | string = '25%', unavailable: number | string = '25%', extra: Record<string, unknown> = {}): KubeObject {
  return {
    metadata: { name: 'd', namespace: 'ns', generation: 1, annotations: {} },
    spec: { replicas, strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: surge, maxUnavailable: unavailable } }, ...extra },
    status: {},
  };
}

function rs(name: string, replicas: number, opts: { available?: number; max?: number; desired?: number; created?: string; revision?: number; statusReplicas?: number } = {}): KubeObject {
  const annotations: Record<string, string> = {};
  if (opts.max !== undefined) annotations['deployment.kubernetes.io/max-replicas'] = String(opts.max);
  if (opts.desired !== undefined) annotations['deployment.kubernetes.io/desired-replicas'] = String(opts.desired);
  if (opts.revision !== undefined) annotations['deployment.kubernetes.io/revision'] = String(opts.revision);
  return {
    metadata: { name, uid: name, creationTimestamp: opts.created ?? '2024-01-01T00:00:00Z', annotations, generation: 1 },
    spec: { replicas },
    status: { replicas: opts.statusReplicas ?? replicas, availableReplicas: opts.available ?? replicas, observedGeneration: 1 },
  };
}

t.test('int-or-percent scaling and fenceposts', async (t) => {
  t.equal(scaledValue('25%', 3, true), 1, 'surge rounds up');
  t.equal(scaledValue('25%', 3, false), 0, 'unavailable rounds down');
  t.equal(scaledValue('50%', 5, true), 3);
  t.equal(scaledValue('50%', 5, false), 2);
  t.equal(scaledValue(2, 100, true), 2);
  t.throws(() => scaledValue('abc', 3, true));
  t.same(resolveFenceposts('25%', '25%', 10), { surge: 3, unavailable: 2 });
  t.same(resolveFenceposts(0, '10%', 5), { surge: 0, unavailable: 1 }, 'both zero: unavailable becomes 1');
  t.equal(maxSurge(deployment(3)), 1);
  t.equal(maxUnavailable(deployment(3)), 0);
  t.equal(maxUnavailable(deployment(2, 0, 5)), 2, 'never more than replicas');
  t.equal(maxSurge(deployment(3, 1, 1, { strategy: { type: 'Recreate' } })), 0, 'Recreate has no surge');
});

t.test('new ReplicaSet growth within the surge', async (t) => {
  const d = deployment(10);
  t.equal(newRSNewReplicas(d, [rs('old', 10), rs('new', 0)], rs('new', 0)), 3, '10 + 25% surge = 13 total');
  t.equal(newRSNewReplicas(d, [rs('old', 10), rs('new', 3)], rs('new', 3)), 3, 'at the surge limit: unchanged');
  t.equal(newRSNewReplicas(d, [rs('old', 2), rs('new', 8)], rs('new', 8)), 10, 'never above replicas');
  t.equal(newRSNewReplicas(deployment(4, 1, 1, { strategy: { type: 'Recreate' } }), [rs('new', 0)], rs('new', 0)), 4);
});

t.test('how far old ReplicaSets may shrink', async (t) => {
  const d = deployment(10); // maxUnavailable 2 -> minAvailable 8
  const newRS = rs('new', 3, { available: 1 });
  t.equal(maxScaledDown(d, [rs('old', 10), newRS], newRS), 13 - 8 - 2);
  const newReady = rs('new', 3);
  t.equal(maxScaledDown(d, [rs('old', 10), newReady], newReady), 5);
});

t.test('proportional scaling during a rollout', async (t) => {
  const up = deployment(10, 3, 0);
  const newRS = rs('new', 6, { max: 8, created: '2024-01-02T00:00:00Z' });
  const oldRS = rs('old', 2, { max: 8 });
  const sizes = proportionalSizes(up, [newRS, oldRS]);
  t.equal(sizes.get(newRS), 10);
  t.equal(sizes.get(oldRS), 3);
  const down = deployment(5, 3, 0);
  const n2 = rs('new', 7, { max: 13, created: '2024-01-02T00:00:00Z' });
  const o2 = rs('old', 6, { max: 13 });
  const s2 = proportionalSizes(down, [n2, o2]);
  t.equal(s2.get(n2), 4);
  t.equal(s2.get(o2), 4);
  t.equal((s2.get(n2) ?? 0) + (s2.get(o2) ?? 0), 8, 'replicas + surge');
  t.ok(isScalingEvent(down, [rs('x', 3, { desired: 10 })]), 'desired-replicas differs: scaling event');
  t.notOk(isScalingEvent(down, [rs('x', 3, { desired: 5 })]));
  t.notOk(isScalingEvent(down, [rs('x', 0, { desired: 10 })]), 'inactive replica sets do not count');
});

t.test('revision bookkeeping, hash and template equality', async (t) => {
  const d = deployment(3);
  d.metadata!.annotations = { 'kubernetes.io/change-cause': 'x', 'deployment.kubernetes.io/revision': '2' };
  const reused = rs('old', 0, { revision: 1 });
  t.ok(setNewReplicaSetAnnotations(d, reused, 3, true));
  t.equal(reused.metadata?.annotations?.['deployment.kubernetes.io/revision'], '3');
  t.equal(reused.metadata?.annotations?.['deployment.kubernetes.io/revision-history'], '1');
  t.equal(reused.metadata?.annotations?.['kubernetes.io/change-cause'], 'x', 'deployment annotations are copied');
  t.notOk(setNewReplicaSetAnnotations(d, reused, 3, true), 'no change the second time');
  const fresh = rs('new', 0);
  setNewReplicaSetAnnotations(d, fresh, 1, false);
  t.match(fresh.metadata?.annotations, { 'deployment.kubernetes.io/desired-replicas': '3', 'deployment.kubernetes.io/max-replicas': '4' });

  const tpl = { metadata: { labels: { app: 'a' } }, spec: { containers: [{ name: 'c', image: 'i:1' }] } };
  const h = podTemplateHash(tpl);
  t.match(h, /^[bcdfghjklmnpqrstvwxz2456789]+$/);
  t.equal(podTemplateHash({ ...tpl, metadata: { labels: { app: 'a', 'pod-template-hash': h } } }), h, 'the hash label does not change the hash');
  t.not(podTemplateHash(tpl, 1), h, 'collision count changes the hash');
  t.ok(equalIgnoreHash(tpl, { metadata: { labels: { app: 'a', 'pod-template-hash': h }, creationTimestamp: null }, spec: tpl.spec }));
  t.notOk(equalIgnoreHash(tpl, { ...tpl, spec: { containers: [{ name: 'c', image: 'i:2' }] } }));
});

t.test('revision history cleanup picks settled, lowest revisions', async (t) => {
  const d = deployment(3, 1, 0, { revisionHistoryLimit: 1 });
  const olds = [rs('r1', 0, { revision: 1 }), rs('r2', 0, { revision: 2 }), rs('r3', 0, { revision: 3, statusReplicas: 1 })];
  t.same(replicaSetsToCleanUp(d, olds).map((r) => r.metadata?.name), ['r1', 'r2']);
  const none = deployment(3);
  t.same(replicaSetsToCleanUp(none, olds), [], 'no limit: keep everything');
  const limitLow = deployment(3, 1, 0, { revisionHistoryLimit: 0 });
  t.same(replicaSetsToCleanUp(limitLow, olds).map((r) => r.metadata?.name), ['r1', 'r2'], 'a ReplicaSet with pods is kept');
});

t.test('progress and deadline', async (t) => {
  const d = deployment(3, 1, 0, { progressDeadlineSeconds: 10 });
  d.status = { replicas: 3, updatedReplicas: 1, readyReplicas: 2, availableReplicas: 2 };
  t.ok(deploymentProgressing(d, { replicas: 3, updatedReplicas: 2, readyReplicas: 2, availableReplicas: 2 }));
  t.notOk(deploymentProgressing(d, { replicas: 3, updatedReplicas: 1, readyReplicas: 2, availableReplicas: 2 }));
  const old = new Date(Date.now() - 20_000).toISOString();
  t.ok(deploymentTimedOut(d, { conditions: [{ type: 'Progressing', status: 'True', reason: 'ReplicaSetUpdated', lastUpdateTime: old }] }));
  t.notOk(deploymentTimedOut(d, { conditions: [{ type: 'Progressing', status: 'True', reason: 'NewReplicaSetAvailable', lastUpdateTime: old }] }));
  t.notOk(deploymentTimedOut(d, { conditions: [{ type: 'Progressing', status: 'True', reason: 'ReplicaSetUpdated', lastUpdateTime: new Date().toISOString() }] }));
});

function pod(name: string, o: { node?: string; phase?: string; ready?: boolean; restarts?: number; created?: string; readySince?: string } = {}): KubeObject {
  return {
    metadata: { name, creationTimestamp: o.created ?? '2024-01-01T00:00:00Z' },
    spec: o.node ? { nodeName: o.node } : {},
    status: {
      phase: o.phase ?? 'Running',
      conditions: [{ type: 'Ready', status: o.ready ? 'True' : 'False', lastTransitionTime: o.readySince ?? '2024-01-01T00:00:00Z' }],
      containerStatuses: [{ restartCount: o.restarts ?? 0 }],
    },
  };
}

t.test('deletion ranking follows ActivePods order', async (t) => {
  const order = (pods: KubeObject[]): string[] => [...pods].sort((a, b) => compareForDeletion(a, b)).map((p) => p.metadata?.name ?? '');
  t.same(order([pod('scheduled', { node: 'n' }), pod('unscheduled')]), ['unscheduled', 'scheduled']);
  t.same(order([pod('running', { node: 'n' }), pod('pending', { node: 'n', phase: 'Pending' })]), ['pending', 'running']);
  t.same(order([pod('ready', { node: 'n', ready: true }), pod('notready', { node: 'n' })]), ['notready', 'ready']);
  t.same(order([pod('few', { node: 'n', restarts: 1 }), pod('many', { node: 'n', restarts: 5 })]), ['many', 'few']);
  t.same(order([pod('older', { node: 'n' }), pod('newer', { node: 'n', created: '2024-02-01T00:00:00Z' })]), ['newer', 'older']);
  t.same(order([pod('long', { node: 'n', ready: true }), pod('short', { node: 'n', ready: true, readySince: '2024-03-01T00:00:00Z' })]), ['short', 'long'], 'ready for less time goes first');
  const crowded = [pod('a1', { node: 'a', ready: true }), pod('a2', { node: 'a', ready: true }), pod('b1', { node: 'b', ready: true })];
  t.same(podsToDelete(crowded, crowded, 1).map((p) => p.metadata?.name).filter((n) => n?.startsWith('a')).length, 1, 'a pod from the crowded node goes first');
});

t.test('expectations', async (t) => {
  let now = 0;
  const e = new ControllerExpectations(() => now);
  t.ok(e.satisfied('k'), 'nothing recorded');
  e.expectCreations('k', 2);
  t.notOk(e.satisfied('k'));
  e.creationObserved('k');
  t.notOk(e.satisfied('k'));
  e.creationObserved('k');
  t.ok(e.satisfied('k'));
  e.expectDeletions('k', ['ns/a', 'ns/b']);
  e.deletionObserved('k', 'ns/a');
  e.deletionObserved('k', 'ns/a');
  t.notOk(e.satisfied('k'), 'a deletion is counted once per pod');
  e.deletionObserved('k', 'ns/x');
  t.notOk(e.satisfied('k'), 'unrelated pods do not count');
  now += 5 * 60 * 1000 + 1;
  t.ok(e.satisfied('k'), 'expired expectations no longer block');
});

t.test('slow start batches', async (t) => {
  const sizes: number[] = [];
  let inFlight = 0;
  let calls = 0;
  const r = await slowStartBatch(10, 1, async () => { calls++; inFlight++; sizes.push(inFlight); await Promise.resolve(); inFlight--; });
  t.same(r, { succeeded: 10 });
  t.equal(Math.max(...sizes), 4, 'batches 1, 2, 4, 3');
  calls = 0;
  const f = await slowStartBatch(10, 1, async () => { calls++; if (calls === 4) throw new Error('boom'); });
  t.equal(f.succeeded, 6, 'a failing batch stops further batches');
  t.equal(calls, 7);
  t.match(f.error, /boom/);
});

t.test('controller selection', async (t) => {
  t.equal(ALL_CONTROLLER_NAMES.length, 34, "the reference's 32, root-ca-cert-publisher and endpointslice (ours)");
  t.ok(isControllerEnabled('deployment', ['*']));
  t.notOk(isControllerEnabled('bootstrapsigner', ['*']), 'off by default');
  t.notOk(isControllerEnabled('tokencleaner', ['*']));
  t.ok(isControllerEnabled('tokencleaner', ['*', 'tokencleaner']));
  t.notOk(isControllerEnabled('deployment', ['*', '-deployment']));
  t.ok(isControllerEnabled('bootstrapsigner', ['bootstrapsigner']));
  t.notOk(isControllerEnabled('deployment', ['bootstrapsigner']), 'without * only named ones');
  t.equal(enabledControllers(['*']).length, 32);
  t.same(unknownControllers(['*', 'deployment', '-foo', 'bar']), ['-foo', 'bar']);
});

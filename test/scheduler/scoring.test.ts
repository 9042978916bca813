import t from 'tap';
import { fitErrorMessage, schedulePod, scoreNodes, selectHost, DEFAULT_PLUGINS, NO_NODES_MESSAGE } from '../../src/daemons/scheduler/algorithm.js';
import { newPodInfo, nodeInfoOf } from '../../src/daemons/scheduler/node-info.js';
import { balancedAllocation, balancedScore } from '../../src/daemons/scheduler/scoring/balanced-allocation.js';
import { leastAllocated, leastAllocatedScore } from '../../src/daemons/scheduler/scoring/least-allocated.js';
import { ownerSpread } from '../../src/daemons/scheduler/scoring/owner-spread.js';
import { makeNode, makePod } from './fixtures.js';

t.test('least allocated favours emptier nodes', async (t) => {
  t.equal(leastAllocatedScore(1000, 250), 75);
  t.equal(leastAllocatedScore(1000, 1001), 0);
  t.equal(leastAllocatedScore(0, 0), 0);
  const empty = nodeInfoOf(makeNode('a', { cpu: '4', memory: '4Gi' }));
  const busy = nodeInfoOf(makeNode('b', { cpu: '4', memory: '4Gi' }), [makePod('x', { cpu: '2', memory: '2Gi' })]);
  const pod = newPodInfo(makePod('p', { cpu: '1', memory: '1Gi' }));
  const [a, b] = leastAllocated.score(pod, [empty, busy]);
  t.equal(a, 75);
  t.equal(b, 25);
});

t.test('balanced allocation favours even cpu/memory use', async (t) => {
  t.equal(balancedScore([0.5, 0.5]), 100);
  t.equal(balancedScore([1, 0]), 50);
  const cpuHeavy = nodeInfoOf(makeNode('a', { cpu: '4', memory: '4Gi' }), [makePod('x', { cpu: '2' })]);
  const even = nodeInfoOf(makeNode('b', { cpu: '4', memory: '4Gi' }), [makePod('y', { cpu: '1', memory: '1Gi' })]);
  const pod = newPodInfo(makePod('p', { cpu: '1', memory: '1Gi' }));
  const [a, b] = balancedAllocation.score(pod, [cpuHeavy, even]);
  t.equal(b, 100);
  t.ok((a ?? 0) < (b ?? 0));
});

t.test('owner spread favours nodes with fewer pods of the same controller', async (t) => {
  const pod = newPodInfo(makePod('p', { owner: 'rs' }));
  const nodes = [
    nodeInfoOf(makeNode('a'), [makePod('x1', { owner: 'rs' }), makePod('x2', { owner: 'rs' })]),
    nodeInfoOf(makeNode('b'), [makePod('y1', { owner: 'rs' }), makePod('other', { owner: 'rs2' })]),
    nodeInfoOf(makeNode('c')),
  ];
  t.same(ownerSpread.score(pod, nodes), [0, 50, 100]);
  t.same(ownerSpread.score(newPodInfo(makePod('lone')), nodes), [0, 0, 0], 'no controller: neutral');
  t.same(ownerSpread.score(newPodInfo(makePod('q', { owner: 'new' })), nodes), [100, 100, 100]);
});

t.test('selectHost picks the best and breaks ties at random', async (t) => {
  t.equal(selectHost([1, 5, 3], Math.random), 1);
  const seen = new Set<number>();
  for (let i = 0; i < 200; i++) seen.add(selectHost([7, 2, 7, 7], Math.random));
  t.same([...seen].sort(), [0, 2, 3]);
  t.equal(selectHost([], Math.random), -1);
});

t.test('fit error summary wording', async (t) => {
  t.equal(fitErrorMessage(3, new Map([['node(s) had untolerated taint {a: b}', 1], ['Insufficient cpu', 2]])),
    '0/3 nodes are available: 1 node(s) had untolerated taint {a: b}, 2 Insufficient cpu.');
  t.equal(fitErrorMessage(0, new Map()), NO_NODES_MESSAGE);
});

t.test('schedulePod filters, counts reasons per node and picks a fitting node', async (t) => {
  const nodes = [
    nodeInfoOf(makeNode('tainted', { taints: [{ key: 'dedicated', value: 'infra', effect: 'NoSchedule' }] })),
    nodeInfoOf(makeNode('small1', { cpu: '1' })),
    nodeInfoOf(makeNode('small2', { cpu: '1', memory: '1Gi' })),
  ];
  const big = schedulePod(newPodInfo(makePod('p', { cpu: '2', memory: '2Gi' })), nodes);
  t.notOk(big.ok);
  if (!big.ok) t.equal(big.message, '0/3 nodes are available: 1 Insufficient memory, 1 node(s) had untolerated taint {dedicated: infra}, 2 Insufficient cpu.');
  const small = schedulePod(newPodInfo(makePod('q', { cpu: '500m' })), nodes);
  t.ok(small.ok);
  if (small.ok) t.ok(['small1', 'small2'].includes(small.node));
  const tolerant = newPodInfo(makePod('r', { cpu: '2', tolerations: [{ key: 'dedicated', operator: 'Exists' }] }));
  const r = schedulePod(tolerant, nodes);
  t.ok(r.ok && r.node === 'tainted');
  t.equal(scoreNodes(tolerant, [nodes[0]!], DEFAULT_PLUGINS.scores).length, 1);
});

t.test('preferred node affinity adds the weights of matching terms, scaled to 100', async (t) => {
  const { nodeAffinityPreferred } = await import('../../src/daemons/scheduler/scoring/node-affinity-preferred.js');
  const pod = makePod('p');
  pod.spec!.affinity = { nodeAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [
    { weight: 10, preference: { matchExpressions: [{ key: 'disk', operator: 'In', values: ['ssd'] }] } },
    { weight: 30, preference: { matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }] } },
  ] } };
  const nodes = [
    nodeInfoOf(makeNode('both', { labels: { disk: 'ssd', zone: 'a' } })),
    nodeInfoOf(makeNode('zone', { labels: { zone: 'a' } })),
    nodeInfoOf(makeNode('none')),
  ];
  t.same(nodeAffinityPreferred.score(newPodInfo(pod), nodes), [100, 75, 0]);
  t.same(nodeAffinityPreferred.score(newPodInfo(makePod('q')), nodes), [0, 0, 0]);
});

t.test('PreferNoSchedule taints lower a node unless tolerated', async (t) => {
  const { taintPreferNoSchedule } = await import('../../src/daemons/scheduler/scoring/taint-prefer-no-schedule.js');
  const nodes = [
    nodeInfoOf(makeNode('clean')),
    nodeInfoOf(makeNode('one', { taints: [{ key: 'a', effect: 'PreferNoSchedule' }] })),
    nodeInfoOf(makeNode('two', { taints: [{ key: 'a', effect: 'PreferNoSchedule' }, { key: 'b', effect: 'PreferNoSchedule' }, { key: 'c', effect: 'NoSchedule' }] })),
  ];
  t.same(taintPreferNoSchedule.score(newPodInfo(makePod('p')), nodes), [100, 50, 0]);
  const tol = makePod('q', { tolerations: [{ key: 'a', operator: 'Exists', effect: 'PreferNoSchedule' }] });
  t.same(taintPreferNoSchedule.score(newPodInfo(tol), nodes), [100, 100, 0]);
  const noSchedOnly = makePod('r', { tolerations: [{ key: 'a', operator: 'Exists', effect: 'NoSchedule' }] });
  t.same(taintPreferNoSchedule.score(newPodInfo(noSchedOnly), nodes), [100, 50, 0], 'a NoSchedule toleration does not count');
});

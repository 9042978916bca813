import t from 'tap';
import { nodeAffinity, REASON_NODE_AFFINITY } from '../../src/daemons/scheduler/filters/node-affinity.js';
import { requirementMatches, toleratesTaint } from '../../src/api/resources/core/node-placement.js';
import { nodePorts, REASON_PORTS } from '../../src/daemons/scheduler/filters/node-ports.js';
import { nodeReady, REASON_NOT_READY } from '../../src/daemons/scheduler/filters/node-ready.js';
import { nodeResourcesFit } from '../../src/daemons/scheduler/filters/node-resources-fit.js';
import { nodeUnschedulable, REASON_UNSCHEDULABLE } from '../../src/daemons/scheduler/filters/node-unschedulable.js';
import { taintToleration } from '../../src/daemons/scheduler/filters/taint-toleration.js';
import { newPodInfo, nodeInfoOf } from '../../src/daemons/scheduler/node-info.js';
import type { Node, Pod } from '../../src/daemons/scheduler/types.js';
import { makeNode, makePod } from './fixtures.js';

const run = (f: { filter: (p: ReturnType<typeof newPodInfo>, n: ReturnType<typeof nodeInfoOf>) => readonly string[] }, pod: Pod, node: Node, onNode: Pod[] = []): readonly string[] =>
  f.filter(newPodInfo(pod), nodeInfoOf(node, onNode));

t.test('node ready: Ready=True passes; otherwise only pods tolerating not-ready', async (t) => {
  t.same(run(nodeReady, makePod('p'), makeNode('n')), []);
  t.same(run(nodeReady, makePod('p'), makeNode('n', { ready: false })), [REASON_NOT_READY]);
  const noConditions = makeNode('n');
  delete noConditions.status!.conditions;
  t.same(run(nodeReady, makePod('p'), noConditions), [REASON_NOT_READY]);
  const tol = makePod('p', { tolerations: [{ key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute' }] });
  t.same(run(nodeReady, tol, makeNode('n', { ready: false })), []);
});

t.test('node unschedulable: cordoned nodes take only pods tolerating the unschedulable taint', async (t) => {
  t.same(run(nodeUnschedulable, makePod('p'), makeNode('n')), []);
  t.same(run(nodeUnschedulable, makePod('p'), makeNode('n', { unschedulable: true })), [REASON_UNSCHEDULABLE]);
  const tol = makePod('p', { tolerations: [{ key: 'node.kubernetes.io/unschedulable', operator: 'Exists', effect: 'NoSchedule' }] });
  t.same(run(nodeUnschedulable, tol, makeNode('n', { unschedulable: true })), []);
});

t.test('toleration matching', async (t) => {
  const taint = { key: 'k', value: 'v', effect: 'NoSchedule' };
  t.ok(toleratesTaint({ key: 'k', operator: 'Equal', value: 'v', effect: 'NoSchedule' }, taint));
  t.ok(toleratesTaint({ key: 'k', value: 'v' }, taint), 'empty operator is Equal, empty effect matches all');
  t.notOk(toleratesTaint({ key: 'k', value: 'w' }, taint), 'value differs');
  t.ok(toleratesTaint({ key: 'k', operator: 'Exists' }, taint));
  t.notOk(toleratesTaint({ key: 'k', operator: 'Exists', effect: 'NoExecute' }, taint), 'effect differs');
  t.ok(toleratesTaint({ operator: 'Exists' }, taint), 'empty key with Exists tolerates everything');
  t.notOk(toleratesTaint({ key: 'other', operator: 'Exists' }, taint));
  t.notOk(toleratesTaint({ key: 'k', operator: 'Bogus' }, taint));
  t.ok(toleratesTaint({ key: 'k', operator: 'Equal' }, { key: 'k', effect: 'NoSchedule' }), 'empty values are equal');
});

t.test('taints: NoSchedule and NoExecute must be tolerated, PreferNoSchedule need not', async (t) => {
  const node = makeNode('n', { taints: [{ key: 'soft', value: 'x', effect: 'PreferNoSchedule' }, { key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }, { key: 'evict', effect: 'NoExecute' }] });
  t.same(run(taintToleration, makePod('p'), node), ['node(s) had untolerated taint {dedicated: gpu}'], 'first untolerated taint is reported');
  const one = makePod('p', { tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'gpu', effect: 'NoSchedule' }] });
  t.same(run(taintToleration, one, node), ['node(s) had untolerated taint {evict: }']);
  const both = makePod('p', { tolerations: [{ key: 'dedicated', operator: 'Exists' }, { key: 'evict', operator: 'Exists', effect: 'NoExecute' }] });
  t.same(run(taintToleration, both, node), []);
  t.same(run(taintToleration, makePod('p', { tolerations: [{ operator: 'Exists' }] }), node), []);
  t.same(run(taintToleration, makePod('p'), makeNode('m', { taints: [{ key: 'soft', effect: 'PreferNoSchedule' }] })), []);
});

t.test('node selector: every label must match', async (t) => {
  const node = makeNode('n', { labels: { disk: 'ssd', zone: 'a' } });
  t.same(run(nodeAffinity, makePod('p', { nodeSelector: { disk: 'ssd' } }), node), []);
  t.same(run(nodeAffinity, makePod('p', { nodeSelector: { disk: 'ssd', zone: 'b' } }), node), [REASON_NODE_AFFINITY]);
  t.same(run(nodeAffinity, makePod('p', { nodeSelector: { gpu: 'yes' } }), node), [REASON_NODE_AFFINITY]);
});

t.test('required node affinity: operators', async (t) => {
  const r = (operator: string, values?: string[]) => ({ key: 'k', operator, ...(values ? { values } : {}) });
  t.ok(requirementMatches(r('In', ['a', 'b']), 'a'));
  t.notOk(requirementMatches(r('In', ['a']), undefined));
  t.ok(requirementMatches(r('NotIn', ['a']), 'b'));
  t.ok(requirementMatches(r('NotIn', ['a']), undefined), 'NotIn holds when the label is absent');
  t.notOk(requirementMatches(r('NotIn', ['a']), 'a'));
  t.ok(requirementMatches(r('Exists'), ''));
  t.notOk(requirementMatches(r('Exists'), undefined));
  t.ok(requirementMatches(r('DoesNotExist'), undefined));
  t.notOk(requirementMatches(r('DoesNotExist'), 'x'));
  t.ok(requirementMatches(r('Gt', ['5']), '10'));
  t.notOk(requirementMatches(r('Gt', ['5']), '5'));
  t.ok(requirementMatches(r('Lt', ['5']), '-1'));
  t.notOk(requirementMatches(r('Lt', ['5']), 'abc'), 'non-integer label');
  t.notOk(requirementMatches(r('Gt', ['5', '6']), '10'), 'Gt needs exactly one value');
  t.notOk(requirementMatches(r('Gt', ['5']), undefined));
  t.notOk(requirementMatches(r('Bogus', ['5']), '5'));
});

t.test('required node affinity: terms are ORed, requirements ANDed, matchFields on metadata.name', async (t) => {
  const node = makeNode('node-1', { labels: { zone: 'a', cores: '8' } });
  const pod = (required: NonNullable<Parameters<typeof makePod>[1]>['required']) => makePod('p', { required: required! });
  t.same(run(nodeAffinity, pod([{ matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }, { key: 'cores', operator: 'Gt', values: ['4'] }] }]), node), []);
  t.same(run(nodeAffinity, pod([{ matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }, { key: 'cores', operator: 'Gt', values: ['16'] }] }]), node), [REASON_NODE_AFFINITY]);
  t.same(run(nodeAffinity, pod([{ matchExpressions: [{ key: 'zone', operator: 'In', values: ['b'] }] }, { matchFields: [{ key: 'metadata.name', operator: 'In', values: ['node-1'] }] }]), node), [], 'second term matches');
  t.same(run(nodeAffinity, pod([{ matchFields: [{ key: 'metadata.name', operator: 'NotIn', values: ['node-1'] }] }]), node), [REASON_NODE_AFFINITY]);
  t.same(run(nodeAffinity, pod([{}]), node), [REASON_NODE_AFFINITY], 'an empty term matches nothing');
  t.same(run(nodeAffinity, pod([]), node), [REASON_NODE_AFFINITY], 'no terms match nothing');
  const both = makePod('p', { nodeSelector: { zone: 'b' }, required: [{ matchExpressions: [{ key: 'zone', operator: 'Exists' }] }] });
  t.same(run(nodeAffinity, both, node), [REASON_NODE_AFFINITY], 'nodeSelector and affinity must both hold');
});

t.test('host ports: conflicts by protocol, port and address', async (t) => {
  const node = makeNode('n');
  const withPort = (name: string, port: number, hostIP?: string, protocol = 'TCP'): Pod => makePod(name, { containers: [{ name: 'c', ports: [{ containerPort: 80, hostPort: port, protocol, ...(hostIP ? { hostIP } : {}) }] }] });
  t.same(run(nodePorts, withPort('a', 8080), node, [withPort('b', 8080)]), [REASON_PORTS]);
  t.same(run(nodePorts, withPort('a', 8080), node, [withPort('b', 8081)]), []);
  t.same(run(nodePorts, withPort('a', 8080, undefined, 'UDP'), node, [withPort('b', 8080)]), [], 'other protocol');
  t.same(run(nodePorts, withPort('a', 8080, '10.0.0.1'), node, [withPort('b', 8080, '10.0.0.2')]), [], 'different specific addresses');
  t.same(run(nodePorts, withPort('a', 8080, '10.0.0.1'), node, [withPort('b', 8080)]), [REASON_PORTS], 'all addresses taken');
  t.same(run(nodePorts, withPort('a', 8080), node, [withPort('b', 8080, '10.0.0.2')]), [REASON_PORTS], 'wants all addresses');
  t.same(run(nodePorts, makePod('a'), node, [withPort('b', 8080)]), [], 'no host ports asked');
});

t.test('resources: requests against allocatable minus pods on the node', async (t) => {
  const node = makeNode('n', { cpu: '2', memory: '4Gi', pods: '3', ephemeral: '10Gi', extra: { 'example.com/gpu': '1' } });
  const on = [makePod('a', { cpu: '1', memory: '1Gi' }), makePod('b', { cpu: '500m' })];
  t.same(run(nodeResourcesFit, makePod('p', { cpu: '500m', memory: '3Gi' }), node, on), [], 'exactly fits');
  t.same(run(nodeResourcesFit, makePod('p', { cpu: '501m' }), node, on), ['Insufficient cpu']);
  t.same(run(nodeResourcesFit, makePod('p', { cpu: '1', memory: '4Gi' }), node, on), ['Insufficient cpu', 'Insufficient memory']);
  t.same(run(nodeResourcesFit, makePod('p'), node, [...on, makePod('c')]), ['Too many pods'], 'allocatable pods');
  const eph = makePod('p', { containers: [{ name: 'c', resources: { requests: { 'ephemeral-storage': '11Gi' } } }] });
  t.same(run(nodeResourcesFit, eph, node), ['Insufficient ephemeral-storage']);
  const gpu = makePod('p', { containers: [{ name: 'c', resources: { requests: { 'example.com/gpu': '2', 'other.io/x': '1' } } }] });
  t.same(run(nodeResourcesFit, gpu, node), ['Insufficient example.com/gpu', 'Insufficient other.io/x'], 'extended resources, absent counts as 0');
  const init = makePod('p', { cpu: '100m', initContainers: [{ name: 'i', resources: { requests: { cpu: '600m' } } }] });
  t.same(run(nodeResourcesFit, init, node, on), ['Insufficient cpu'], 'init container max counts');
});

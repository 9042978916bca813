import t from 'tap';
import { nodeAllocatable, podNonZeroRequests, podRequests, quantityValue } from '../../src/daemons/scheduler/resources.js';
import { makeNode, makePod } from './fixtures.js';

t.test('quantities become integers: millicores for cpu, base units otherwise', async (t) => {
  t.equal(quantityValue('cpu', '100m'), 100);
  t.equal(quantityValue('cpu', '0.1'), 100);
  t.equal(quantityValue('cpu', '2'), 2000);
  t.equal(quantityValue('cpu', '1.5'), 1500);
  t.equal(quantityValue('memory', '1Gi'), 1024 ** 3);
  t.equal(quantityValue('memory', '1.5k'), 1500);
  t.equal(quantityValue('pods', '110'), 110);
  t.equal(quantityValue('cpu', 'garbage'), 0);
});

t.test('effective request: containers sum versus the largest init container, plus overhead', async (t) => {
  const pod = makePod('p', {
    containers: [{ name: 'a', resources: { requests: { cpu: '100m', memory: '100Mi' } } }, { name: 'b', resources: { requests: { cpu: '200m' } } }],
    initContainers: [{ name: 'i1', resources: { requests: { cpu: '500m', memory: '50Mi' } } }, { name: 'i2', resources: { requests: { memory: '1Gi' } } }],
  });
  pod.spec!.overhead = { cpu: '10m' };
  const r = podRequests(pod);
  t.equal(r.cpu, 510, 'max(300, 500) + 10 overhead');
  t.equal(r.memory, 1024 ** 3, 'max(100Mi, 1Gi)');
});

t.test('sidecars (restartable init containers) add to the app containers and to later init containers', async (t) => {
  const pod = makePod('p', {
    containers: [{ name: 'a', resources: { requests: { cpu: '100m' } } }],
    initContainers: [
      { name: 'side', restartPolicy: 'Always', resources: { requests: { cpu: '200m' } } },
      { name: 'init', resources: { requests: { cpu: '250m' } } },
    ],
  });
  t.equal(podRequests(pod).cpu, 450, 'init 250 runs beside sidecar 200 = 450 > app 100 + sidecar 200');
});

t.test('limits stand in for missing requests; non-zero defaults for scoring', async (t) => {
  const pod = makePod('p', { containers: [{ name: 'a', resources: { limits: { cpu: '1', memory: '1Gi' } } }, { name: 'b' }] });
  t.same(podRequests(pod), { cpu: 1000, memory: 1024 ** 3 });
  t.same(podNonZeroRequests(pod), { cpu: 1100, memory: 1024 ** 3 + 200 * 1024 * 1024 });
  t.same(podNonZeroRequests(makePod('q')), { cpu: 100, memory: 200 * 1024 * 1024 });
});

t.test('node allocatable falls back to capacity', async (t) => {
  const n = makeNode('n', { cpu: '2', memory: '1Gi', pods: '10' });
  t.same(nodeAllocatable(n), { cpu: 2000, memory: 1024 ** 3, pods: 10 });
  delete n.status!.allocatable;
  t.equal(nodeAllocatable(n).cpu, 2000);
});

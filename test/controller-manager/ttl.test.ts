import t from 'tap';
import type { KubeObject } from '../../src/api/resources/types.js';
import type { ResourceRef, RestClient } from '../../src/client/rest-client.js';
import { TTL_ANNOTATION, TTL_BOUNDARIES, TtlController, ttlBoundaryStep } from '../../src/daemons/controller-manager/controllers/ttl.js';
import { assertSelectable, startControllers, waitFor } from './fixtures/controller-harness.js';

const NODES: ResourceRef = { group: '', version: 'v1', resource: 'nodes' };

const node = (name: string, annotations?: Record<string, string>): KubeObject =>
  ({ apiVersion: 'v1', kind: 'Node', metadata: { name, ...(annotations ? { annotations } : {}) } });

/** Walks the node count from `from` to `to` one node at a time, as add and delete events do. */
function walk(step: number, from: number, to: number): number {
  let s = step;
  for (let n = from; n !== to;) { n += to > from ? 1 : -1; s = ttlBoundaryStep(s, n); }
  return s;
}
const ttlOf = (step: number): number => TTL_BOUNDARIES[step]?.ttlSeconds ?? -1;

async function allAnnotated(client: RestClient, value: string, count: number): Promise<boolean> {
  const items = (await client.list(NODES)).items;
  return items.length === count && items.every((n) => n.metadata?.annotations?.[TTL_ANNOTATION] === value);
}

t.test('the TTL follows cluster size with Kubernetes\' hysteresis', async (t) => {
  t.equal(ttlOf(walk(0, 0, 100)), 0, '100 nodes: 0');
  t.equal(ttlOf(walk(0, 0, 101)), 15, '101 nodes: 15');
  t.equal(ttlOf(walk(walk(0, 0, 101), 101, 90)), 15, 'back down to 90: still 15');
  t.equal(ttlOf(walk(walk(0, 0, 101), 101, 89)), 0, 'below 90: 0 again');
  t.equal(ttlOf(walk(0, 0, 500)), 15, '500: 15');
  t.equal(ttlOf(walk(0, 0, 501)), 30, '501: 30');
  t.equal(ttlOf(walk(walk(0, 0, 501), 501, 450)), 30, 'down to 450: still 30');
  t.equal(ttlOf(walk(walk(0, 0, 501), 501, 449)), 15, 'below 450: 15');
  t.equal(ttlOf(walk(0, 0, 1001)), 60, '1001: 60');
  t.equal(ttlOf(walk(walk(0, 0, 1001), 1001, 899)), 30, 'below 900: 30');
  t.equal(ttlOf(walk(0, 0, 2001)), 300, '2001: 300');
  t.equal(ttlOf(walk(walk(0, 0, 2001), 2001, 1800)), 300, 'down to 1800: still 300');
  t.equal(ttlOf(walk(walk(0, 0, 2001), 2001, 1799)), 60, 'below 1800: 60');
  t.equal(ttlOf(ttlBoundaryStep(0, 5000)), 300, 'a jump moves through every step');
  t.equal(ttlOf(ttlBoundaryStep(4, 0)), 0);
});

t.test('ttl is selectable and on by default', async (t) => {
  await assertSelectable(t, 'ttl');
});

t.test('nodes carry the ttl annotation against a real API server', async (t) => {
  const ctl = new TtlController();
  const c = await startControllers(ctl);
  t.teardown(() => c.stop());

  await t.test('a small cluster gets 0, and a wrong value is put right', async (t) => {
    await c.client.create(NODES, node('n1'));
    await c.client.create(NODES, node('n2', { [TTL_ANNOTATION]: '7', keep: 'me' }));
    await waitFor('ttl 0 on both nodes', () => allAnnotated(c.client, '0', 2));
    t.equal((await c.client.get(NODES, 'n2')).metadata?.annotations?.keep, 'me', 'other annotations stay');
    await c.client.patch(NODES, 'n1', 'merge', { metadata: { annotations: { [TTL_ANNOTATION]: 'garbage' } } });
    await waitFor('ttl 0 again on n1', async () => (await c.client.get(NODES, 'n1')).metadata?.annotations?.[TTL_ANNOTATION] === '0');
    t.pass('annotated');
  });

  await t.test('crossing a boundary re-annotates every node, and the way back has hysteresis', async (t) => {
    const names = Array.from({ length: 99 }, (_, i) => `bulk-${String(i).padStart(3, '0')}`);
    for (let i = 0; i < names.length; i += 20) await Promise.all(names.slice(i, i + 20).map((n) => c.client.create(NODES, node(n))));
    await waitFor('101 nodes with ttl 15', () => allAnnotated(c.client, '15', 101), 60_000);
    t.equal(ctl.desiredTtlSeconds, 15);

    for (const n of names.slice(0, 6)) await c.client.delete(NODES, n);
    await waitFor('the controller to count 95 nodes', async () => ctl.nodeCount === 95);
    t.equal(ctl.desiredTtlSeconds, 15, '95 nodes (above the step\'s minimum 90): still 15');

    for (const n of names.slice(6, 12)) await c.client.delete(NODES, n);
    await waitFor('89 nodes with ttl 0', () => allAnnotated(c.client, '0', 89), 60_000);
    t.equal(ctl.desiredTtlSeconds, 0);
  });
});

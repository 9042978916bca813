import t from 'tap';
import { ManualClock } from '../../src/client/clock.js';
import { SchedulerCache } from '../../src/daemons/scheduler/cache.js';
import { SchedulingQueue } from '../../src/daemons/scheduler/queue.js';
import { makeNode, makePod } from './fixtures.js';

t.test('FIFO, dedup, delete', async (t) => {
  const q = new SchedulingQueue({ clock: new ManualClock() });
  q.add('a'); q.add('b'); q.add('a');
  t.same(q.sizes, { active: 2, backoff: 0, unschedulable: 0 });
  q.delete('b');
  t.equal((await q.pop())?.key, 'a');
  q.add('c');
  t.equal((await q.pop())?.key, 'c');
  const waiting = q.pop();
  q.add('d');
  t.equal((await waiting)?.key, 'd', 'a waiting pop gets the next add');
  q.close();
  t.equal(await q.pop(), undefined);
});

t.test('unschedulable pods wait for a cluster change, then back off', async (t) => {
  const clock = new ManualClock();
  const q = new SchedulingQueue({ clock, initialBackoffMs: 1000, maxBackoffMs: 4000 });
  q.add('p');
  const p = (await q.pop())!;
  q.requeue(p, true);
  t.same(q.sizes, { active: 0, backoff: 0, unschedulable: 1 });
  q.flush();
  t.same(q.sizes.unschedulable, 1, 'nothing changed: stays');
  q.moveAllToActiveOrBackoff();
  t.same(q.sizes, { active: 0, backoff: 1, unschedulable: 0 }, 'still backing off');
  await clock.advance(1000);
  q.flush();
  t.same(q.sizes.active, 1);
  const again = (await q.pop())!;
  t.equal(again.attempts, 1);
  q.requeue(again, true);
  q.moveAllToActiveOrBackoff();
  await clock.advance(1999);
  q.flush();
  t.same(q.sizes.backoff, 1, 'second backoff is 2 s');
  await clock.advance(1);
  q.flush();
  t.same(q.sizes.active, 1);
});

t.test('a change during the attempt sends a failure to backoff, not unschedulable', async (t) => {
  const clock = new ManualClock();
  const q = new SchedulingQueue({ clock });
  q.add('p');
  const p = (await q.pop())!;
  q.moveAllToActiveOrBackoff();
  q.requeue(p, true);
  t.same(q.sizes, { active: 0, backoff: 1, unschedulable: 0 });
  q.add('u');
  const u = (await q.pop())!;
  q.add('u'); // the pod changed while being tried
  q.requeue(u, true);
  t.same(q.sizes.backoff, 2);
});

t.test('long-unschedulable pods are retried by the safety net', async (t) => {
  const clock = new ManualClock();
  const q = new SchedulingQueue({ clock, maxUnschedulableMs: 60_000 });
  q.add('p');
  q.requeue((await q.pop())!, true);
  await clock.advance(60_000);
  q.flush();
  t.same(q.sizes.active, 1);
});

t.test('cache: assume, confirm, forget, expire', async (t) => {
  const cache = new SchedulerCache(30_000);
  cache.setNode(makeNode('n', { cpu: '1' }));
  const pod = makePod('p', { cpu: '600m' });
  cache.assume(pod, 'n');
  t.equal(cache.getNode('n')?.requested.cpu, 600);
  t.ok(cache.isAssumed('default/p'));
  cache.forget('default/p');
  t.equal(cache.getNode('n')?.requested.cpu, 0);
  cache.assume(pod, 'n');
  cache.finishBinding('default/p', 1000);
  cache.addPod({ ...pod, spec: { ...pod.spec, nodeName: 'n' } });
  t.notOk(cache.isAssumed('default/p'), 'confirmed by the watch');
  t.same(cache.expire(1_000_000), []);
  t.equal(cache.getNode('n')?.pods.size, 1);
  const q2 = makePod('q', { cpu: '100m' });
  cache.assume(q2, 'n');
  cache.finishBinding('default/q', 1000);
  t.same(cache.expire(31_000), ['default/q']);
  cache.removePod({ ...pod, spec: { ...pod.spec, nodeName: 'n' } });
  t.equal(cache.getNode('n')?.pods.size, 0);
  cache.removeNode('n');
  t.equal(cache.nodeCount(), 0);
});

t.test('higher priority first, FIFO within a priority', async (t) => {
  const q = new SchedulingQueue({ clock: new ManualClock() });
  q.add('low1', 0); q.add('high1', 100); q.add('low2', 0); q.add('high2', 100); q.add('neg', -5);
  q.delete('low2');
  const order: string[] = [];
  for (let i = 0; i < 4; i++) order.push((await q.pop())!.key);
  t.same(order, ['high1', 'high2', 'low1', 'neg']);
  t.same(q.sizes.active, 0);
});

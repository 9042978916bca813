/**
 * The Scheduler class with an injected binder that fails: the assumption is forgotten, a
 * "Binding rejected" FailedScheduling event is written, and the pod is retried after backoff.
 * Also: an assumed pod counts on its node before the watch reports it bound.
 */
import t from 'tap';
import { loadCoreconfig } from '../../src/client/coreconfig.js';
import { SharedInformerFactory } from '../../src/client/informer-factory.js';
import { RestClient } from '../../src/client/rest-client.js';
import { ApiBinder, type Binder } from '../../src/daemons/scheduler/binder.js';
import { EventRecorder } from '../../src/daemons/scheduler/events.js';
import { Scheduler } from '../../src/daemons/scheduler/scheduler.js';
import type { Pod } from '../../src/daemons/scheduler/types.js';
import { startApiserver } from '../helpers/apiserver.js';
import { createNode, createPod, until, waitBound, waitEvent } from './cluster.js';
import { makeNode, makePod } from './fixtures.js';

const api = await startApiserver();
t.teardown(() => api.stop());
const client = new RestClient({ connection: await loadCoreconfig({ path: api.coreconfigPath }), qps: 0 });
t.teardown(() => client.close());

class FlakyBinder implements Binder {
  failures = 0;
  readonly attempts: string[] = [];
  private readonly real = new ApiBinder(client);
  /** Node -> ms to hold each binding (to observe assumptions). */
  hold = new Map<string, Promise<void>>();
  constructor(private failFirst: number) {}
  async bind(pod: Pod, node: string, signal?: AbortSignal): Promise<void> {
    this.attempts.push(`${pod.metadata?.name}@${node}`);
    if (this.failFirst > 0) { this.failFirst--; this.failures++; throw new Error('injected failure'); }
    await this.hold.get(node);
    await this.real.bind(pod, node, signal);
  }
}

const binder = new FlakyBinder(2);
const events = new EventRecorder({ client, component: 'default-scheduler' });
const stop = new AbortController();
const informers = new SharedInformerFactory({ client, minResyncPeriodMs: 0 });
const scheduler = new Scheduler({ schedulerName: 'default-scheduler', informers, binder, events, initialBackoffMs: 50, maxBackoffMs: 200 });
const running = scheduler.run(stop.signal);
t.teardown(async () => { stop.abort(); await running; await informers.stopped(); await events.drain(); });

t.test('a failed binding is forgotten and retried', async (t) => {
  await createNode(client, makeNode('only', { cpu: '1' }));
  await createPod(client, makePod('retry-me', { cpu: '600m' }));
  t.equal(await waitBound(client, 'retry-me'), 'only');
  t.equal(binder.failures, 2);
  t.same(binder.attempts, ['retry-me@only', 'retry-me@only', 'retry-me@only']);
  const ev = await waitEvent(client, 'retry-me', 'FailedScheduling');
  t.equal(ev.message, 'Binding rejected: injected failure');
  t.equal(ev.count, 2, 'the repeat increments the count of the same event');
  await until('the bound pod in the cache', async () => (scheduler.cache.isAssumed('default/retry-me') ? undefined : true));
  t.equal(scheduler.cache.getNode('only')?.requested.cpu, 600);
});

t.test('assumed pods count before the watch confirms them', async (t) => {
  let release!: () => void;
  binder.hold.set('only', new Promise<void>((r) => { release = r; }));
  await createPod(client, makePod('first', { cpu: '300m' }));
  await until('first to be assumed', async () => (scheduler.cache.isAssumed('default/first') ? true : undefined));
  await createPod(client, makePod('second', { cpu: '300m' }));
  const ev = await waitEvent(client, 'second', 'FailedScheduling');
  t.equal(ev.message, '0/1 nodes are available: 1 Insufficient cpu.', '600m + 300m assumed leaves no room for 300m more');
  release();
  t.equal(await waitBound(client, 'first'), 'only');
});

/**
 * Two scheduler instances with leader election: only the leader schedules; when it stops it
 * releases the lock and the other one takes over.
 */
import t from 'tap';
import { pino } from 'pino';
import { loadCoreconfig } from '../../src/client/coreconfig.js';
import { RestClient } from '../../src/client/rest-client.js';
import { LEADER_LOCK, run } from '../../src/daemons/scheduler/main.js';
import type { Scheduler } from '../../src/daemons/scheduler/scheduler.js';
import { parseSchedulerArgs } from '../../src/flags/scheduler.js';
import { startApiserver } from '../helpers/apiserver.js';
import { createNode, createPod, until, waitBound } from './cluster.js';
import { makeNode, makePod } from './fixtures.js';

const api = await startApiserver();
t.teardown(() => api.stop());
const client = new RestClient({ connection: await loadCoreconfig({ path: api.coreconfigPath }), qps: 0 });
t.teardown(() => client.close());
const LEASES = { group: 'coordination.k8s.io', version: 'v1', resource: 'leases', namespace: LEADER_LOCK.namespace };

const { config } = parseSchedulerArgs([
  `--coreconfig=${api.coreconfigPath}`, '--port=0', '--leader-elect-resource-lock=leases',
  '--leader-elect-lease-duration=3s', '--leader-elect-renew-deadline=2s', '--leader-elect-retry-period=500ms',
]);

interface Instance { stop: AbortController; done: Promise<number>; scheduler?: Scheduler }
function start(): Instance {
  const inst: Instance = { stop: new AbortController(), done: Promise.resolve(0) };
  inst.done = run(config, { log: pino({ level: 'silent' }), signal: inst.stop.signal, onScheduler: (s) => { inst.scheduler = s; } });
  return inst;
}

const holder = async (): Promise<string> => {
  try { return String(((await client.get(LEASES, LEADER_LOCK.name)).spec as { holderIdentity?: string }).holderIdentity ?? ''); } catch { return ''; }
};

t.test('only the leader schedules; the standby takes over after a clean stop', async (t) => {
  await createNode(client, makeNode('n1'));
  const a = start();
  t.teardown(async () => { a.stop.abort(); await a.done; });
  await until('a leader', async () => (a.scheduler ? true : undefined));
  const first = await holder();
  const b = start();
  t.teardown(async () => { b.stop.abort(); await b.done; });
  await createPod(client, makePod('one'));
  t.equal(await waitBound(client, 'one'), 'n1');
  t.notOk(b.scheduler, 'the standby did not start scheduling');
  t.equal(await holder(), first);

  a.stop.abort();
  t.equal(await a.done, 0);
  await until('the standby to lead', async () => (b.scheduler ? true : undefined), 10_000);
  t.not(await holder(), first);
  await createPod(client, makePod('two'));
  t.equal(await waitBound(client, 'two'), 'n1');
});

/**
 * The cron job controller against a real API server. Each case runs its own controller with a
 * ManualClock: the test moves the clock past the next minute instead of waiting for it. No job
 * controller runs here, so Jobs finish only when the test writes their status conditions.
 */
import { setMaxListeners } from 'node:events';
import t, { type Test } from 'tap';
import { pino } from 'pino';
import type { KubeObject } from '../../src/api/resources/types.js';
import { ManualClock } from '../../src/client/clock.js';
import { loadCoreconfig, type ClientConnection } from '../../src/client/coreconfig.js';
import { SharedInformerFactory } from '../../src/client/informer-factory.js';
import { RestClient, type ResourceRef } from '../../src/client/rest-client.js';
import { parseControllerManagerArgs } from '../../src/flags/controller-manager.js';
import { enabledControllers, IMPLEMENTED } from '../../src/daemons/controller-manager/controller-registry.js';
import { CronJobController } from '../../src/daemons/controller-manager/controllers/cronjob.js';
import { formatInZone } from '../../src/api/resources/batch/cron-schedule.js';
import { newEventRecorder } from '../../src/daemons/controller-manager/events.js';
import { startApiserver } from '../helpers/apiserver.js';
import { waitFor } from './fixtures/controller-harness.js';

const CRONJOBS: ResourceRef = { group: 'batch', version: 'v1', resource: 'cronjobs', namespace: 'default' };
const JOBS: ResourceRef = { group: 'batch', version: 'v1', resource: 'jobs', namespace: 'default' };
const EVENTS: ResourceRef = { group: '', version: 'v1', resource: 'events', namespace: 'default' };
const MINUTE = 60_000;
const log = pino({ level: process.env['CM_TEST_LOG'] ? 'debug' : 'silent' });

type Dict = Record<string, unknown>;
const status = (o: KubeObject): Dict => (o.status ?? {}) as Dict;
const time = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

function cronJob(name: string, extra: Dict = {}): KubeObject {
  return {
    apiVersion: 'batch/v1', kind: 'CronJob', metadata: { name },
    spec: {
      schedule: '* * * * *', ...extra,
      jobTemplate: {
        metadata: { labels: { app: name }, annotations: { team: 'blue' } },
        spec: { parallelism: 1, template: { spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'busybox:1' }] } } },
      },
    },
  };
}

t.test('the cronjob controller is registered and on by default', async (t) => {
  t.ok(IMPLEMENTED.cronjob, 'implemented');
  t.ok(enabledControllers(['*']).includes('cronjob'), 'enabled by "*"');
});

t.test('cron job controller against a real API server', async (t) => {
  const api = await startApiserver();
  const connection: ClientConnection = await loadCoreconfig({ path: api.coreconfigPath });
  const client = new RestClient({ connection, qps: 0, contentType: 'application/json' });
  const config = parseControllerManagerArgs([`--coreconfig=${api.coreconfigPath}`]).config;
  t.teardown(async () => { client.close(); await api.stop(); });

  /** Runs a controller whose clock starts at `start` (default: now) until the case ends. */
  function startController(t: Test, start = Date.now()): ManualClock {
    const clock = new ManualClock(start);
    const ctlClient = new RestClient({ connection, qps: 0 });
    const informers = new SharedInformerFactory({ client: ctlClient, minResyncPeriodMs: 0 });
    const ac = new AbortController();
    setMaxListeners(0, ac.signal);
    const ctl = new CronJobController({ clock, defaultTimeZone: 'UTC' });
    const done = ctl.run({ client: ctlClient, informers, config, log, signal: ac.signal, events: (c) => newEventRecorder(ctlClient, c, log) });
    t.teardown(async () => { ac.abort(); await done.catch(() => undefined); await informers.stopped(); ctlClient.close(); });
    return clock;
  }
  const advanceTo = (clock: ManualClock, ms: number): Promise<void> => clock.advance(Math.max(0, ms - clock.now()));

  /** Creates the cron job; `first` is its first fire time of `* * * * *` (the minute after creation). */
  async function create(name: string, extra: Dict = {}): Promise<{ cj: KubeObject; first: number }> {
    const cj = await client.create(CRONJOBS, cronJob(name, extra));
    const created = Date.parse(cj.metadata?.creationTimestamp ?? '');
    return { cj, first: (Math.floor(created / MINUTE) + 1) * MINUTE };
  }
  const jobNameAt = (name: string, ms: number): string => `${name}-${ms / MINUTE}`;
  async function jobsOf(name: string): Promise<KubeObject[]> {
    const l = await client.list(JOBS, { labelSelector: `app=${name}` });
    return l.items.filter((j) => !j.metadata?.deletionTimestamp).sort((a, b) => (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''));
  }
  const jobNames = async (name: string): Promise<string[]> => (await jobsOf(name)).map((j) => j.metadata?.name ?? '');
  async function events(name: string, reason: string): Promise<KubeObject[]> {
    const l = await client.list(EVENTS, { fieldSelector: `involvedObject.name=${name}` });
    return l.items.filter((e) => e.reason === reason);
  }
  const waitEvent = (name: string, reason: string): Promise<KubeObject[]> => waitFor(`${reason} event`, async () => { const l = await events(name, reason); return l.length > 0 && l; });
  /** Writes the Job's finished condition through jobs/status (no job controller runs here). */
  async function finish(jobName: string, as: 'Complete' | 'Failed', startMs: number, doneMs: number): Promise<void> {
    await client.patch(JOBS, jobName, 'merge', {
      status: {
        startTime: time(startMs), ...(as === 'Complete' ? { completionTime: time(doneMs), succeeded: 1 } : { failed: 1 }),
        conditions: [{ type: as, status: 'True', lastProbeTime: time(doneMs), lastTransitionTime: time(doneMs) }],
      },
    }, { subresource: 'status' });
  }
  const activeNames = (cj: KubeObject): string[] => ((status(cj).active ?? []) as Array<{ name: string }>).map((r) => r.name).sort();

  await t.test('a due time starts its job from the template and records it in the status', async (t) => {
    const clock = startController(t);
    const { cj, first } = await create('hello');
    await advanceTo(clock, first + 1000);
    const name1 = jobNameAt('hello', first);
    const job = await waitFor('the first job', async () => (await jobsOf('hello')).find((j) => j.metadata?.name === name1));
    t.same(job.metadata?.ownerReferences, [{ apiVersion: 'batch/v1', kind: 'CronJob', name: 'hello', uid: cj.metadata?.uid, controller: true, blockOwnerDeletion: true }]);
    t.equal(job.metadata?.annotations?.['batch.kubernetes.io/cronjob-scheduled-timestamp'], time(first), 'scheduled time, RFC 3339 in UTC');
    t.equal(job.metadata?.annotations?.team, 'blue', 'template annotations');
    t.equal(job.metadata?.labels?.app, 'hello', 'template labels');
    t.match(job.spec, { parallelism: 1, template: { spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'busybox:1' }] } } }, 'template spec');

    const st = await waitFor('status', async () => { const x = await client.get(CRONJOBS, 'hello'); return status(x).lastScheduleTime !== undefined && x; });
    t.equal(status(st).lastScheduleTime, time(first));
    t.same(status(st).active, [{ apiVersion: 'batch/v1', kind: 'Job', name: name1, namespace: 'default', uid: job.metadata?.uid, resourceVersion: job.metadata?.resourceVersion }]);
    const [created] = await waitEvent('hello', 'SuccessfulCreate');
    t.match(created, { type: 'Normal', message: `Created job ${name1}`, source: { component: 'cronjob-controller' } });

    // Allow: the next minute runs alongside.
    await advanceTo(clock, first + MINUTE + 1000);
    const name2 = jobNameAt('hello', first + MINUTE);
    await waitFor('a second job', async () => (await jobNames('hello')).includes(name2));
    const both = await waitFor('two active', async () => { const x = await client.get(CRONJOBS, 'hello'); return activeNames(x).length === 2 && x; });
    t.same(activeNames(both), [name1, name2]);
    t.equal(status(both).lastScheduleTime, time(first + MINUTE));

    // A finished job leaves status.active; its completion is the last success.
    await finish(name1, 'Complete', first + 2000, first + 30_000);
    const after = await waitFor('first job done', async () => { const x = await client.get(CRONJOBS, 'hello'); return activeNames(x).length === 1 && x; });
    t.same(activeNames(after), [name2]);
    t.equal(status(after).lastSuccessfulTime, time(first + 30_000));
    t.match((await waitEvent('hello', 'SawCompletedJob'))[0], { type: 'Normal', message: new RegExp(`${name1}.*Complete`) });
  });

  await t.test('Forbid skips a run while the previous job is active', async (t) => {
    const clock = startController(t);
    const { first } = await create('forbid', { concurrencyPolicy: 'Forbid' });
    await advanceTo(clock, first + 1000);
    const name1 = jobNameAt('forbid', first);
    await waitFor('the first job', async () => (await jobNames('forbid')).includes(name1));
    await waitFor('recorded', async () => activeNames(await client.get(CRONJOBS, 'forbid')).length === 1);
    await advanceTo(clock, first + MINUTE + 1000);
    t.match((await waitEvent('forbid', 'JobAlreadyActive'))[0], { type: 'Normal' });
    t.same(await jobNames('forbid'), [name1], 'no second job');
    // Once it finishes, the missed run starts (no startingDeadlineSeconds).
    await finish(name1, 'Complete', first + 1000, first + MINUTE + 5000);
    const name2 = jobNameAt('forbid', first + MINUTE);
    await waitFor('the skipped run', async () => (await jobNames('forbid')).includes(name2));
    const st = await waitFor('status', async () => { const x = await client.get(CRONJOBS, 'forbid'); return activeNames(x).join() === name2 && x; });
    t.equal(status(st).lastScheduleTime, time(first + MINUTE));
  });

  await t.test('Replace deletes the active job and starts the new one', async (t) => {
    const clock = startController(t);
    const { first } = await create('replace', { concurrencyPolicy: 'Replace' });
    await advanceTo(clock, first + 1000);
    const name1 = jobNameAt('replace', first);
    await waitFor('the first job', async () => (await jobNames('replace')).includes(name1));
    await waitFor('recorded', async () => activeNames(await client.get(CRONJOBS, 'replace')).length === 1);
    await advanceTo(clock, first + MINUTE + 1000);
    const name2 = jobNameAt('replace', first + MINUTE);
    await waitFor('replaced', async () => (await jobNames('replace')).join() === name2);
    await waitFor('status', async () => activeNames(await client.get(CRONJOBS, 'replace')).join() === name2);
    t.match((await waitEvent('replace', 'SuccessfulDelete'))[0], { message: `Deleted job ${name1}` });
  });

  await t.test('a suspended cron job starts nothing; resumed, it starts the most recent missed time', async (t) => {
    const clock = startController(t);
    const { first } = await create('paused', { suspend: true });
    await advanceTo(clock, first + 1000);
    await advanceTo(clock, first + 2 * MINUTE + 1000);
    await new Promise((r) => setTimeout(r, 300));
    t.same(await jobNames('paused'), [], 'nothing while suspended');
    await client.patch(CRONJOBS, 'paused', 'merge', { spec: { suspend: false } });
    const latest = jobNameAt('paused', first + 2 * MINUTE);
    await waitFor('the resumed run', async () => (await jobNames('paused')).length === 1);
    t.same(await jobNames('paused'), [latest], 'only the most recent missed time');
  });

  await t.test('history limits delete the oldest finished jobs', async (t) => {
    const clock = startController(t);
    const { first } = await create('hist', { successfulJobsHistoryLimit: 2, failedJobsHistoryLimit: 1 });
    const names: string[] = [];
    for (let i = 0; i < 5; i++) {
      await advanceTo(clock, first + i * MINUTE + 1000);
      names.push(jobNameAt('hist', first + i * MINUTE));
      await waitFor(`job ${i + 1}`, async () => (await jobNames('hist')).length === i + 1);
    }
    await waitFor('5 active', async () => activeNames(await client.get(CRONJOBS, 'hist')).length === 5);
    const start = (i: number): number => first + i * MINUTE + 2000;
    await finish(names[0], 'Complete', start(0), start(0) + 10_000);
    await finish(names[1], 'Complete', start(1), start(1) + 10_000);
    await finish(names[2], 'Complete', start(2), start(2) + 10_000);
    await finish(names[3], 'Failed', start(3), start(3) + 10_000);
    await finish(names[4], 'Failed', start(4), start(4) + 10_000);
    await waitFor('trimmed history', async () => (await jobNames('hist')).join() === [names[1], names[2], names[4]].join());
    const st = await waitFor('status', async () => { const x = await client.get(CRONJOBS, 'hist'); return activeNames(x).length === 0 && x; });
    t.equal(status(st).lastSuccessfulTime, time(start(2) + 10_000), 'latest success');
    t.notOk(status(st).active, 'no active list left');
  });

  await t.test('startingDeadlineSeconds skips a late start; spec.timeZone shows in the scheduled-time annotation', async (t) => {
    const { first } = await create('tokyo', { timeZone: 'Asia/Tokyo', startingDeadlineSeconds: 10 });
    // The controller comes up 30 s after the first fire time: past its 10 s deadline.
    const clock = startController(t, first + 30_000);
    t.match((await waitEvent('tokyo', 'MissSchedule'))[0], { type: 'Warning' });
    t.same(await jobNames('tokyo'), [], 'not started late');
    await advanceTo(clock, first + MINUTE + 1000);
    const name = jobNameAt('tokyo', first + MINUTE);
    const job = await waitFor('the next run', async () => (await jobsOf('tokyo')).find((j) => j.metadata?.name === name));
    const stamp = job.metadata?.annotations?.['batch.kubernetes.io/cronjob-scheduled-timestamp'] ?? '';
    t.equal(stamp, formatInZone(first + MINUTE, 'Asia/Tokyo'));
    t.match(stamp, /\+09:00$/);
    t.equal(Date.parse(stamp), first + MINUTE, 'the same instant');
  });

  await t.test('a schedule or time zone the controller could not run is refused by the API server', async (t) => {
    // The controller's UnparseableSchedule / UnknownTimeZone events are left for objects stored
    // before validation used the same parser; the parser's refusals are covered in
    // cronjob-schedule.test.ts.
    for (const [name, spec] of [['badsched', { schedule: '@fortnightly' }], ['badzone', { timeZone: 'Mars/Olympus_Mons' }]] as const) {
      try {
        await create(name, spec);
        t.fail(`${name} was accepted`);
      } catch (e) {
        t.equal((e as { code?: number }).code, 422, `${name}: 422`);
      }
    }
  });
});

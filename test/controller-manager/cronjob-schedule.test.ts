import t from 'tap';
import type { KubeObject } from '../../src/api/resources/types.js';
import {
  jobFromTemplate, jobName, jobsBeyondHistory, observeJobs, SCHEDULED_TIMESTAMP_ANNOTATION, statusOf,
} from '../../src/daemons/controller-manager/controllers/cronjob/jobs.js';
import {
  formatInZone, hasZonePrefix, isValidTimeZone, parseGoDuration, parseSchedule, type Schedule,
} from '../../src/api/resources/batch/cron-schedule.js';
import { dueTime, NEXT_SCHEDULE_MARGIN_MS, nextSyncAt, TOO_MANY_MISSED } from '../../src/daemons/controller-manager/controllers/cronjob/timing.js';

const SCHEDULE_ERROR = { name: 'ScheduleError' };
const at = (iso: string): number => Date.parse(iso);
const iso = (ms: number | undefined): string | undefined => (ms === undefined ? undefined : new Date(ms).toISOString());

/** The first `n` fire times after `from` (anchor = from). */
function fires(s: Schedule, from: string, n: number): string[] {
  const out: string[] = [];
  const anchor = at(from);
  for (let x = s.next(anchor, anchor); x !== undefined && out.length < n; x = s.next(x, anchor)) out.push(new Date(x).toISOString());
  return out;
}

t.test('five-field schedules in UTC', async (t) => {
  const every = parseSchedule('* * * * *', 'UTC');
  t.same(fires(every, '2024-01-01T00:00:30.500Z', 2), ['2024-01-01T00:01:00.000Z', '2024-01-01T00:02:00.000Z'], 'next is strictly after');
  t.equal(iso(every.next(at('2024-01-01T00:05:00Z'), 0)), '2024-01-01T00:06:00.000Z');
  t.equal(iso(every.latest(at('2024-01-01T00:05:00Z'), 0)), '2024-01-01T00:05:00.000Z', 'latest includes its own instant');
  t.equal(iso(every.latest(at('2024-01-01T00:05:59.999Z'), 0)), '2024-01-01T00:05:00.000Z');
  t.equal(every.latest(at('2024-01-01T00:05:30Z'), at('2024-01-01T00:05:00Z')), undefined, 'nothing after the anchor');

  const office = parseSchedule('*/15 9-17 * * MON-FRI', 'UTC');
  t.same(fires(office, '2024-01-05T17:40:00Z', 2), ['2024-01-05T17:45:00.000Z', '2024-01-08T09:00:00.000Z'], 'Friday evening -> Monday morning');
  t.same(fires(parseSchedule('0 0 * jan-mar sun', 'UTC'), '2024-03-25T00:00:00Z', 2), ['2024-03-31T00:00:00.000Z', '2025-01-05T00:00:00.000Z'], 'names in any case');
  t.same(fires(parseSchedule('5/20 * * * *', 'UTC'), '2024-01-01T00:00:00Z', 3), ['2024-01-01T00:05:00.000Z', '2024-01-01T00:25:00.000Z', '2024-01-01T00:45:00.000Z'], 'start/step');
  t.same(fires(parseSchedule('0 0 ? * 1', 'UTC'), '2024-01-01T00:00:00Z', 1), ['2024-01-08T00:00:00.000Z'], '? is any');
  t.same(fires(parseSchedule('0 0 29 2 *', 'UTC'), '2024-03-01T00:00:00Z', 1), ['2028-02-29T00:00:00.000Z'], 'leap days');
});

t.test('day-of-month and day-of-week combine as in classic cron', async (t) => {
  // Both restricted: either matches (the 13th, and every Friday).
  t.same(fires(parseSchedule('0 0 13 * 5', 'UTC'), '2024-01-01T00:00:00Z', 4),
    ['2024-01-05T00:00:00.000Z', '2024-01-12T00:00:00.000Z', '2024-01-13T00:00:00.000Z', '2024-01-19T00:00:00.000Z']);
  // A day field starting with * : both must match (odd days that are Mondays).
  t.same(fires(parseSchedule('0 0 */2 * 1', 'UTC'), '2024-01-01T00:00:00Z', 3),
    ['2024-01-15T00:00:00.000Z', '2024-01-29T00:00:00.000Z', '2024-02-05T00:00:00.000Z']);
  const s = parseSchedule('0 0 */2 * 1', 'UTC');
  t.equal(iso(s.latest(at('2024-01-28T00:00:00Z'), 0)), '2024-01-15T00:00:00.000Z', 'latest applies the same rule');
  t.same(fires(parseSchedule('0 0 * * 1', 'UTC'), '2024-01-01T00:00:00Z', 2), ['2024-01-08T00:00:00.000Z', '2024-01-15T00:00:00.000Z'], 'day of month * : weekday only');
});

t.test('macros', async (t) => {
  const from = '2024-05-15T10:30:00Z';
  const first = (s: string): string | undefined => fires(parseSchedule(s, 'UTC'), from, 1)[0];
  t.equal(first('@hourly'), '2024-05-15T11:00:00.000Z');
  t.equal(first('@daily'), '2024-05-16T00:00:00.000Z');
  t.equal(first('@midnight'), '2024-05-16T00:00:00.000Z');
  t.equal(first('@weekly'), '2024-05-19T00:00:00.000Z', 'Sunday');
  t.equal(first('@monthly'), '2024-06-01T00:00:00.000Z');
  t.equal(first('@yearly'), '2025-01-01T00:00:00.000Z');
  t.equal(first('@annually'), '2025-01-01T00:00:00.000Z');

  const e = parseSchedule('@every 1h30m', 'UTC');
  const anchor = at('2024-05-15T10:17:23.400Z');
  t.equal(iso(e.next(anchor, anchor)), '2024-05-15T11:47:23.000Z', 'every: from the anchor, whole seconds');
  t.equal(iso(e.next(at('2024-05-15T14:00:00Z'), anchor)), '2024-05-15T14:47:23.000Z', 'every: stays on the anchor\'s chain');
  t.equal(iso(e.latest(at('2024-05-15T14:00:00Z'), anchor)), '2024-05-15T13:17:23.000Z');
  t.equal(e.latest(at('2024-05-15T11:00:00Z'), anchor), undefined, 'every: nothing before the first interval ends');
  const tiny = parseSchedule('@every 300ms', 'UTC');
  t.equal(tiny.next(0, 0), 1000, 'every: at least a second');
  t.equal(parseGoDuration('1.5h'), 5_400_000);
  t.equal(parseGoDuration('2m30s'), 150_000);
  t.equal(parseGoDuration('0'), 0);
  t.throws(() => parseGoDuration('5'), SCHEDULE_ERROR, 'a number without unit');
  t.throws(() => parseGoDuration('1d'), SCHEDULE_ERROR, 'no day unit in Go');
});

t.test('what the standard parser rejects is rejected', async (t) => {
  for (const bad of ['* * * *', '0 * * * * *', '@bogus', '@every', '@every 1x', 'L * * * *', '0 0 L * *', '0 0 * * 1#2', 'H * * * *',
    '0 0 * * 7', '61 * * * *', '*/0 * * * *', '5-1 * * * *', '0 0 30 2 *', '0 0 * FOO *', '0 0 * * MONDAY', 'a b c d e']) {
    t.throws(() => parseSchedule(bad, 'UTC'), SCHEDULE_ERROR, bad);
  }
  t.throws(() => parseSchedule('* * * * *', 'Not/AZone'), SCHEDULE_ERROR, 'unknown zone');
});

t.test('time zones', async (t) => {
  t.ok(isValidTimeZone('Asia/Tokyo'));
  t.ok(isValidTimeZone('UTC'));
  t.notOk(isValidTimeZone(''), 'empty');
  t.notOk(isValidTimeZone('Local'), 'Local');
  t.notOk(isValidTimeZone('+09:00'), 'offsets are no zone names');
  t.notOk(isValidTimeZone('Mars/Olympus'));

  // Tokyo has no DST: 09:00 local is always 00:00Z.
  const tokyo = parseSchedule('0 9 * * *', 'Asia/Tokyo');
  t.same(fires(tokyo, '2024-03-09T12:00:00Z', 3), ['2024-03-10T00:00:00.000Z', '2024-03-11T00:00:00.000Z', '2024-03-12T00:00:00.000Z']);
  t.equal(formatInZone(at('2024-03-10T00:00:00Z'), 'Asia/Tokyo'), '2024-03-10T09:00:00+09:00');
  // New York moves from -05:00 to -04:00 on 2024-03-10.
  const ny = parseSchedule('0 9 * * *', 'America/New_York');
  t.same(fires(ny, '2024-03-09T12:00:00Z', 2), ['2024-03-09T14:00:00.000Z', '2024-03-10T13:00:00.000Z']);
  t.equal(formatInZone(at('2024-03-09T14:00:00Z'), 'America/New_York'), '2024-03-09T09:00:00-05:00');
  t.equal(formatInZone(at('2024-03-10T13:00:00Z'), 'America/New_York'), '2024-03-10T09:00:00-04:00');
  t.equal(formatInZone(at('2024-01-10T13:00:00.750Z'), 'UTC'), '2024-01-10T13:00:00Z', 'offset 0 is Z');
  t.equal(formatInZone(at('2024-01-10T13:00:00Z'), 'Europe/London'), '2024-01-10T13:00:00Z', 'a zone at offset 0 too');
  t.equal(formatInZone(at('2024-07-01T00:00:00Z'), 'Asia/Kolkata'), '2024-07-01T05:30:00+05:30');

  t.ok(hasZonePrefix('TZ=Asia/Tokyo 0 9 * * *'));
  t.ok(hasZonePrefix('CRON_TZ=UTC * * * * *'));
  t.notOk(hasZonePrefix('0 9 * * *'));
  const prefixed = parseSchedule('CRON_TZ=Asia/Tokyo 0 9 * * *', 'UTC');
  t.same(fires(prefixed, '2024-03-09T12:00:00Z', 1), ['2024-03-10T00:00:00.000Z'], 'a TZ= prefix overrides the zone');
  t.same(fires(parseSchedule('TZ=Asia/Tokyo @daily', 'UTC'), '2024-03-09T12:00:00Z', 1), ['2024-03-09T15:00:00.000Z'], 'also before a macro');
});

t.test('which fire time is due', async (t) => {
  const minutely = parseSchedule('* * * * *', 'UTC');
  const earliest = at('2024-01-01T00:00:10Z');
  t.same(dueTime(minutely, { earliest, now: at('2024-01-01T00:00:50Z') }), { missed: 0 }, 'nothing yet');
  t.same(dueTime(minutely, { earliest, now: at('2024-01-01T00:01:00Z') }), { scheduled: at('2024-01-01T00:01:00Z'), missed: 1 }, 'due at its own instant');
  t.same(dueTime(minutely, { earliest, now: at('2024-01-01T00:05:30Z') }), { scheduled: at('2024-01-01T00:05:00Z'), missed: 5 }, 'only the most recent of several');
  const many = dueTime(minutely, { earliest, now: at('2024-01-01T05:00:30Z') });
  t.equal(many.missed, TOO_MANY_MISSED + 1, 'counting stops past the limit');
  t.equal(iso(many.scheduled), '2024-01-01T05:00:00.000Z', 'too many missed still starts the most recent');
  const year = dueTime(minutely, { earliest, now: at('2025-01-01T00:00:30Z') });
  t.equal(iso(year.scheduled), '2025-01-01T00:00:00.000Z', 'a year of misses is cheap');

  // startingDeadlineSeconds: only fire times after now - deadline count.
  const fifteen = parseSchedule('*/15 * * * *', 'UTC');
  const from = at('2024-01-01T00:00:00Z');
  t.same(dueTime(fifteen, { earliest: from, now: at('2024-01-01T00:16:00Z'), startingDeadlineSeconds: 30 }), { missed: 0, skipped: at('2024-01-01T00:15:00Z') }, 'outside the window: skipped');
  t.same(dueTime(fifteen, { earliest: from, now: at('2024-01-01T00:16:00Z'), startingDeadlineSeconds: 61 }), { scheduled: at('2024-01-01T00:15:00Z'), missed: 1 }, 'inside the window: due');
  const windowed = dueTime(minutely, { earliest, now: at('2024-01-01T05:00:30Z'), startingDeadlineSeconds: 600 });
  t.same(windowed, { scheduled: at('2024-01-01T05:00:00Z'), missed: 10 }, 'misses counted within the window only');

  // @every chains from the last schedule time.
  const every = parseSchedule('@every 10m', 'UTC');
  t.same(dueTime(every, { earliest: at('2024-01-01T00:03:00Z'), now: at('2024-01-01T00:35:00Z') }), { scheduled: at('2024-01-01T00:33:00Z'), missed: 3 });

  t.equal(nextSyncAt(minutely, earliest, at('2024-01-01T00:05:30Z')), at('2024-01-01T00:06:00Z') + NEXT_SCHEDULE_MARGIN_MS);
  t.equal(nextSyncAt(every, at('2024-01-01T00:03:00Z'), at('2024-01-01T00:35:00Z')), at('2024-01-01T00:43:00Z') + NEXT_SCHEDULE_MARGIN_MS);
});

function job(name: string, opts: { uid?: string; finished?: 'Complete' | 'Failed'; start?: string; done?: string; deleting?: boolean } = {}): KubeObject {
  const conditions = opts.finished ? [{ type: opts.finished, status: 'True' }] : [];
  return {
    metadata: {
      name, namespace: 'ns', uid: opts.uid ?? name, resourceVersion: '7',
      ownerReferences: [{ apiVersion: 'batch/v1', kind: 'CronJob', name: 'cj', uid: 'cj-uid', controller: true }],
      ...(opts.deleting ? { deletionTimestamp: '2024-01-01T00:00:00Z' } : {}),
    },
    status: { conditions, ...(opts.start ? { startTime: opts.start } : {}), ...(opts.done ? { completionTime: opts.done } : {}) },
  };
}

t.test('jobs of a cron job', async (t) => {
  const scheduled = at('2024-03-10T00:00:00Z');
  t.equal(jobName('report', scheduled), `report-${scheduled / 60_000}`, 'minutes since the epoch');
  t.equal(jobName('report', scheduled + 59_999), jobName('report', scheduled), 'the same minute, the same name');

  const cj: KubeObject = {
    metadata: { name: 'report', namespace: 'ns', uid: 'cj-uid' },
    spec: {
      schedule: '0 9 * * *', timeZone: 'Asia/Tokyo',
      jobTemplate: { metadata: { labels: { app: 'r' }, annotations: { note: 'x' }, finalizers: ['f'] }, spec: { backoffLimit: 2, template: { spec: { containers: [{ name: 'c', image: 'busybox' }] } } } },
    },
  };
  const j = jobFromTemplate(cj, scheduled);
  t.match(j, { apiVersion: 'batch/v1', kind: 'Job', metadata: { name: `report-${scheduled / 60_000}`, namespace: 'ns', labels: { app: 'r' } } });
  t.same(j.metadata?.annotations, { note: 'x', [SCHEDULED_TIMESTAMP_ANNOTATION]: '2024-03-10T09:00:00+09:00' }, 'template annotations plus the scheduled time in the cron job\'s zone');
  t.same(j.metadata?.ownerReferences, [{ apiVersion: 'batch/v1', kind: 'CronJob', name: 'report', uid: 'cj-uid', controller: true, blockOwnerDeletion: true }]);
  t.notOk(j.metadata?.finalizers, 'only labels and annotations come from the template metadata');
  t.same(j.spec, { backoffLimit: 2, template: { spec: { containers: [{ name: 'c', image: 'busybox' }] } } });
  (j.spec as { backoffLimit: number }).backoffLimit = 9;
  t.equal(((cj.spec as { jobTemplate: { spec: { backoffLimit: number } } }).jobTemplate.spec.backoffLimit), 2, 'the spec is a copy');
  const utc = jobFromTemplate({ ...cj, spec: { ...(cj.spec as object), timeZone: undefined } }, scheduled);
  t.equal(utc.metadata?.annotations?.[SCHEDULED_TIMESTAMP_ANNOTATION], '2024-03-10T00:00:00Z', 'UTC without spec.timeZone');
});

t.test('the active list follows the jobs', async (t) => {
  const ref = (name: string): Record<string, string> => ({ apiVersion: 'batch/v1', kind: 'Job', name, namespace: 'ns', uid: name, resourceVersion: '1' });
  const cj: KubeObject = { metadata: { name: 'cj', uid: 'cj-uid' }, status: { active: [ref('a'), ref('b'), ref('gone')], lastSuccessfulTime: '2024-01-01T00:10:00Z' } };
  const jobs = [
    job('a', { finished: 'Complete', done: '2024-01-01T00:20:00Z' }),
    job('b'),
    job('c'),
    job('old', { finished: 'Complete', done: '2024-01-01T00:05:00Z' }),
    job('f', { finished: 'Failed', done: '2024-01-01T00:30:00Z' }),
  ];
  const o = observeJobs(statusOf(cj), jobs);
  t.same(o.status.active.map((r) => r.name), ['b', 'gone'], 'finished jobs leave the list');
  t.same(o.finished.map((f) => [f.job.metadata?.name, f.as]), [['a', 'Complete']], 'only listed jobs are reported finished');
  t.same(o.unexpected.map((j) => j.metadata?.name), ['c'], 'a running job not listed');
  t.same(o.unseen.map((r) => r.name), ['gone'], 'a listed job the cache lacks');
  t.equal(o.status.lastSuccessfulTime, '2024-01-01T00:20:00Z', 'latest completion of a successful job; failures do not count');
  const back = observeJobs({ active: [], lastSuccessfulTime: '2024-02-01T00:00:00Z' }, jobs);
  t.equal(back.status.lastSuccessfulTime, '2024-02-01T00:00:00Z', 'never moves back');
});

t.test('history limits', async (t) => {
  const jobs = [
    job('s3', { finished: 'Complete', start: '2024-01-01T00:03:00Z' }),
    job('s1', { finished: 'Complete', start: '2024-01-01T00:01:00Z' }),
    job('s-nostart', { finished: 'Complete' }),
    job('s2', { finished: 'Complete', start: '2024-01-01T00:02:00Z' }),
    job('s0', { finished: 'Complete', start: '2024-01-01T00:00:00Z', deleting: true }),
    job('f2', { finished: 'Failed', start: '2024-01-01T00:02:00Z' }),
    job('f1b', { finished: 'Failed', start: '2024-01-01T00:01:00Z' }),
    job('f1a', { finished: 'Failed', start: '2024-01-01T00:01:00Z' }),
    job('running', { start: '2024-01-01T00:00:00Z' }),
  ];
  const names = (l: KubeObject[]): Array<string | undefined> => l.map((j) => j.metadata?.name);
  t.same(names(jobsBeyondHistory(jobs, 3, 1)), ['s1', 'f1a', 'f1b'], 'oldest first, by start time then name; no start time counts as newest');
  t.same(names(jobsBeyondHistory(jobs, 0, 0)), ['s1', 's2', 's3', 's-nostart', 'f1a', 'f1b', 'f2'], 'limit 0 keeps none; jobs being deleted and running ones are left alone');
  t.same(names(jobsBeyondHistory(jobs, undefined, undefined)), [], 'no limits keep everything');
});

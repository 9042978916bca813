import t from 'tap';
import type { KubeObject } from '../../src/api/resources/types.js';
import type { ResourceRef } from '../../src/client/rest-client.js';
import { JobController, type JobControllerOptions } from '../../src/daemons/controller-manager/controllers/job.js';
import { formatIndexes, parseIndexes, pendingIndexes, withIndexes } from '../../src/daemons/controller-manager/controllers/job/indexes.js';
import { remainingBackoffMs } from '../../src/daemons/controller-manager/controllers/job/backoff.js';
import { startControllers, waitFor } from './fixtures/controller-harness.js';
import { listPods, startCluster } from './fixtures/cluster.js';

type Dict = Record<string, unknown>;
const PODS: ResourceRef = { group: '', version: 'v1', resource: 'pods', namespace: 'default' };
const JOBS: ResourceRef = { group: 'batch', version: 'v1', resource: 'jobs', namespace: 'default' };
const EVENTS: ResourceRef = { group: '', version: 'v1', resource: 'events', namespace: 'default' };
const FINALIZER = 'batch.kubernetes.io/job-tracking';
const INDEX = 'batch.kubernetes.io/job-completion-index';
/** Replacement delay after a failure in these tests (Kubernetes: 10 s). */
const BACKOFF_MS = 1500;

const status = (o: KubeObject): Dict => (o.status ?? {}) as Dict;
const conditions = (o: KubeObject): Dict[] => (status(o).conditions ?? []) as Dict[];
const condition = (o: KubeObject, type: string): Dict | undefined => conditions(o).find((c) => c.type === type);
const isTrue = (o: KubeObject, type: string): boolean => condition(o, type)?.status === 'True';
const now = (): string => new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');

function job(name: string, spec: Dict = {}): KubeObject {
  return {
    apiVersion: 'batch/v1', kind: 'Job', metadata: { name },
    spec: { ...spec, template: { spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'busybox:1' }] }, ...((spec.template ?? {}) as Dict) } },
  };
}

/** A real API server with the controller running in-process (events recorded). */
function start(opts: JobControllerOptions): ReturnType<typeof startControllers> {
  return startControllers(new JobController(opts), { recordEvents: true });
}

t.test('completion index intervals', async (t) => {
  t.equal(formatIndexes(withIndexes([], [4, 0, 2, 1, 6, 7])), '0-2,4,6,7');
  t.equal(formatIndexes(parseIndexes('0-2,4,6,7', 5)), '0-2,4', 'indexes at or beyond completions are dropped');
  t.equal(formatIndexes(parseIndexes('0,1,x,3-4', 10)), '0,1,3,4', 'malformed parts are ignored; adjacent ones merge');
  t.same(pendingIndexes([], parseIndexes('0-2,5', 8), 3, 8), [3, 4, 6]);
  t.equal(remainingBackoffMs({ key: 'k', failuresAfterLastSuccess: 3, lastFailureMs: 1000 }, 10_000, 360_000, 1000), 40_000, '10 s doubling');
  t.equal(remainingBackoffMs({ key: 'k', failuresAfterLastSuccess: 9, lastFailureMs: 1000 }, 10_000, 360_000, 61_000), 300_000, 'capped at 6 min');
});

t.test('job controller against a real API server', async (t) => {
  const c = await start({ podFailureBackoffMs: BACKOFF_MS });
  t.teardown(() => c.stop());

  const podsOf = async (name: string, all = false): Promise<KubeObject[]> => {
    const l = (await c.client.list(PODS, { labelSelector: `batch.kubernetes.io/job-name=${name}` })).items;
    return (all ? l : l.filter((p) => !p.metadata?.deletionTimestamp)).sort((a, b) => (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''));
  };
  const phaseOf = (p: KubeObject): string => String(status(p).phase ?? '');
  const setPhase = async (p: KubeObject, phase: 'Succeeded' | 'Failed' | 'Running'): Promise<void> => {
    await c.client.patch(PODS, p.metadata?.name ?? '', 'merge', {
      status: { phase, conditions: [{ type: 'Ready', status: phase === 'Running' ? 'True' : 'False', lastTransitionTime: now() }] },
    }, { subresource: 'status' });
  };
  const getJob = (name: string): Promise<KubeObject> => c.client.get(JOBS, name);
  const until = (what: string, name: string, ok: (j: KubeObject) => boolean, ms?: number): Promise<KubeObject> =>
    waitFor(what, async () => { const j = await getJob(name); return ok(j) && j; }, ms);
  const activePods = async (name: string, n: number): Promise<KubeObject[]> =>
    waitFor(`${n} active pods of ${name}`, async () => { const l = (await podsOf(name)).filter((p) => !['Succeeded', 'Failed'].includes(phaseOf(p))); return l.length === n && l; });
  const eventsOf = async (name: string): Promise<KubeObject[]> => (await c.client.list(EVENTS, { fieldSelector: `involvedObject.name=${name}` })).items;

  await t.test('a one-pod job completes and its pod loses the tracking finalizer', async (t) => {
    const created = await c.client.create(JOBS, job('simple'));
    const [pod] = await activePods('simple', 1);
    t.equal(pod.metadata?.generateName, 'simple-');
    t.match(pod.metadata?.ownerReferences, [{ apiVersion: 'batch/v1', kind: 'Job', name: 'simple', uid: created.metadata?.uid, controller: true, blockOwnerDeletion: true }]);
    t.ok(pod.metadata?.finalizers?.includes(FINALIZER), 'created with the tracking finalizer');
    t.match(pod.metadata?.labels, { 'batch.kubernetes.io/controller-uid': created.metadata?.uid, 'job-name': 'simple' });
    const running = await until('active 1 and a start time', 'simple', (j) => status(j).active === 1);
    t.ok(status(running).startTime, 'startTime set');
    await setPhase(pod, 'Succeeded');
    const done = await until('Complete', 'simple', (j) => isTrue(j, 'Complete'));
    t.same(conditions(done).map((x) => x.type), ['SuccessCriteriaMet', 'Complete'], 'SuccessCriteriaMet comes first');
    t.match(condition(done, 'Complete'), { status: 'True', reason: 'CompletionsReached' });
    t.match(status(done), { succeeded: 1 });
    t.notOk(status(done).active, 'no active pods');
    t.ok(status(done).completionTime, 'completionTime set');
    t.notOk((status(done).uncountedTerminatedPods as Dict | undefined)?.succeeded, 'nothing left uncounted');
    const after = await c.client.get(PODS, pod.metadata?.name ?? '');
    t.notOk(after.metadata?.finalizers?.includes(FINALIZER), 'finalizer removed from the counted pod');
    const evs = await waitFor('events', async () => { const l = await eventsOf('simple'); return l.some((e) => e.reason === 'Completed') && l; });
    t.match(evs.find((e) => e.reason === 'SuccessfulCreate'), { type: 'Normal', message: `Created pod: ${pod.metadata?.name}`, source: { component: 'job-controller' } });
    t.match(evs.find((e) => e.reason === 'Completed'), { type: 'Normal', message: 'Job completed' });
  });

  await t.test('parallelism 2, completions 4: two at a time; deleting a counted pod keeps the count', async (t) => {
    await c.client.create(JOBS, job('par', { parallelism: 2, completions: 4 }));
    const first = await activePods('par', 2);
    for (const p of first) await setPhase(p, 'Succeeded');
    const second = await activePods('par', 2);
    t.notOk(second.some((p) => first.some((f) => f.metadata?.uid === p.metadata?.uid)), 'two new pods');
    const mid = await until('succeeded 2', 'par', (j) => status(j).succeeded === 2 && status(j).active === 2);
    t.notOk(isTrue(mid, 'Complete'));
    // The counted pods lost their finalizer: deleting one neither lowers the count nor adds a pod.
    await waitFor('finalizers removed', async () => (await podsOf('par')).filter((p) => phaseOf(p) === 'Succeeded').every((p) => !p.metadata?.finalizers?.length));
    await c.client.delete(PODS, first[0].metadata?.name ?? '', { gracePeriodSeconds: 0 });
    await waitFor('pod gone', async () => (await podsOf('par', true)).length === 3);
    await new Promise((r) => setTimeout(r, 300));
    t.equal((await podsOf('par')).length, 3, 'no replacement created');
    t.match(status(await getJob('par')), { succeeded: 2, active: 2 });
    for (const p of second) await setPhase(p, 'Succeeded');
    const done = await until('Complete', 'par', (j) => isTrue(j, 'Complete'));
    t.match(status(done), { succeeded: 4 });
    t.notOk(status(done).failed, 'no failures');
    t.equal((await podsOf('par', true)).length, 3, 'never more than 4 pods in all');
  });

  await t.test('a work-queue job (no completions) stops adding pods after a success', async (t) => {
    await c.client.create(JOBS, job('queue', { parallelism: 2 }));
    const pods = await activePods('queue', 2);
    await setPhase(pods[0], 'Succeeded');
    await until('succeeded 1', 'queue', (j) => status(j).succeeded === 1 && status(j).active === 1);
    await new Promise((r) => setTimeout(r, 300));
    t.equal((await podsOf('queue')).length, 2, 'no new pod after a success');
    t.notOk(isTrue(await getJob('queue'), 'Complete'), 'not complete while a pod runs');
    await setPhase(pods[1], 'Succeeded');
    const done = await until('Complete', 'queue', (j) => isTrue(j, 'Complete'));
    t.match(status(done), { succeeded: 2 });
  });

  await t.test('backoffLimit 1: replacements wait for the backoff; the second failure fails the job', async (t) => {
    await c.client.create(JOBS, job('flaky', { backoffLimit: 1 }));
    const [p1] = await activePods('flaky', 1);
    const failedAt = Date.now();
    await setPhase(p1, 'Failed');
    const [p2] = await activePods('flaky', 1);
    t.not(p2.metadata?.uid, p1.metadata?.uid, 'a replacement');
    t.ok(Date.now() - failedAt >= BACKOFF_MS - 1100, `the replacement waited (${Date.now() - failedAt} ms)`);
    t.match(status(await getJob('flaky')), { failed: 1 });
    await setPhase(p2, 'Failed');
    const failed = await until('Failed', 'flaky', (j) => isTrue(j, 'Failed'));
    t.same(conditions(failed).map((x) => x.type), ['FailureTarget', 'Failed']);
    t.match(condition(failed, 'Failed'), { status: 'True', reason: 'BackoffLimitExceeded', message: 'Job has reached the specified backoff limit' });
    t.match(status(failed), { failed: 2 });
    t.notOk(status(failed).completionTime, 'a failed job has no completion time');
    await new Promise((r) => setTimeout(r, BACKOFF_MS + 300));
    t.equal((await podsOf('flaky')).length, 2, 'no pod after the job failed');
    const evs = await waitFor('event', async () => { const l = await eventsOf('flaky'); return l.some((e) => e.reason === 'BackoffLimitExceeded') && l; });
    t.match(evs.find((e) => e.reason === 'BackoffLimitExceeded'), { type: 'Warning', message: 'Job has reached the specified backoff limit' });
  });

  await t.test('activeDeadlineSeconds: the job fails with DeadlineExceeded and its pods go', async (t) => {
    await c.client.create(JOBS, job('slow', { parallelism: 2, completions: 2, activeDeadlineSeconds: 1 }));
    const pods = await activePods('slow', 2);
    await setPhase(pods[0], 'Running');
    const failed = await until('Failed', 'slow', (j) => isTrue(j, 'Failed'), 15_000);
    t.match(condition(failed, 'Failed'), { reason: 'DeadlineExceeded', message: 'Job was active longer than specified deadline' });
    t.ok(isTrue(failed, 'FailureTarget'), 'FailureTarget recorded too');
    t.match(status(failed), { failed: 2 });
    t.notOk(status(failed).active, 'no active pods');
    await waitFor('pods deleted', async () => (await podsOf('slow', true)).length === 0);
    const evs = await waitFor('event', async () => { const l = await eventsOf('slow'); return l.some((e) => e.reason === 'DeadlineExceeded') && l; });
    t.match(evs.find((e) => e.reason === 'DeadlineExceeded'), { type: 'Warning' });
  });

  await t.test('suspend and resume', async (t) => {
    await c.client.create(JOBS, job('susp', { parallelism: 2, completions: 2, suspend: true }));
    const s1 = await until('Suspended', 'susp', (j) => isTrue(j, 'Suspended'));
    t.match(condition(s1, 'Suspended'), { reason: 'JobSuspended', message: 'Job suspended' });
    t.notOk(status(s1).startTime, 'no start time while suspended');
    t.equal((await podsOf('susp')).length, 0);
    await c.client.patch(JOBS, 'susp', 'merge', { spec: { suspend: false } });
    await activePods('susp', 2);
    const resumed = await until('resumed', 'susp', (j) => condition(j, 'Suspended')?.status === 'False');
    t.match(condition(resumed, 'Suspended'), { reason: 'JobResumed' });
    t.ok(status(resumed).startTime, 'start time set on resume');
    await c.client.patch(JOBS, 'susp', 'merge', { spec: { suspend: true } });
    await waitFor('pods deleted', async () => (await podsOf('susp', true)).length === 0);
    const s2 = await until('suspended again', 'susp', (j) => isTrue(j, 'Suspended') && !status(j).active);
    t.notOk(status(s2).failed, 'pods removed by suspension are not failures');
  });

  await t.test('Indexed: one pod per index, completedIndexes, a failed index is retried', async (t) => {
    await c.client.create(JOBS, job('idx', { completionMode: 'Indexed', completions: 3, parallelism: 3 }));
    const pods = await activePods('idx', 3);
    const byIndex = new Map(pods.map((p) => [p.metadata?.annotations?.[INDEX], p]));
    t.same([...byIndex.keys()].sort(), ['0', '1', '2']);
    for (const [i, p] of byIndex) {
      t.equal(p.metadata?.labels?.[INDEX], i, 'index label');
      t.equal(p.metadata?.generateName, `idx-${i}-`);
      const spec = p.spec as Dict;
      t.equal(spec.hostname, `idx-${i}`);
      t.match((spec.containers as Dict[])[0].env, [{ name: 'JOB_COMPLETION_INDEX', valueFrom: { fieldRef: { fieldPath: `metadata.labels['${INDEX}']` } } }]);
    }
    await setPhase(byIndex.get('0') as KubeObject, 'Succeeded');
    await setPhase(byIndex.get('2') as KubeObject, 'Succeeded');
    await setPhase(byIndex.get('1') as KubeObject, 'Failed');
    const mid = await until('indexes 0 and 2', 'idx', (j) => status(j).completedIndexes === '0,2' && status(j).failed === 1);
    t.equal(status(mid).succeeded, 2);
    const [again] = await activePods('idx', 1);
    t.equal(again.metadata?.annotations?.[INDEX], '1', 'index 1 gets a new pod');
    await setPhase(again, 'Succeeded');
    const done = await until('Complete', 'idx', (j) => isTrue(j, 'Complete'));
    t.match(status(done), { completedIndexes: '0-2', succeeded: 3, failed: 1 });
  });

  await t.test('orphans are adopted; pods that stop matching are released', async (t) => {
    await c.client.create(PODS, {
      apiVersion: 'v1', kind: 'Pod', metadata: { name: 'stray', labels: { app: 'adopt' } },
      spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'busybox:1' }] },
    });
    const j = await c.client.create(JOBS, job('adopt', {
      manualSelector: true, selector: { matchLabels: { app: 'adopt' } }, template: { metadata: { labels: { app: 'adopt' } } },
    }));
    const adopted = await waitFor('adopted', async () => { const p = await c.client.get(PODS, 'stray'); return (p.metadata?.ownerReferences?.length ?? 0) > 0 && p; });
    t.match(adopted.metadata?.ownerReferences, [{ kind: 'Job', name: 'adopt', uid: j.metadata?.uid, controller: true }]);
    t.ok(adopted.metadata?.finalizers?.includes(FINALIZER), 'adoption adds the tracking finalizer');
    await until('active 1', 'adopt', (x) => status(x).active === 1);
    t.equal((await c.client.list(PODS, { labelSelector: 'app=adopt' })).items.length, 1, 'the orphan counts; nothing created');
    await c.client.patch(PODS, 'stray', 'merge', { metadata: { labels: { app: 'gone' } } });
    const released = await waitFor('released', async () => { const p = await c.client.get(PODS, 'stray'); return !p.metadata?.ownerReferences?.length && p; });
    t.notOk(released.metadata?.finalizers?.includes(FINALIZER), 'released pods lose the finalizer');
    await waitFor('a replacement', async () => (await c.client.list(PODS, { labelSelector: 'app=adopt' })).items.length === 1);
    t.pass('replacement created');
  });

  await t.test('deleting a job frees its pods of the tracking finalizer', async (t) => {
    await c.client.create(JOBS, job('doomed'));
    const [pod] = await activePods('doomed', 1);
    await c.client.delete(JOBS, 'doomed', { propagationPolicy: 'Background' });
    await waitFor('finalizer removed', async () => !(await c.client.get(PODS, pod.metadata?.name ?? '')).metadata?.finalizers?.includes(FINALIZER));
    t.pass('finalizer removed');
  });
});

t.test('the controller manager runs the job controller; the garbage collector removes a deleted job\'s pods', async (t) => {
  const c = await startCluster(['--controllers=job,garbagecollector']);
  t.teardown(() => c.stop());
  await c.client.create(JOBS, job('managed', { parallelism: 2, completions: 3 }));
  const pods = await waitFor('2 pods', async () => { const l = await listPods(c, 'job-name=managed'); return l.length === 2 && l; });
  await c.client.patch(PODS, pods[0].metadata?.name ?? '', 'merge', { status: { phase: 'Succeeded' } }, { subresource: 'status' });
  await waitFor('succeeded 1', async () => status(await c.client.get(JOBS, 'managed')).succeeded === 1);
  await waitFor('2 active pods again', async () => (await listPods(c, 'job-name=managed')).filter((p) => status(p).phase !== 'Succeeded').length === 2);
  // Background, as kubectl sends it (a batch/v1 delete without a policy orphans the pods: below).
  await c.client.delete(JOBS, 'managed', { propagationPolicy: 'Background' });
  // Active pods keep the tracking finalizer until the controller sees their Job gone.
  await waitFor('all pods gone', async () => {
    const left = (await c.client.list(PODS, { labelSelector: 'job-name=managed' })).items;
    if (left.length === 0) return true;
    // Named if the wait runs out: what holds each pod that is left.
    throw new Error(left.map((p) => `${p.metadata?.name}: finalizers ${JSON.stringify(p.metadata?.finalizers ?? [])}, owners ${JSON.stringify((p.metadata?.ownerReferences ?? []).map((r) => r.uid))}, deleting ${!!p.metadata?.deletionTimestamp}`).join('; '));
  }, 30_000);
  t.pass('pods collected');

  // A batch/v1 delete without a policy orphans, as in Kubernetes: the collector drops the
  // pods' references to the Job, then the job controller their tracking finalizer; they stay.
  await c.client.create(JOBS, job('orphaning', { parallelism: 2, completions: 2 }));
  const jobUid = (await c.client.get(JOBS, 'orphaning')).metadata?.uid;
  await waitFor('2 pods', async () => (await listPods(c, 'job-name=orphaning')).length === 2);
  await c.client.delete(JOBS, 'orphaning');
  await waitFor('the job gone', async () => { try { await c.client.get(JOBS, 'orphaning'); return false; } catch { return true; } }, 30_000);
  const orphans = await waitFor('orphaned pods without the finalizer', async () => {
    const l = await listPods(c, 'job-name=orphaning');
    return l.every((p) => !p.metadata?.ownerReferences?.length && !p.metadata?.finalizers?.includes(FINALIZER)) && l;
  }, 30_000);
  t.equal(orphans.length, 2, 'the pods stay');
  t.notOk(orphans.some((p) => p.metadata?.deletionTimestamp), 'and are not being deleted');
  t.notOk(orphans.some((p) => (p.metadata?.ownerReferences ?? []).some((r) => r.uid === jobUid)), 'no reference to the deleted job');
});

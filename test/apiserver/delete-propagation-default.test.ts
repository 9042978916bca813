// A delete that names no propagation policy: Kubernetes' per-version default (its
// DefaultGarbageCollectionPolicy). batch/v1 jobs, v1 replication controllers, batch/v1beta1 cron
// jobs and the extensions/v1beta1 workloads orphan their dependents (the `orphan` finalizer, for
// the garbage collector); every other resource and version leaves them to background
// collection. A policy in the request, or a collector finalizer the object already carries,
// overrides the default; --enable-garbage-collector=false records no policy at all.
import t from 'tap';
import { startApiserver } from '../helpers/apiserver.js';
import { connectClient } from '../helpers/rest-client.js';

type Obj = Record<string, unknown>;

const podSpec = { restartPolicy: 'Never', containers: [{ name: 'c', image: 'busybox:1.36' }] };
const job = (name: string, meta: Obj = {}): Obj => ({
  apiVersion: 'batch/v1', kind: 'Job', metadata: { name, ...meta }, spec: { template: { spec: podSpec } },
});
const rc = (name: string): Obj => ({
  apiVersion: 'v1', kind: 'ReplicationController', metadata: { name },
  spec: { replicas: 0, selector: { app: name }, template: { metadata: { labels: { app: name } }, spec: { containers: podSpec.containers } } },
});
const cronjob = (name: string, apiVersion: string): Obj => ({
  apiVersion, kind: 'CronJob', metadata: { name }, spec: { schedule: '*/5 * * * *', jobTemplate: { spec: { template: { spec: podSpec } } } },
});
const deployment = (name: string, apiVersion: string): Obj => ({
  apiVersion, kind: 'Deployment', metadata: { name },
  spec: { selector: { matchLabels: { app: name } }, template: { metadata: { labels: { app: name } }, spec: { containers: podSpec.containers } } },
});

const a = await startApiserver({ args: ['--runtime-config=extensions/v1beta1=true'] });
const c = await connectClient(a);
t.teardown(async () => { c.close(); await a.stop(); });

const JOBS = '/apis/batch/v1/namespaces/default/jobs';

t.test('batch/v1 jobs: no policy orphans the pods; a policy or orphanDependents=false does not', async (t) => {
  t.equal((await c.request('POST', JOBS, { body: job('j-default') })).status, 201);
  const d = await c.request('DELETE', `${JOBS}/j-default`);
  t.equal(d.status, 200);
  t.same(d.json.metadata.finalizers, ['orphan'], 'the orphan finalizer is recorded for the collector');
  t.ok(d.json.metadata.deletionTimestamp, 'the job is only marked');
  t.equal((await c.request('GET', `${JOBS}/j-default`)).status, 200, 'it stays until the collector has orphaned its pods');

  t.equal((await c.request('POST', JOBS, { body: job('j-bg') })).status, 201);
  t.equal((await c.request('DELETE', `${JOBS}/j-bg`, { body: { kind: 'DeleteOptions', apiVersion: 'v1', propagationPolicy: 'Background' } })).status, 200);
  t.equal((await c.request('GET', `${JOBS}/j-bg`)).status, 404, 'Background (what kubectl sends): gone at once');

  t.equal((await c.request('POST', JOBS, { body: job('j-false') })).status, 201);
  t.equal((await c.request('DELETE', `${JOBS}/j-false?orphanDependents=false`)).status, 200);
  t.equal((await c.request('GET', `${JOBS}/j-false`)).status, 404, 'orphanDependents=false is Background');

  t.equal((await c.request('POST', JOBS, { body: job('j-fg') })).status, 201);
  const fg = await c.request('DELETE', `${JOBS}/j-fg?propagationPolicy=Foreground`);
  t.same(fg.json.metadata.finalizers, ['foregroundDeletion'], 'an explicit policy wins over the default');
});

t.test('a collector finalizer the object already carries overrides the default', async (t) => {
  t.equal((await c.request('POST', JOBS, { body: job('j-carries-fg', { finalizers: ['foregroundDeletion'] }) })).status, 201);
  const d = await c.request('DELETE', `${JOBS}/j-carries-fg`);
  t.same(d.json.metadata.finalizers, ['foregroundDeletion'], 'no orphan finalizer added beside it');
});

t.test('a later delete with a policy replaces the recorded one', async (t) => {
  t.equal((await c.request('POST', JOBS, { body: job('j-change', { finalizers: ['example.com/hold'] }) })).status, 201);
  const first = await c.request('DELETE', `${JOBS}/j-change`);
  t.same(first.json.metadata.finalizers, ['example.com/hold', 'orphan']);
  const second = await c.request('DELETE', `${JOBS}/j-change?propagationPolicy=Background`);
  t.equal(second.status, 200);
  t.same(second.json.metadata.finalizers, ['example.com/hold'], 'Background drops the orphan finalizer; the other one holds the job');
  const third = await c.request('DELETE', `${JOBS}/j-change?propagationPolicy=Foreground`);
  t.same(third.json.metadata.finalizers, ['example.com/hold', 'foregroundDeletion']);
  const again = await c.request('DELETE', `${JOBS}/j-change`);
  t.same(again.json.metadata.finalizers, ['example.com/hold', 'foregroundDeletion'], 'no policy: the recorded one stands');

  t.equal((await c.request('POST', JOBS, { body: job('j-only-orphan') })).status, 201);
  t.same((await c.request('DELETE', `${JOBS}/j-only-orphan`)).json.metadata.finalizers, ['orphan']);
  t.equal((await c.request('DELETE', `${JOBS}/j-only-orphan?propagationPolicy=Background`)).status, 200);
  t.equal((await c.request('GET', `${JOBS}/j-only-orphan`)).status, 404, 'with no finalizer left it goes');
});

t.test('deletecollection of batch/v1 jobs orphans too', async (t) => {
  for (const n of ['coll-1', 'coll-2']) {
    t.equal((await c.request('POST', JOBS, { body: job(n, { labels: { set: 'coll' } }) })).status, 201);
  }
  const r = await c.request('DELETE', `${JOBS}?labelSelector=set%3Dcoll`);
  t.equal(r.status, 200);
  const left = await c.request('GET', `${JOBS}?labelSelector=set%3Dcoll`);
  t.same(left.json.items.map((j: { metadata: Obj }) => j.metadata.finalizers), [['orphan'], ['orphan']]);
});

t.test('v1 replication controllers orphan by default', async (t) => {
  const rcs = '/api/v1/namespaces/default/replicationcontrollers';
  t.equal((await c.request('POST', rcs, { body: rc('rc-default') })).status, 201);
  t.same((await c.request('DELETE', `${rcs}/rc-default`)).json.metadata.finalizers, ['orphan']);
});

t.test('cron jobs: batch/v1beta1 orphans, batch/v1 does not', async (t) => {
  const v1 = '/apis/batch/v1/namespaces/default/cronjobs';
  const beta = '/apis/batch/v1beta1/namespaces/default/cronjobs';
  t.equal((await c.request('POST', v1, { body: cronjob('cj-v1', 'batch/v1') })).status, 201);
  t.equal((await c.request('DELETE', `${v1}/cj-v1`)).status, 200);
  t.equal((await c.request('GET', `${v1}/cj-v1`)).status, 404);
  t.equal((await c.request('POST', beta, { body: cronjob('cj-beta', 'batch/v1beta1') })).status, 201);
  t.same((await c.request('DELETE', `${beta}/cj-beta`)).json.metadata.finalizers, ['orphan']);
});

t.test('deployments: extensions/v1beta1 orphans, apps/v1 does not', async (t) => {
  const apps = '/apis/apps/v1/namespaces/default/deployments';
  const ext = '/apis/extensions/v1beta1/namespaces/default/deployments';
  t.equal((await c.request('POST', apps, { body: deployment('d-apps', 'apps/v1') })).status, 201);
  t.equal((await c.request('DELETE', `${apps}/d-apps`)).status, 200);
  t.equal((await c.request('GET', `${apps}/d-apps`)).status, 404);
  t.equal((await c.request('POST', apps, { body: deployment('d-ext', 'apps/v1') })).status, 201);
  const d = await c.request('DELETE', `${ext}/d-ext`);
  t.equal(d.status, 200);
  t.same(d.json.metadata.finalizers, ['orphan'], 'the same object, deleted through the old version');
  t.same((await c.request('GET', `${apps}/d-ext`)).json.metadata.finalizers, ['orphan']);
});

t.test('--enable-garbage-collector=false: no policy is recorded, whatever is asked', async (t) => {
  const off = await startApiserver({ args: ['--enable-garbage-collector=false'] });
  const oc = await connectClient(off);
  t.teardown(async () => { oc.close(); await off.stop(); });
  t.equal((await oc.request('POST', JOBS, { body: job('j-off') })).status, 201);
  t.equal((await oc.request('DELETE', `${JOBS}/j-off`)).status, 200);
  t.equal((await oc.request('GET', `${JOBS}/j-off`)).status, 404, 'no orphan finalizer: gone at once');
  t.equal((await oc.request('POST', JOBS, { body: job('j-off-orphan') })).status, 201);
  t.equal((await oc.request('DELETE', `${JOBS}/j-off-orphan?propagationPolicy=Orphan`)).status, 200);
  t.equal((await oc.request('GET', `${JOBS}/j-off-orphan`)).status, 404, 'an explicit Orphan is not recorded either');
});

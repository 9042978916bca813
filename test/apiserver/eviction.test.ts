/**
 * pods/eviction against PodDisruptionBudgets through the real API server: the budget's status
 * (which the disruption controller writes; set by hand here) decides, and an allowed eviction
 * charges the budget before the pod goes.
 */
import t from 'tap';
import { startApiserver } from '../helpers/apiserver.js';
import { connectClient } from '../helpers/rest-client.js';

type Obj = Record<string, unknown>;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;

const a = await startApiserver();
const c = await connectClient(a);
t.teardown(async () => { c.close(); await a.stop(); });

const NS = '/api/v1/namespaces/default';
const PDBS = '/apis/policy/v1/namespaces/default/poddisruptionbudgets';

async function pod(name: string, labels: Record<string, string>, phase = 'Running', ready = true): Promise<void> {
  const r = await c.request('POST', `${NS}/pods`, { body: { apiVersion: 'v1', kind: 'Pod', metadata: { name, labels }, spec: { containers: [{ name: 'c', image: 'x' }] } } });
  if (r.status !== 201) throw new Error(`pod ${name}: ${r.status}`);
  const s = await c.request('PATCH', `${NS}/pods/${name}/status`, { raw: JSON.stringify({ status: { phase, conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] } }), contentType: 'application/merge-patch+json' });
  if (s.status !== 200) throw new Error(`pod status ${name}: ${s.status}`);
}

async function budget(name: string, app: string, status?: Obj): Promise<void> {
  const r = await c.request('POST', PDBS, { body: { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name }, spec: { minAvailable: 1, selector: { matchLabels: { app } } } } });
  if (r.status !== 201) throw new Error(`pdb ${name}: ${r.status} ${r.body}`);
  if (status) await setStatus(name, status);
}

async function setStatus(name: string, status: Obj): Promise<void> {
  const cur = await c.request('GET', `${PDBS}/${name}`);
  const s = await c.request('PUT', `${PDBS}/${name}/status`, { body: { ...cur.json, status: { observedGeneration: cur.json.metadata.generation, ...status } } });
  if (s.status !== 200) throw new Error(`pdb status ${name}: ${s.status} ${s.body}`);
}

const evict = (name: string, query = ''): Promise<Any> =>
  c.request('POST', `${NS}/pods/${name}/eviction${query}`, { body: { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name }, deleteOptions: { gracePeriodSeconds: 0 } } });
const exists = async (name: string): Promise<boolean> => (await c.request('GET', `${NS}/pods/${name}`)).status === 200;

t.test('no budget: the pod goes', async (t) => {
  await pod('free', { app: 'free' });
  t.equal((await evict('free')).status, 201);
  t.notOk(await exists('free'));
});

t.test('a budget the controller has not processed yet: 429, the pod stays', async (t) => {
  await pod('fresh-1', { app: 'fresh' });
  await budget('fresh', 'fresh');
  const r = await evict('fresh-1');
  t.equal(r.status, 429);
  t.equal(r.json.reason, 'TooManyRequests');
  t.same(r.json.details.causes, [{ reason: 'DisruptionBudget', message: 'The disruption budget fresh is still being processed by the server.' }]);
  t.ok(await exists('fresh-1'));
});

t.test('disruptionsAllowed is charged, then the budget refuses', async (t) => {
  await pod('web-1', { app: 'web' });
  await pod('web-2', { app: 'web' });
  await budget('web', 'web', { disruptionsAllowed: 1, currentHealthy: 2, desiredHealthy: 1, expectedPods: 2 });
  const dry = await evict('web-1', '?dryRun=All');
  t.equal(dry.status, 201);
  t.ok(await exists('web-1'), 'a dry run deletes nothing');
  t.equal((await c.request('GET', `${PDBS}/web`)).json.status.disruptionsAllowed, 1, 'and charges nothing');

  t.equal((await evict('web-1')).status, 201);
  t.notOk(await exists('web-1'));
  const st = (await c.request('GET', `${PDBS}/web`)).json.status;
  t.equal(st.disruptionsAllowed, 0);
  t.match(Object.keys(st.disruptedPods), ['web-1']);

  const refused = await evict('web-2');
  t.equal(refused.status, 429);
  t.equal(refused.json.message, "Cannot evict pod as it would violate the pod's disruption budget.");
  t.same(refused.json.details.causes, [{ reason: 'DisruptionBudget', message: 'The disruption budget web needs 1 healthy pods and has 2 currently' }]);
  t.ok(await exists('web-2'));
});

t.test('pods that disrupt nothing, and unready pods of a healthy budget, go without charging it', async (t) => {
  await pod('api-1', { app: 'api' });
  await pod('api-pending', { app: 'api' }, 'Pending', false);
  await pod('api-unready', { app: 'api' }, 'Running', false);
  await budget('api', 'api', { disruptionsAllowed: 0, currentHealthy: 1, desiredHealthy: 1, expectedPods: 3 });
  t.equal((await evict('api-pending')).status, 201, 'a pending pod');
  t.equal((await evict('api-unready')).status, 201, 'an unready pod while the budget is met');
  t.equal((await c.request('GET', `${PDBS}/api`)).json.status.disruptionsAllowed, 0, 'uncharged');
  t.equal((await evict('api-1')).status, 429, 'the ready one is protected');

  await pod('db-unready', { app: 'db' }, 'Running', false);
  await budget('db', 'db', { disruptionsAllowed: 0, currentHealthy: 0, desiredHealthy: 1, expectedPods: 1 });
  t.equal((await evict('db-unready')).status, 429, 'an unready pod of a budget that is not met (IfHealthyBudget)');
  const pol = await c.request('PATCH', `${PDBS}/db`, { raw: '{"spec":{"unhealthyPodEvictionPolicy":"AlwaysAllow"}}', contentType: 'application/merge-patch+json' });
  t.equal(pol.status, 200);
  await setStatus('db', { disruptionsAllowed: 0, currentHealthy: 0, desiredHealthy: 1, expectedPods: 1 });
  t.equal((await evict('db-unready')).status, 201, 'AlwaysAllow');
});

t.test('two budgets for one pod: 500', async (t) => {
  await pod('two-1', { app: 'two', tier: 'x' });
  await budget('two-a', 'two', { disruptionsAllowed: 5 });
  const r = await c.request('POST', PDBS, { body: { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name: 'two-b' }, spec: { maxUnavailable: 1, selector: { matchLabels: { tier: 'x' } } } } });
  t.equal(r.status, 201);
  const e = await evict('two-1');
  t.equal(e.status, 500);
  t.equal(e.json.message, 'This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.');
});

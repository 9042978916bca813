import t from 'tap';
import type { KubeObject, OwnerReference } from '../../src/api/resources/types.js';
import type { ResourceRef } from '../../src/client/rest-client.js';
import { newDisruptionController } from '../../src/daemons/controller-manager/controllers/disruption.js';
import {
  DELETION_TIMEOUT_MS, budgetStatus, countHealthy, desiredHealth, failSafeStatus, liveDisruptions, sameStatus, selectedPods, usesScale,
  type BudgetStatus, type Condition,
} from '../../src/daemons/controller-manager/controllers/disruption/budget.js';
import { assertSelectable, startWith, waitFor } from './fixtures/controller-harness.js';

const NAME = 'disruption';
const NS: ResourceRef = { group: '', version: 'v1', resource: 'namespaces' };
const PDBS = (namespace: string): ResourceRef => ({ group: 'policy', version: 'v1', resource: 'poddisruptionbudgets', namespace });
const PODS = (namespace: string): ResourceRef => ({ group: '', version: 'v1', resource: 'pods', namespace });
const APPS = (resource: string, namespace: string): ResourceRef => ({ group: 'apps', version: 'v1', resource, namespace });

type Client = Awaited<ReturnType<typeof startWith>>['client'];
type Labels = Record<string, string>;

const rfc3339 = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

function pod(name: string, labels: Labels, extra: { owner?: OwnerReference; ready?: boolean; deleting?: boolean } = {}): KubeObject {
  return {
    apiVersion: 'v1', kind: 'Pod',
    metadata: {
      name, labels, ...(extra.owner ? { ownerReferences: [extra.owner] } : {}),
      ...(extra.deleting ? { deletionTimestamp: rfc3339(0) } : {}),
    },
    spec: { containers: [{ name: 'c', image: 'x:1' }] },
    ...(extra.ready !== undefined ? { status: { phase: 'Running', conditions: [{ type: 'Ready', status: extra.ready ? 'True' : 'False' }] } } : {}),
  };
}

const pdb = (name: string, spec: Record<string, unknown>, status?: BudgetStatus, generation = 1): KubeObject =>
  ({ apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name, namespace: 'ns', generation }, spec, ...(status ? { status } : {}) });

const statusOf = (o: KubeObject): BudgetStatus => (o.status ?? {}) as BudgetStatus;
const allowedCondition = (s: BudgetStatus): Condition | undefined => s.conditions?.find((c) => c.type === 'DisruptionAllowed');

t.test('--controllers selects disruption (on by default, implemented)', async (t) => {
  await assertSelectable(t, NAME);
});

t.test('budget arithmetic', async (t) => {
  const web = { app: 'web' };
  const pods = [pod('a', web, { ready: true }), pod('b', web, { ready: false }), pod('c', { app: 'db' }, { ready: true }), pod('d', web)];
  t.same(selectedPods(pdb('p', { selector: { matchLabels: web } }), pods).map((p) => p.metadata?.name), ['a', 'b', 'd']);
  t.same(selectedPods(pdb('p', { selector: {} }), pods).length, 4, 'policy/v1: {} selects every pod');
  t.same(selectedPods(pdb('p', {}), pods), [], 'no selector: no pod');
  t.same(selectedPods(pdb('p', { selector: { matchExpressions: [{ key: 'app', operator: 'NotIn', values: ['web'] }] } }), pods).map((p) => p.metadata?.name), ['c']);

  t.notOk(usesScale(pdb('p', { minAvailable: 2 })));
  t.ok(usesScale(pdb('p', { minAvailable: '50%' })));
  t.ok(usesScale(pdb('p', { maxUnavailable: 0 })));
  t.same(desiredHealth(pdb('p', { minAvailable: 2 }), 3, 99), { expectedPods: 3, desiredHealthy: 2 }, 'integer minAvailable: the matched pods');
  t.same(desiredHealth(pdb('p', { minAvailable: '50%' }), 3, 3), { expectedPods: 3, desiredHealthy: 2 }, 'percentage rounds up');
  t.same(desiredHealth(pdb('p', { maxUnavailable: 1 }), 2, 4), { expectedPods: 4, desiredHealthy: 3 });
  t.same(desiredHealth(pdb('p', { maxUnavailable: 5 }), 2, 4), { expectedPods: 4, desiredHealthy: 0 }, 'never below 0');
  t.same(desiredHealth(pdb('p', { maxUnavailable: '30%' }), 2, 5), { expectedPods: 5, desiredHealthy: 3 }, 'unavailable 1.5 rounds up to 2');
  t.same(desiredHealth(pdb('p', {}), 3, 0), { expectedPods: 0, desiredHealthy: 0 }, 'neither field: 0 and 0');
  t.throws(() => desiredHealth(pdb('p', { minAvailable: 'half' }), 3, 3), /not a percentage/);

  const now = Date.parse('2025-01-01T00:10:00Z');
  const recorded = { a: rfc3339(now - 30_000), b: rfc3339(now - DELETION_TIMEOUT_MS), gone: rfc3339(now), dying: rfc3339(now) };
  const live = liveDisruptions(pdb('p', {}, { disruptedPods: recorded }), [...pods, pod('dying', web, { deleting: true, ready: true })], now);
  t.same(live.kept, { a: recorded.a }, 'expired, vanished and deleting pods are dropped');
  t.same(live.expired.map((p) => p.metadata?.name), ['b']);
  t.equal(live.recheckAt, now - 30_000 + DELETION_TIMEOUT_MS, 'recount when the kept entry expires');
  t.equal(countHealthy(pods, {}), 2);
  t.equal(countHealthy(pods, live.kept), 1, 'a disrupted pod is not healthy');

  const t0 = '2025-01-01T00:00:00Z', t1 = '2025-01-01T00:05:00Z';
  const s1 = budgetStatus(pdb('p', {}), { currentHealthy: 3, desiredHealthy: 2, expectedPods: 3, disruptedPods: {} }, t0);
  t.same(s1, {
    observedGeneration: 1, disruptionsAllowed: 1, currentHealthy: 3, desiredHealthy: 2, expectedPods: 3,
    conditions: [{ type: 'DisruptionAllowed', status: 'True', reason: 'SufficientPods', message: '', observedGeneration: 1, lastTransitionTime: t0 }],
  });
  const s2 = budgetStatus(pdb('p', {}, s1, 2), { currentHealthy: 4, desiredHealthy: 2, expectedPods: 4, disruptedPods: { x: t0 } }, t1);
  t.equal(allowedCondition(s2)?.lastTransitionTime, t0, 'same condition status: transition time kept');
  t.equal(allowedCondition(s2)?.observedGeneration, 2);
  t.same(s2.disruptedPods, { x: t0 });
  const s3 = budgetStatus(pdb('p', {}, s2, 2), { currentHealthy: 2, desiredHealthy: 2, expectedPods: 4, disruptedPods: {} }, t1);
  t.match(allowedCondition(s3), { status: 'False', reason: 'InsufficientPods', lastTransitionTime: t1 });
  t.notOk('disruptedPods' in s3, 'an empty map is omitted');
  t.equal(budgetStatus(pdb('p', {}), { currentHealthy: 3, desiredHealthy: 0, expectedPods: 0, disruptedPods: {} }, t0).disruptionsAllowed, 0,
    'no expected pods: nothing may be disrupted');

  const failed = failSafeStatus(pdb('p', {}, s2, 3), 'boom', t1);
  t.match(failed, { disruptionsAllowed: 0, observedGeneration: 2, currentHealthy: 4 }, 'other fields kept');
  t.match(allowedCondition(failed), { status: 'False', reason: 'SyncFailed', message: 'boom', lastTransitionTime: t1 });

  t.ok(sameStatus({ ...s1, disruptedPods: {} }, s1), 'absent and empty disruptedPods are the same');
  t.ok(sameStatus({ ...s1, conditions: [{ ...allowedCondition(s1)!, message: undefined as unknown as string, lastTransitionTime: t1 }] }, s1),
    'a missing message and a different transition time change nothing');
  t.notOk(sameStatus(s1, { ...s1, currentHealthy: 2 }));
  t.notOk(sameStatus(s1, s2));
  t.notOk(sameStatus({}, s1), 'the status the API server creates gets written');
});

/** Waits until the budget's status matches `want` (tap's match semantics); returns the budget. */
async function statusBecomes(client: Client, namespace: string, name: string, want: Record<string, unknown>, what = JSON.stringify(want)): Promise<KubeObject> {
  let last: unknown;
  try {
    return await waitFor(`${namespace}/${name} status ${what}`, async () => {
      const p = await client.get(PDBS(namespace), name);
      last = p.status;
      return matches(p.status, want) && p;
    });
  } catch (e) {
    throw new Error(`${(e as Error).message}; last status ${JSON.stringify(last)}`);
  }
}

/** Partial deep match: every key of `want` equals (recursively) in `have`; `undefined` means absent. */
function matches(have: unknown, want: unknown): boolean {
  if (want === undefined) return have === undefined;
  if (typeof want !== 'object' || want === null) return have === want;
  if (typeof have !== 'object' || have === null) return false;
  if (Array.isArray(want)) return Array.isArray(have) && want.every((w, i) => matches(have[i], w));
  return Object.entries(want).every(([k, v]) => matches((have as Record<string, unknown>)[k], v));
}

const allowed = (n: number, currentHealthy: number, desiredHealthy: number, expectedPods: number): Record<string, unknown> => ({
  disruptionsAllowed: n, currentHealthy, desiredHealthy, expectedPods,
  conditions: [n > 0 ? { type: 'DisruptionAllowed', status: 'True', reason: 'SufficientPods' } : { type: 'DisruptionAllowed', status: 'False', reason: 'InsufficientPods' }],
});

t.test('disruption controller against a real API server', async (t) => {
  const c = await startWith(newDisruptionController());
  t.teardown(() => c.stop());
  const client = c.client;
  const newNamespace = async (name: string): Promise<void> => { await client.create(NS, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } }); };
  const createPod = (ns: string, name: string, labels: Labels, owner?: OwnerReference): Promise<KubeObject> =>
    client.create(PODS(ns), pod(name, labels, owner ? { owner } : {}));
  const setReady = (ns: string, name: string, ready: boolean): Promise<KubeObject> =>
    client.patch(PODS(ns), name, 'merge', {
      status: { phase: 'Running', conditions: [{ type: 'Ready', status: ready ? 'True' : 'False', lastTransitionTime: rfc3339(Date.now()) }] },
    }, { subresource: 'status' });
  const createBudget = (ns: string, name: string, spec: Record<string, unknown>): Promise<KubeObject> =>
    client.create(PDBS(ns), { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name }, spec });
  const replicaSet = (ns: string, name: string, replicas: number, owner?: OwnerReference): Promise<KubeObject> => client.create(APPS('replicasets', ns), {
    apiVersion: 'apps/v1', kind: 'ReplicaSet', metadata: { name, ...(owner ? { ownerReferences: [owner] } : {}) },
    spec: { replicas, selector: { matchLabels: { rs: name } }, template: { metadata: { labels: { rs: name } }, spec: { containers: [{ name: 'c', image: 'x:1' }] } } },
  });
  const refTo = (o: KubeObject, apiVersion = 'apps/v1'): OwnerReference =>
    ({ apiVersion, kind: String(o.kind), name: o.metadata?.name ?? '', uid: o.metadata?.uid ?? '', controller: true });

  await t.test('integer minAvailable: ready pods count; unready, deleted and relabelled ones do not', async (t) => {
    const ns = 'pdb-int';
    await newNamespace(ns);
    for (const n of ['a', 'b', 'c']) { await createPod(ns, n, { app: 'web' }); await setReady(ns, n, true); }
    await createPod(ns, 'other', { app: 'db' });
    await setReady(ns, 'other', true);
    const created = await createBudget(ns, 'web', { minAvailable: 2, selector: { matchLabels: { app: 'web' } } });
    const p = await statusBecomes(client, ns, 'web', { ...allowed(1, 3, 2, 3), observedGeneration: created.metadata?.generation });
    t.notOk(statusOf(p).disruptedPods, 'no disruptedPods');
    t.equal(allowedCondition(statusOf(p))?.observedGeneration, created.metadata?.generation);

    await setReady(ns, 'a', false);
    await statusBecomes(client, ns, 'web', allowed(0, 2, 2, 3));
    t.pass('an unready pod is not healthy');

    await setReady(ns, 'a', true);
    await statusBecomes(client, ns, 'web', allowed(1, 3, 2, 3));
    await client.delete(PODS(ns), 'b', { gracePeriodSeconds: 0 });
    await statusBecomes(client, ns, 'web', allowed(0, 2, 2, 2));
    t.pass('a deleted pod is recounted');

    await client.patch(PODS(ns), 'other', 'merge', { metadata: { labels: { app: 'web' } } });
    await statusBecomes(client, ns, 'web', allowed(1, 3, 2, 3));
    await client.patch(PODS(ns), 'other', 'merge', { metadata: { labels: { app: 'db' } } });
    await statusBecomes(client, ns, 'web', allowed(0, 2, 2, 2));
    t.pass('a pod relabelled into and out of the selector is counted, then not');
  });

  await t.test('observedGeneration follows spec changes', async (t) => {
    const ns = 'pdb-int';
    const before = await client.get(PDBS(ns), 'web');
    const edited = await client.update(PDBS(ns), { ...before, spec: { ...(before.spec as object), minAvailable: 1 } });
    const gen = edited.metadata?.generation ?? 0;
    t.ok(gen > (before.metadata?.generation ?? 0), 'the spec change bumped the generation');
    const p = await statusBecomes(client, ns, 'web', { ...allowed(1, 2, 1, 2), observedGeneration: gen });
    t.equal(allowedCondition(statusOf(p))?.observedGeneration, gen, 'the condition observed it too');
  });

  await t.test('selector {} selects every pod of the namespace; no selector none; neither bound allows nothing', async (t) => {
    const ns = 'pdb-sel';
    await newNamespace(ns);
    for (const n of ['x', 'y']) { await createPod(ns, n, { app: n }); await setReady(ns, n, true); }
    await createBudget(ns, 'all', { minAvailable: 1, selector: {} });
    await createBudget(ns, 'none', { minAvailable: 1 });
    await createBudget(ns, 'unbounded', { selector: {} });
    const all = await statusBecomes(client, ns, 'all', allowed(1, 2, 1, 2));
    t.pass('{} counts both pods');
    await statusBecomes(client, ns, 'none', { ...allowed(0, 0, 1, 0), observedGeneration: 1 });
    t.pass('no selector: no pods, nothing allowed');
    await statusBecomes(client, ns, 'unbounded', { ...allowed(0, 2, 0, 0), observedGeneration: 1 });
    t.pass('neither minAvailable nor maxUnavailable: expectedPods 0, nothing allowed');
    // Absence of writes can only be watched for a while: the controller's own write must not make it write again.
    await new Promise((r) => setTimeout(r, 500));
    t.equal((await client.get(PDBS(ns), 'all')).metadata?.resourceVersion, all.metadata?.resourceVersion, 'a settled budget is not rewritten');
  });

  await t.test('maxUnavailable and percentages count the scale of the pods\' controllers', async (t) => {
    const ns = 'pdb-scale';
    await newNamespace(ns);
    const rs = await replicaSet(ns, 'front', 3);
    for (const n of ['f1', 'f2', 'f3']) { await createPod(ns, n, { app: 'front' }, refTo(rs)); await setReady(ns, n, true); }
    await createBudget(ns, 'max1', { maxUnavailable: 1, selector: { matchLabels: { app: 'front' } } });
    await createBudget(ns, 'half', { minAvailable: '50%', selector: { matchLabels: { app: 'front' } } });
    await statusBecomes(client, ns, 'max1', allowed(1, 3, 2, 3));
    await statusBecomes(client, ns, 'half', allowed(1, 3, 2, 3));
    t.pass('a ReplicaSet of 3: expectedPods 3; maxUnavailable 1 → 2 desired; 50% of 3 → 2 desired');

    const fresh = await client.get(APPS('replicasets', ns), 'front');
    await client.update(APPS('replicasets', ns), { ...fresh, spec: { ...(fresh.spec as object), replicas: 5 } });
    await statusBecomes(client, ns, 'max1', allowed(0, 3, 4, 5));
    await statusBecomes(client, ns, 'half', allowed(0, 3, 3, 5));
    t.pass('scaling the ReplicaSet recounts without any pod event');

    const deployment = await client.create(APPS('deployments', ns), {
      apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'api' },
      spec: { replicas: 4, selector: { matchLabels: { app: 'api' } }, template: { metadata: { labels: { app: 'api' } }, spec: { containers: [{ name: 'c', image: 'x:1' }] } } },
    });
    const owned = await replicaSet(ns, 'api-1', 2, refTo(deployment));
    for (const n of ['a1', 'a2']) { await createPod(ns, n, { app: 'api' }, refTo(owned)); await setReady(ns, n, true); }
    await createBudget(ns, 'api', { minAvailable: '50%', selector: { matchLabels: { app: 'api' } } });
    await statusBecomes(client, ns, 'api', allowed(0, 2, 2, 4));
    t.pass('pods of a Deployment\'s ReplicaSet count the Deployment\'s replicas (4), not the ReplicaSet\'s');

    const orphan = await replicaSet(ns, 'lost', 2, { apiVersion: 'apps/v1', kind: 'Deployment', name: 'gone', uid: '00000000-0000-0000-0000-000000000001', controller: true });
    for (const n of ['l1', 'l2']) { await createPod(ns, n, { app: 'lost' }, refTo(orphan)); await setReady(ns, n, true); }
    await createBudget(ns, 'lost', { maxUnavailable: 1, selector: { matchLabels: { app: 'lost' } } });
    await statusBecomes(client, ns, 'lost', allowed(1, 2, 1, 2));
    t.pass('a ReplicaSet whose Deployment is missing is counted through its scale subresource');
  });

  await t.test('unmanaged pods are skipped; an unknown controller fails the budget safe', async (t) => {
    const ns = 'pdb-fail';
    await newNamespace(ns);
    const rs = await replicaSet(ns, 'known', 2);
    await createPod(ns, 'm1', { app: 'm' }, refTo(rs));
    await createPod(ns, 'bare', { app: 'm' });
    for (const n of ['m1', 'bare']) await setReady(ns, n, true);
    await createBudget(ns, 'mixed', { maxUnavailable: 1, selector: { matchLabels: { app: 'm' } } });
    await statusBecomes(client, ns, 'mixed', allowed(1, 2, 1, 2));
    t.pass('a pod without a controller counts as healthy but adds nothing to expectedPods (as Kubernetes since 1.26)');

    const ghost: OwnerReference = { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'ghost', uid: '00000000-0000-0000-0000-000000000002', controller: true };
    await createPod(ns, 'g1', { app: 'm' }, ghost);
    await setReady(ns, 'g1', true);
    const failed = await statusBecomes(client, ns, 'mixed', {
      disruptionsAllowed: 0, conditions: [{ type: 'DisruptionAllowed', status: 'False', reason: 'SyncFailed' }],
    }, 'SyncFailed');
    t.match(allowedCondition(statusOf(failed))?.message, /found no controllers for pod "g1"/);

    const cm = await client.create({ group: '', version: 'v1', resource: 'configmaps', namespace: ns }, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cfg' } });
    await createPod(ns, 'c1', { app: 'cfg' }, refTo(cm, 'v1'));
    await createBudget(ns, 'cfg', { minAvailable: '100%', selector: { matchLabels: { app: 'cfg' } } });
    const noScale = await statusBecomes(client, ns, 'cfg', { conditions: [{ type: 'DisruptionAllowed', status: 'False', reason: 'SyncFailed' }] }, 'SyncFailed');
    t.match(allowedCondition(statusOf(noScale))?.message, /configmaps does not implement the scale subresource/);

    await client.patch(PODS(ns), 'g1', 'merge', { metadata: { ownerReferences: [refTo(rs)] } });
    await statusBecomes(client, ns, 'mixed', allowed(2, 3, 1, 2));
    t.pass('once the pod\'s controller is known the budget is computed again');
  });

  await t.test('status.disruptedPods: fresh entries keep pods out of currentHealthy until they expire; stale ones are dropped', async (t) => {
    const ns = 'pdb-evict';
    await newNamespace(ns);
    for (const n of ['a', 'b', 'c']) { await createPod(ns, n, { app: 'e' }); await setReady(ns, n, true); }
    await createBudget(ns, 'e', { minAvailable: 1, selector: { matchLabels: { app: 'e' } } });
    await statusBecomes(client, ns, 'e', allowed(2, 3, 1, 3));
    // What an eviction records, one entry about to expire, one long expired and one for a pod that does not exist.
    const soon = rfc3339(Date.now() - DELETION_TIMEOUT_MS + 6_000);
    const disruptedPods = { a: soon, b: rfc3339(Date.now() - DELETION_TIMEOUT_MS - 60_000), nosuch: rfc3339(Date.now()) };
    await waitFor('foreign status write', async () => {
      const p = await client.get(PDBS(ns), 'e');
      return client.update(PDBS(ns), { ...p, status: { ...statusOf(p), disruptionsAllowed: 1, disruptedPods } }, { subresource: 'status' });
    });
    await statusBecomes(client, ns, 'e', { ...allowed(1, 2, 1, 3), disruptedPods: { a: soon, b: undefined, nosuch: undefined } });
    t.pass('the evicted pod is not healthy; the expired and the unknown entries are gone');

    await statusBecomes(client, ns, 'e', { ...allowed(2, 3, 1, 3), disruptedPods: undefined });
    t.pass('when the entry expires without the pod going, the budget is recounted on its own');

    const now = rfc3339(Date.now());
    await waitFor('second foreign status write', async () => {
      const p = await client.get(PDBS(ns), 'e');
      return client.update(PDBS(ns), { ...p, status: { ...statusOf(p), disruptedPods: { c: now } } }, { subresource: 'status' });
    });
    await statusBecomes(client, ns, 'e', { ...allowed(1, 2, 1, 3), disruptedPods: { c: now } });
    await client.delete(PODS(ns), 'c', { gracePeriodSeconds: 0 });
    await statusBecomes(client, ns, 'e', { ...allowed(1, 2, 1, 2), disruptedPods: undefined });
    t.pass('the entry of a pod that went is dropped');
  });
});

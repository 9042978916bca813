import t from 'tap';
import type { KubeObject } from '../../src/api/resources/types.js';
import type { ResourceRef } from '../../src/client/rest-client.js';
import { DaemonSetController, type DaemonSetControllerOptions } from '../../src/daemons/controller-manager/controllers/daemonset.js';
import { judgeNode, pinnedAffinity, targetNode } from '../../src/daemons/controller-manager/controllers/daemonset/node-fit.js';
import { fenceposts, planRollingUpdate } from '../../src/daemons/controller-manager/controllers/daemonset/rolling.js';
import { startControllers, waitFor } from './fixtures/controller-harness.js';

type Dict = Record<string, unknown>;
const PODS: ResourceRef = { group: '', version: 'v1', resource: 'pods', namespace: 'default' };
const NODES: ResourceRef = { group: '', version: 'v1', resource: 'nodes' };
const DS: ResourceRef = { group: 'apps', version: 'v1', resource: 'daemonsets', namespace: 'default' };
const CRS: ResourceRef = { group: 'apps', version: 'v1', resource: 'controllerrevisions', namespace: 'default' };
const EVENTS: ResourceRef = { group: '', version: 'v1', resource: 'events', namespace: 'default' };
const HASH = 'controller-revision-hash';

const now = (): string => new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
const status = (o: KubeObject): Dict => (o.status ?? {}) as Dict;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function node(name: string, labels: Record<string, string> = {}, taints: Dict[] = []): KubeObject {
  return { apiVersion: 'v1', kind: 'Node', metadata: { name, labels }, spec: taints.length ? { taints } : {} };
}

function daemonSet(name: string, spec: Dict = {}, podSpec: Dict = {}): KubeObject {
  return {
    apiVersion: 'apps/v1', kind: 'DaemonSet', metadata: { name },
    spec: {
      selector: { matchLabels: { app: name } }, ...spec,
      template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'c', image: 'busybox:1' }], ...podSpec } },
    },
  };
}

/** A real API server with the controller running in-process (events recorded). */
function start(opts: DaemonSetControllerOptions): ReturnType<typeof startControllers> {
  return startControllers(new DaemonSetController(opts), { recordEvents: true });
}

t.test('node fit and rollout arithmetic', async (t) => {
  const tpl = { spec: { nodeSelector: { disk: 'ssd' } } };
  t.same(judgeNode(tpl, node('a', { disk: 'ssd' })), { shouldRun: true, shouldContinueRunning: true });
  t.same(judgeNode(tpl, node('a', { disk: 'hdd' })), { shouldRun: false, shouldContinueRunning: false });
  const noSchedule = node('a', {}, [{ key: 'k', value: 'v', effect: 'NoSchedule' }]);
  t.same(judgeNode({ spec: {} }, noSchedule), { shouldRun: false, shouldContinueRunning: true }, 'NoSchedule does not evict');
  const noExec = node('a', {}, [{ key: 'k', effect: 'NoExecute' }]);
  t.same(judgeNode({ spec: {} }, noExec), { shouldRun: false, shouldContinueRunning: false });
  t.same(judgeNode({ spec: { tolerations: [{ key: 'k', operator: 'Exists' }] } }, noExec), { shouldRun: true, shouldContinueRunning: true });
  const unschedulable = node('a', {}, [{ key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' }]);
  t.equal(judgeNode({ spec: {} }, unschedulable).shouldRun, true, 'daemon pods tolerate unschedulable nodes');
  const netDown = node('a', {}, [{ key: 'node.kubernetes.io/network-unavailable', effect: 'NoSchedule' }]);
  t.equal(judgeNode({ spec: {} }, netDown).shouldRun, false);
  t.equal(judgeNode({ spec: { hostNetwork: true } }, netDown).shouldRun, true, 'hostNetwork pods tolerate network-unavailable');
  const affinity = { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'zone', operator: 'In', values: ['z1'] }] }] } } };
  t.equal(judgeNode({ spec: { affinity } }, node('a', { zone: 'z1' })).shouldRun, true);
  t.equal(judgeNode({ spec: { affinity } }, node('a', { zone: 'z2' })).shouldRun, false);
  const pinned = pinnedAffinity(affinity, 'n9');
  t.same(pinned, { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['n9'] }] }] } } });
  t.equal(targetNode({ spec: { affinity: pinned } }), 'n9');
  t.equal(targetNode({ spec: { nodeName: 'x', affinity: pinned } }), 'x');

  const ds = (ru: Dict): KubeObject => ({ spec: { updateStrategy: { type: 'RollingUpdate', rollingUpdate: ru } } });
  t.same(fenceposts(ds({}), 10), { maxSurge: 0, maxUnavailable: 1 });
  t.same(fenceposts(ds({ maxUnavailable: '25%' }), 10), { maxSurge: 0, maxUnavailable: 3 }, 'percentages round up');
  t.same(fenceposts(ds({ maxUnavailable: 0, maxSurge: 0 }), 10), { maxSurge: 0, maxUnavailable: 1 });
  t.same(fenceposts(ds({ maxUnavailable: 0, maxSurge: '10%' }), 10), { maxSurge: 1, maxUnavailable: 0 });
  t.same(fenceposts({ spec: { updateStrategy: { type: 'OnDelete' } } }, 10), { maxSurge: 0, maxUnavailable: 0 });

  const ready = { phase: 'Running', conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: now() }] };
  const pod = (n: string, hash: string, isReady = true): KubeObject => ({ metadata: { name: `${n}-${hash}`, labels: { [HASH]: hash } }, spec: { nodeName: n }, status: isReady ? ready : {} });
  const nodes = ['a', 'b', 'c'].map((n) => ({ node: node(n), verdict: { shouldRun: true, shouldContinueRunning: true } }));
  const base = { nodes, hash: 'new', minReadySeconds: 0, now: Date.now() };
  const allOld = new Map([['a', [pod('a', 'old')]], ['b', [pod('b', 'old')]], ['c', [pod('c', 'old', false)]]]);
  const plan = planRollingUpdate({ ...base, byNode: allOld, maxSurge: 0, maxUnavailable: 1 });
  t.same(plan.remove.map((p) => p.metadata?.name), ['c-old', 'a-old'], 'an unavailable old pod is replaced at once, outside the budget');
  const one = new Map([['a', [pod('a', 'new', false)]], ['b', [pod('b', 'old')]], ['c', [pod('c', 'old')]]]);
  t.same(planRollingUpdate({ ...base, byNode: one, maxSurge: 0, maxUnavailable: 1 }).remove, [], 'waits for the new pod');
  t.same(planRollingUpdate({ ...base, byNode: one, maxSurge: 0, maxUnavailable: 2 }).remove.length, 1);
  const surge = planRollingUpdate({ ...base, byNode: new Map([['a', [pod('a', 'old')]], ['b', [pod('b', 'old')]], ['c', [pod('c', 'old')]]]), maxSurge: 1, maxUnavailable: 0 });
  t.same(surge, { remove: [], createOn: ['a'] }, 'surge creates next to the old pod');
});

t.test('daemonset controller against a real API server', async (t) => {
  const c = await start({ failedPodBackoffMs: 300 });
  t.teardown(() => c.stop());

  const podsOf = async (app: string): Promise<KubeObject[]> =>
    (await c.client.list(PODS, { labelSelector: `app=${app}` })).items.filter((p) => !p.metadata?.deletionTimestamp);
  const nodesOf = (pods: KubeObject[]): string[] => pods.map((p) => targetNode(p) ?? '?').sort();
  const podsOn = (app: string, nodes: string[]): Promise<KubeObject[]> => waitFor(`${app} pods on ${nodes.join(',')}`, async () => {
    const l = await podsOf(app);
    return JSON.stringify(nodesOf(l)) === JSON.stringify([...nodes].sort()) && l;
  });
  const setPhase = async (p: KubeObject, phase: string, isReady: boolean): Promise<void> => {
    await c.client.patch(PODS, p.metadata?.name ?? '', 'merge', {
      status: { phase, conditions: [{ type: 'Ready', status: isReady ? 'True' : 'False', lastTransitionTime: now() }] },
    }, { subresource: 'status' });
  };
  const markReady = async (pods: KubeObject[]): Promise<void> => { for (const p of pods) await setPhase(p, 'Running', true); };
  const getDs = (name: string): Promise<KubeObject> => c.client.get(DS, name);
  const untilDs = (what: string, name: string, ok: (d: KubeObject) => boolean): Promise<KubeObject> =>
    waitFor(what, async () => { const d = await getDs(name); return ok(d) && d; });
  const revisionsOf = async (ds: KubeObject): Promise<KubeObject[]> => (await c.client.list(CRS)).items
    .filter((r) => r.metadata?.ownerReferences?.some((o) => o.uid === ds.metadata?.uid))
    .sort((a, b) => Number(a.revision) - Number(b.revision));
  const eventsOf = async (name: string): Promise<KubeObject[]> => (await c.client.list(EVENTS, { fieldSelector: `involvedObject.name=${name}` })).items;

  await c.client.create(NODES, node('n1', { disk: 'hdd' }));
  await c.client.create(NODES, node('n2'));

  await t.test('one pod per node, owned, pinned, labelled and tolerant; a revision; status counts', async (t) => {
    const created = await c.client.create(DS, daemonSet('basic'));
    const pods = await podsOn('basic', ['n1', 'n2']);
    const [rev] = await waitFor('a revision', async () => { const l = await revisionsOf(created); return l.length === 1 && l; });
    const hash = rev?.metadata?.labels?.[HASH] ?? '';
    t.equal(rev?.metadata?.name, `basic-${hash}`);
    t.equal(rev?.revision, 1);
    t.match(rev?.metadata?.ownerReferences, [{ kind: 'DaemonSet', name: 'basic', uid: created.metadata?.uid, controller: true }]);
    t.match(rev?.data, { spec: { template: { $patch: 'replace', spec: { containers: [{ image: 'busybox:1' }] } } } });
    for (const p of pods) {
      t.equal(p.metadata?.generateName, 'basic-');
      t.match(p.metadata?.ownerReferences, [{ apiVersion: 'apps/v1', kind: 'DaemonSet', name: 'basic', uid: created.metadata?.uid, controller: true, blockOwnerDeletion: true }]);
      t.match(p.metadata?.labels, { app: 'basic', [HASH]: hash, 'pod-template-generation': '1' });
      const terms = (p.spec as Dict & { affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: unknown[] } } } }).affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms;
      t.same(terms, [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: [targetNode(p)] }] }]);
      const keys = ((p.spec as Dict).tolerations as Dict[]).map((x) => `${String(x.key)}:${String(x.effect)}`).sort();
      t.same(keys, ['node.kubernetes.io/disk-pressure:NoSchedule', 'node.kubernetes.io/memory-pressure:NoSchedule', 'node.kubernetes.io/not-ready:NoExecute',
        'node.kubernetes.io/pid-pressure:NoSchedule', 'node.kubernetes.io/unreachable:NoExecute', 'node.kubernetes.io/unschedulable:NoSchedule']);
    }
    const before = await untilDs('2 scheduled', 'basic', (d) => status(d).currentNumberScheduled === 2);
    t.match(status(before), { desiredNumberScheduled: 2, updatedNumberScheduled: 2, numberUnavailable: 2, observedGeneration: 1 });
    t.notOk(status(before).numberReady);
    await markReady(pods);
    const after = await untilDs('2 available', 'basic', (d) => status(d).numberAvailable === 2);
    t.match(status(after), { desiredNumberScheduled: 2, currentNumberScheduled: 2, numberReady: 2, updatedNumberScheduled: 2 });
    t.notOk(status(after).numberUnavailable);
    t.notOk(status(after).numberMisscheduled);
    const evs = await waitFor('events', async () => { const l = (await eventsOf('basic')).filter((e) => e.reason === 'SuccessfulCreate'); return l.length === 2 && l; });
    t.match(evs[0], { type: 'Normal', source: { component: 'daemonset-controller' } });
    t.match(String(evs[0]?.message), /^Created pod: basic-/);
  });

  await t.test('a deleted pod is recreated; a third node gets a pod', async (t) => {
    const [victim] = (await podsOf('basic')).filter((p) => targetNode(p) === 'n1');
    await c.client.delete(PODS, victim?.metadata?.name ?? '', { gracePeriodSeconds: 0 });
    const pods = await waitFor('replacement on n1', async () => {
      const l = await podsOf('basic');
      return l.length === 2 && l.some((p) => targetNode(p) === 'n1' && p.metadata?.uid !== victim?.metadata?.uid) && l;
    });
    t.same(nodesOf(pods), ['n1', 'n2']);
    await c.client.create(NODES, node('n3'));
    await podsOn('basic', ['n1', 'n2', 'n3']);
    await untilDs('3 desired', 'basic', (d) => status(d).desiredNumberScheduled === 3 && status(d).currentNumberScheduled === 3);
  });

  await t.test('a failed pod is deleted and replaced, with a FailedDaemonPod event', async (t) => {
    const [victim] = (await podsOf('basic')).filter((p) => targetNode(p) === 'n3');
    await setPhase(victim as KubeObject, 'Failed', false);
    await waitFor('replacement on n3', async () => {
      const l = await podsOf('basic');
      return l.length === 3 && l.some((p) => targetNode(p) === 'n3' && p.metadata?.uid !== victim?.metadata?.uid) && l;
    });
    const ev = await waitFor('FailedDaemonPod', async () => (await eventsOf('basic')).find((e) => e.reason === 'FailedDaemonPod'));
    t.match(ev, { type: 'Warning', message: `Found failed daemon pod default/${victim?.metadata?.name} on node n3, will try to kill it` });
  });

  await t.test('node selector: none on a non-matching node, one after relabelling, gone after relabelling back', async (t) => {
    await c.client.create(DS, daemonSet('ssd', {}, { nodeSelector: { disk: 'ssd' } }));
    await untilDs('observed', 'ssd', (d) => status(d).observedGeneration === 1);
    await sleep(300);
    t.same(await podsOf('ssd'), [], 'no pods while no node matches');
    await c.client.patch(NODES, 'n1', 'merge', { metadata: { labels: { disk: 'ssd' } } });
    await podsOn('ssd', ['n1']);
    await untilDs('1 desired', 'ssd', (d) => status(d).desiredNumberScheduled === 1);
    await c.client.patch(NODES, 'n1', 'merge', { metadata: { labels: { disk: 'hdd' } } });
    await podsOn('ssd', []);
    await untilDs('0 desired', 'ssd', (d) => status(d).desiredNumberScheduled === 0 && !status(d).currentNumberScheduled);
  });

  await t.test('a tainted node is skipped unless the template tolerates the taint', async (t) => {
    await c.client.create(NODES, node('t1', { pool: 'tainted' }, [{ key: 'dedicated', value: 'x', effect: 'NoSchedule' }]));
    await c.client.create(DS, daemonSet('picky', {}, { nodeSelector: { pool: 'tainted' } }));
    await c.client.create(DS, daemonSet('tolerant', {}, { nodeSelector: { pool: 'tainted' }, tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'x', effect: 'NoSchedule' }] }));
    await podsOn('tolerant', ['t1']);
    await untilDs('picky observed', 'picky', (d) => status(d).observedGeneration === 1);
    t.same(await podsOf('picky'), []);
    t.same(nodesOf(await podsOf('basic')), ['n1', 'n2', 'n3'], 'the untolerating basic set skips t1 too');
  });

  await t.test('rolling update replaces one pod at a time (maxUnavailable 1) and keeps revisions', async (t) => {
    const ds = await c.client.create(DS, daemonSet('roll'));
    const first = await podsOn('roll', ['n1', 'n2', 'n3']);
    await markReady(first);
    await untilDs('3 available', 'roll', (d) => status(d).numberAvailable === 3);
    const oldHash = first[0]?.metadata?.labels?.[HASH];
    await c.client.patch(DS, 'roll', 'merge', { spec: { template: { spec: { containers: [{ name: 'c', image: 'busybox:2' }] } } } });
    const newRev = await waitFor('2 revisions', async () => { const l = await revisionsOf(ds); return l.length === 2 && l[1]; });
    t.equal(newRev.revision, 2);
    const newHash = newRev.metadata?.labels?.[HASH];
    t.not(newHash, oldHash);
    for (let done = 1; done <= 3; done++) {
      const pods = await waitFor(`${done} updated`, async () => {
        const l = await podsOf('roll');
        return l.length === 3 && l.filter((p) => p.metadata?.labels?.[HASH] === newHash).length === done && l;
      });
      const fresh = pods.filter((p) => p.metadata?.labels?.[HASH] === newHash && (p.status as Dict | undefined)?.phase !== 'Running');
      t.equal(fresh.length, 1, 'one new, not yet ready pod at a time');
      t.match(fresh[0]?.spec, { containers: [{ image: 'busybox:2' }] });
      await sleep(300);
      const still = await podsOf('roll');
      t.equal(still.filter((p) => p.metadata?.labels?.[HASH] === newHash).length, done, 'the rollout waits for the new pod to be ready');
      t.ok(still.filter((p) => !(p.status as Dict | undefined)?.conditions).length <= 1, 'at most one node without a ready pod');
      await markReady(fresh);
    }
    const st = await untilDs('rolled out', 'roll', (d) => status(d).updatedNumberScheduled === 3 && status(d).numberAvailable === 3);
    t.match(status(st), { desiredNumberScheduled: 3, currentNumberScheduled: 3, numberReady: 3, observedGeneration: 2 });
    const dels = (await eventsOf('roll')).filter((e) => e.reason === 'SuccessfulDelete');
    t.equal(dels.length, 3, 'three SuccessfulDelete events');
    t.match(String(dels[0]?.message), /^Deleted pod: roll-/);
  });

  await t.test('OnDelete keeps old pods until they are deleted; history is trimmed to the limit', async (t) => {
    const ds = await c.client.create(DS, daemonSet('ondel', { updateStrategy: { type: 'OnDelete' }, revisionHistoryLimit: 1 }));
    const first = await podsOn('ondel', ['n1', 'n2', 'n3']);
    const v1 = first[0]?.metadata?.labels?.[HASH];
    await c.client.patch(DS, 'ondel', 'merge', { spec: { template: { spec: { containers: [{ name: 'c', image: 'busybox:2' }] } } } });
    await waitFor('2 revisions', async () => (await revisionsOf(ds)).length === 2);
    await untilDs('generation 2 observed', 'ondel', (d) => status(d).observedGeneration === 2);
    await sleep(300);
    const same = await podsOf('ondel');
    t.same(same.map((p) => p.metadata?.uid).sort(), first.map((p) => p.metadata?.uid).sort(), 'old pods stay');
    t.equal(status(await getDs('ondel')).updatedNumberScheduled ?? 0, 0);
    const victim = first.find((p) => targetNode(p) === 'n2') as KubeObject;
    await c.client.delete(PODS, victim.metadata?.name ?? '', { gracePeriodSeconds: 0 });
    const replaced = await waitFor('n2 replaced', async () => {
      const p = (await podsOf('ondel')).find((x) => targetNode(x) === 'n2' && x.metadata?.uid !== victim.metadata?.uid);
      return p && p.metadata?.labels?.[HASH] !== v1 && p;
    });
    t.match(replaced.spec, { containers: [{ image: 'busybox:2' }] });
    await untilDs('1 updated', 'ondel', (d) => status(d).updatedNumberScheduled === 1);
    await c.client.patch(DS, 'ondel', 'merge', { spec: { template: { spec: { containers: [{ name: 'c', image: 'busybox:3' }] } } } });
    const three = await waitFor('3 revisions (all in use)', async () => { const l = await revisionsOf(ds); return l.length === 3 && l; });
    t.same(three.map((r) => r.revision), [1, 2, 3]);
    for (const p of await podsOf('ondel')) await c.client.delete(PODS, p.metadata?.name ?? '', { gracePeriodSeconds: 0 });
    const v3 = three[2]?.metadata?.labels?.[HASH];
    await waitFor('all on v3', async () => { const l = await podsOf('ondel'); return l.length === 3 && l.every((p) => p.metadata?.labels?.[HASH] === v3); });
    // Which old one survives depends on the order the old pods went; never more than one.
    const kept = await waitFor('trimmed to current + 1', async () => { const l = await revisionsOf(ds); return l.length === 2 && l; });
    t.equal(kept[1]?.revision, 3, 'the current revision stays, with one old one');
  });

  await t.test('a matching orphan pod is adopted and counts for its node', async (t) => {
    const orphan = await c.client.create(PODS, {
      apiVersion: 'v1', kind: 'Pod', metadata: { name: 'adopt-orphan', labels: { app: 'adopt' } },
      spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'busybox:1' }] },
    });
    // OnDelete: an adopted orphan carries no controller-revision-hash, so it counts as out of
    // date; under RollingUpdate it would be replaced (as in Kubernetes), and with no node agent
    // here its graceful deletion would never finish.
    const ds = await c.client.create(DS, daemonSet('adopt', { updateStrategy: { type: 'OnDelete' } }));
    const pods = await podsOn('adopt', ['n1', 'n2', 'n3']);
    const adopted = pods.find((p) => p.metadata?.uid === orphan.metadata?.uid);
    t.ok(adopted, 'the orphan serves n1');
    await waitFor('adopted', async () => (await c.client.get(PODS, 'adopt-orphan')).metadata?.ownerReferences?.some((r) => r.controller && r.uid === ds.metadata?.uid));
    await untilDs('3 scheduled', 'adopt', (d) => status(d).currentNumberScheduled === 3);
  });

  await t.test('maxSurge 1: the new pod starts next to the old one, which goes once the new one is available', async (t) => {
    await c.client.create(DS, daemonSet('surge', { updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } } }));
    await markReady(await podsOn('surge', ['n1', 'n2', 'n3']));
    await untilDs('3 available', 'surge', (d) => status(d).numberAvailable === 3);
    await c.client.patch(DS, 'surge', 'merge', { spec: { template: { spec: { containers: [{ name: 'c', image: 'busybox:2' }] } } } });
    for (let done = 1; done <= 3; done++) {
      const pods = await waitFor(`surge step ${done}`, async () => {
        const l = await podsOf('surge');
        const fresh = l.filter((p) => (p.spec as { containers: Array<{ image: string }> }).containers[0]?.image === 'busybox:2');
        return l.length === 4 && fresh.length === done && fresh.filter((p) => !(p.status as Dict | undefined)?.conditions).length === 1 && l;
      });
      const fresh = pods.find((p) => !(p.status as Dict | undefined)?.conditions) as KubeObject;
      const old = pods.find((p) => p !== fresh && targetNode(p) === targetNode(fresh));
      t.ok(old, 'old and new pod side by side on one node');
      await sleep(300);
      t.ok((await podsOf('surge')).some((p) => p.metadata?.uid === old?.metadata?.uid), 'the old pod stays while the new one is not ready');
      await markReady([fresh]);
      await waitFor('old pod gone', async () => !(await podsOf('surge')).some((p) => p.metadata?.uid === old?.metadata?.uid));
    }
    await untilDs('rolled out', 'surge', (d) => status(d).updatedNumberScheduled === 3 && status(d).numberAvailable === 3);
  });
});

import t from 'tap';
import type { KubeObject } from '../../src/api/resources/types.js';
import { DEPLOY, KUBECTL, PODS, RS, deletePods, listPods, markReady, ownerUid, startCluster, waitFor, type Cluster } from './fixtures/cluster.js';

const REV = 'deployment.kubernetes.io/revision';
type Dict = Record<string, unknown>;
const spec = (o: KubeObject): Dict => (o.spec ?? {}) as Dict;
const status = (o: KubeObject): Dict => (o.status ?? {}) as Dict;
const cond = (d: KubeObject, type: string): Dict | undefined => ((status(d).conditions ?? []) as Dict[]).find((c) => c.type === type);

t.test('deployment controller against a real API server', { skip: KUBECTL ? false : 'kubectl.1.33 not installed' }, async (t) => {
  const c: Cluster = await startCluster(['--controllers=deployment,replicaset']);
  // A node agent stand-in: pods whose app label is listed are marked Running and Ready.
  const autoReady = new Set<string>();
  const stopReady = new AbortController();
  const readyLoop = (async () => {
    while (!stopReady.signal.aborted) {
      try {
        const pods = (await listPods(c)).filter((p) => autoReady.has(p.metadata?.labels?.app ?? ''));
        await markReady(c, pods);
      } catch { /* pods come and go */ }
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  t.teardown(async () => { stopReady.abort(); await readyLoop; await c.stop(); });

  const rsOf = async (app: string): Promise<KubeObject[]> => (await c.client.list(RS, { labelSelector: `app=${app}` })).items;
  const deploy = (name: string): Promise<KubeObject> => c.client.get(DEPLOY, name);

  await t.test('a Deployment of 3 gets a ReplicaSet and 3 pods', async (t) => {
    await c.kubectl('create', 'deployment', 'web', '--image=nginx:1', '--replicas=3');
    const [rs] = await waitFor('a replica set', async () => { const l = await rsOf('web'); return l.length === 1 && l; });
    const hash = rs.metadata?.labels?.['pod-template-hash'];
    t.ok(hash, 'pod-template-hash label');
    t.equal(rs.metadata?.name, `web-${hash}`);
    t.same((spec(rs).selector as Dict).matchLabels, { app: 'web', 'pod-template-hash': hash }, 'hash added to the selector');
    t.equal(rs.metadata?.annotations?.[REV], '1');
    t.equal(rs.metadata?.annotations?.['deployment.kubernetes.io/desired-replicas'], '3');
    t.equal(rs.metadata?.annotations?.['deployment.kubernetes.io/max-replicas'], '4', '3 + 25% surge rounded up');
    const ref = rs.metadata?.ownerReferences?.[0];
    t.match(ref, { kind: 'Deployment', name: 'web', controller: true, blockOwnerDeletion: true });
    const pods = await waitFor('3 pods', async () => { const l = await listPods(c, 'app=web'); return l.length === 3 && l; });
    for (const p of pods) {
      t.equal(ownerUid(p), rs.metadata?.uid, 'owned by the replica set');
      t.equal(p.metadata?.generateName, `web-${hash}-`);
      t.equal(p.metadata?.labels?.['pod-template-hash'], hash);
    }
    t.equal((await deploy('web')).metadata?.annotations?.[REV], '1', 'deployment revision');
    autoReady.add('web');
    const out = await c.kubectl('rollout', 'status', 'deployment/web', '--timeout=30s');
    t.match(out, /successfully rolled out/);
    const d = await waitFor('status', async () => { const x = await deploy('web'); return status(x).availableReplicas === 3 && x; });
    t.match(status(d), { replicas: 3, updatedReplicas: 3, readyReplicas: 3, availableReplicas: 3, observedGeneration: d.metadata?.generation });
    t.match(cond(d, 'Available'), { status: 'True', reason: 'MinimumReplicasAvailable' });
    t.match(cond(d, 'Progressing'), { status: 'True', reason: 'NewReplicaSetAvailable' });
    const described = await waitFor('scaling event', async () => { const x = await c.kubectl('describe', 'deployment', 'web'); return /ScalingReplicaSet/.test(x) && x; });
    t.match(described, new RegExp(`Scaled up replica set web-${hash} from 0 to 3`), 'kubectl describe shows the scaling event');
  });

  await t.test('scale to 5 and to 1', async (t) => {
    await c.kubectl('scale', 'deployment/web', '--replicas=5');
    await waitFor('5 pods', async () => (await listPods(c, 'app=web')).length === 5);
    const [rs] = await rsOf('web');
    t.equal(rs.metadata?.annotations?.['deployment.kubernetes.io/desired-replicas'], '5');
    await c.kubectl('scale', 'deployment/web', '--replicas=1');
    await waitFor('1 pod', async () => (await listPods(c, 'app=web')).length === 1);
    await c.kubectl('scale', 'deployment/web', '--replicas=3');
    t.match(await c.kubectl('rollout', 'status', 'deployment/web', '--timeout=30s'), /successfully rolled out/);
    t.equal((await listPods(c, 'app=web')).length, 3);
  });

  await t.test('a deleted pod is replaced', async (t) => {
    const before = await listPods(c, 'app=web');
    await deletePods(c, [before[0]]);
    const after = await waitFor('a replacement', async () => {
      const l = await listPods(c, 'app=web');
      return l.length === 3 && !l.some((p) => p.metadata?.name === before[0].metadata?.name) && l;
    });
    t.equal(after.length, 3);
  });

  let firstRS = '';
  await t.test('a new image rolls out a new ReplicaSet; undo brings the old one back with a new revision', async (t) => {
    firstRS = (await rsOf('web'))[0].metadata?.name ?? '';
    await c.kubectl('set', 'image', 'deployment/web', 'nginx=nginx:2');
    t.match(await c.kubectl('rollout', 'status', 'deployment/web', '--timeout=40s'), /successfully rolled out/);
    const rss = await waitFor('old scaled to 0', async () => {
      const l = await rsOf('web');
      const old = l.find((r) => r.metadata?.name === firstRS);
      return l.length === 2 && old && spec(old).replicas === 0 && l;
    });
    const newRS = rss.find((r) => r.metadata?.name !== firstRS) as KubeObject;
    t.equal(newRS.metadata?.annotations?.[REV], '2');
    t.equal(spec(newRS).replicas, 3);
    const pods = await waitFor('only new pods', async () => {
      const l = await listPods(c, 'app=web');
      return l.length === 3 && l.every((p) => ownerUid(p) === newRS.metadata?.uid) && l;
    });
    t.equal(pods.length, 3);
    t.equal((await deploy('web')).metadata?.annotations?.[REV], '2');

    await c.kubectl('rollout', 'undo', 'deployment/web');
    t.match(await c.kubectl('rollout', 'status', 'deployment/web', '--timeout=40s'), /successfully rolled out/);
    const back = await waitFor('first RS back at 3', async () => {
      const l = await rsOf('web');
      const first = l.find((r) => r.metadata?.name === firstRS);
      const other = l.find((r) => r.metadata?.name !== firstRS);
      return first && other && spec(first).replicas === 3 && spec(other).replicas === 0 && first;
    });
    t.equal(back.metadata?.annotations?.[REV], '3', 'the re-used ReplicaSet gets the next revision');
    t.equal(back.metadata?.annotations?.['deployment.kubernetes.io/revision-history'], '1');
    t.equal((await deploy('web')).metadata?.annotations?.[REV], '3');
    const history = await c.kubectl('rollout', 'history', 'deployment/web');
    t.match(history, /\n2 .*\n3 /s, 'kubectl rollout history lists revisions 2 and 3');
  });

  await t.test('paused: no rollout until resumed; history limit cleans old ReplicaSets', async (t) => {
    await c.kubectl('rollout', 'pause', 'deployment/web');
    await c.kubectl('set', 'image', 'deployment/web', 'nginx=nginx:3');
    const d = await waitFor('paused condition', async () => {
      const x = await deploy('web');
      return status(x).observedGeneration === x.metadata?.generation && cond(x, 'Progressing')?.reason === 'DeploymentPaused' && x;
    });
    t.match(cond(d, 'Progressing'), { status: 'Unknown', message: 'Deployment is paused' });
    t.equal((await rsOf('web')).length, 2, 'no new replica set while paused');
    await c.kubectl('rollout', 'resume', 'deployment/web');
    t.match(await c.kubectl('rollout', 'status', 'deployment/web', '--timeout=40s'), /successfully rolled out/);
    t.equal((await rsOf('web')).length, 3);
    await c.client.patch(DEPLOY, 'web', 'merge', { spec: { revisionHistoryLimit: 1 } });
    const left = await waitFor('history cleaned', async () => { const l = await rsOf('web'); return l.length === 2 && l; });
    const revs = left.map((r) => r.metadata?.annotations?.[REV]).sort();
    t.same(revs, ['3', '4'], 'the lowest revision (2) was deleted');
  });

  await t.test('Recreate scales the old ReplicaSet to 0 before creating the new one', async (t) => {
    autoReady.add('rec');
    const body = {
      apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'rec' },
      spec: {
        replicas: 2, strategy: { type: 'Recreate' }, selector: { matchLabels: { app: 'rec' } },
        template: { metadata: { labels: { app: 'rec' } }, spec: { containers: [{ name: 'c', image: 'busybox:1' }] } },
      },
    };
    await c.client.create(DEPLOY, body);
    t.match(await c.kubectl('rollout', 'status', 'deployment/rec', '--timeout=30s'), /successfully rolled out/);
    const [oldRS] = await rsOf('rec');
    const oldPods = new Set((await listPods(c, 'app=rec')).map((p) => p.metadata?.name));
    // Watch from now on: resource versions order pod deletions against the new ReplicaSet's creation.
    const from = (await c.client.list(PODS, { limit: 1 })).metadata.resourceVersion;
    const events: Array<{ rv: number; what: string }> = [];
    const ac = new AbortController();
    const collect = async (ref: typeof PODS, sel: string): Promise<void> => {
      try {
        for await (const ev of await c.client.watch(ref, { resourceVersion: from, labelSelector: sel, signal: ac.signal })) {
          const o = ev.object;
          const rv = Number(o.metadata?.resourceVersion);
          if (ref === PODS && ev.type === 'DELETED' && oldPods.has(o.metadata?.name)) events.push({ rv, what: 'old pod deleted' });
          if (ref === RS && ev.type === 'ADDED' && o.metadata?.uid !== oldRS.metadata?.uid) events.push({ rv, what: 'new rs created' });
          if (ref === RS && o.metadata?.uid === oldRS.metadata?.uid && spec(o).replicas === 0 && !events.some((e) => e.what === 'old rs at 0')) events.push({ rv, what: 'old rs at 0' });
        }
      } catch { /* aborted */ }
    };
    const watching = Promise.all([collect(PODS, 'app=rec'), collect(RS, 'app=rec')]);
    await c.client.patch(DEPLOY, 'rec', 'merge', { spec: { template: { spec: { containers: [{ name: 'c', image: 'busybox:2' }] } } } });
    t.match(await c.kubectl('rollout', 'status', 'deployment/rec', '--timeout=30s'), /successfully rolled out/);
    await waitFor('all events', async () => events.filter((e) => e.what === 'old pod deleted').length === 2 && events.some((e) => e.what === 'new rs created'));
    ac.abort();
    await watching;
    const created = events.find((e) => e.what === 'new rs created')?.rv ?? 0;
    const lastDeleted = Math.max(...events.filter((e) => e.what === 'old pod deleted').map((e) => e.rv));
    const scaledDown = events.find((e) => e.what === 'old rs at 0')?.rv ?? Infinity;
    t.ok(scaledDown < created, 'old replica set scaled to 0 before the new one existed');
    t.ok(lastDeleted < created, 'every old pod was gone before the new replica set was created');
  });

  await t.test('scaling mid-rollout is proportional across ReplicaSets', async (t) => {
    autoReady.add('prop');
    await c.client.create(DEPLOY, {
      apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'prop' },
      spec: {
        replicas: 4, strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } }, selector: { matchLabels: { app: 'prop' } },
        template: { metadata: { labels: { app: 'prop' } }, spec: { containers: [{ name: 'c', image: 'busybox:1' }] } },
      },
    });
    t.match(await c.kubectl('rollout', 'status', 'deployment/prop', '--timeout=30s'), /successfully rolled out/);
    const [first] = await rsOf('prop');
    autoReady.delete('prop');
    await c.client.patch(DEPLOY, 'prop', 'merge', { spec: { template: { spec: { containers: [{ name: 'c', image: 'busybox:2' }] } } } });
    const sizes = async (): Promise<{ old: number; new: number } | undefined> => {
      const l = await rsOf('prop');
      const o = l.find((r) => r.metadata?.uid === first.metadata?.uid);
      const n = l.find((r) => r.metadata?.uid !== first.metadata?.uid);
      return o && n ? { old: Number(spec(o).replicas), new: Number(spec(n).replicas) } : undefined;
    };
    await waitFor('surge of one stuck on unready pods', async () => { const s = await sizes(); return s?.old === 4 && s.new === 1; });
    await c.client.patch(DEPLOY, 'prop', 'merge', { spec: { replicas: 8 } });
    const s = await waitFor('proportional sizes', async () => { const x = await sizes(); return x && x.old + x.new === 9 && x; });
    t.same(s, { old: 7, new: 2 }, '9 = 8 + surge split by the previous sizes 4:1');
    const [o] = (await rsOf('prop')).filter((r) => r.metadata?.uid === first.metadata?.uid);
    t.equal(o.metadata?.annotations?.['deployment.kubernetes.io/desired-replicas'], '8');
    t.equal(o.metadata?.annotations?.['deployment.kubernetes.io/max-replicas'], '9');
    autoReady.add('prop');
    t.match(await c.kubectl('rollout', 'status', 'deployment/prop', '--timeout=40s'), /successfully rolled out/);
    const done = await waitFor('all new', async () => { const x = await sizes(); return x?.old === 0 && x.new === 8 && x; });
    t.same(done, { old: 0, new: 8 });
  });

  await t.test('progressDeadlineSeconds: ProgressDeadlineExceeded when pods never become ready', async (t) => {
    await c.client.create(DEPLOY, {
      apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'slow' },
      spec: {
        replicas: 1, progressDeadlineSeconds: 1, selector: { matchLabels: { app: 'slow' } },
        template: { metadata: { labels: { app: 'slow' } }, spec: { containers: [{ name: 'c', image: 'busybox:1' }] } },
      },
    });
    const d = await waitFor('deadline exceeded', async () => {
      const x = await deploy('slow');
      return cond(x, 'Progressing')?.reason === 'ProgressDeadlineExceeded' && x;
    });
    t.match(cond(d, 'Progressing'), { status: 'False', message: /has timed out progressing/ });
    t.match(cond(d, 'Available'), { status: 'False', reason: 'MinimumReplicasUnavailable' });
    await t.rejects(c.kubectl('rollout', 'status', 'deployment/slow', '--timeout=10s'), /exceeded its progress deadline/);
  });
});

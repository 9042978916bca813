import t, { type Test } from 'tap';
import type { KubeObject } from '../../src/api/resources/types.js';
import { parseControllerManagerArgs } from '../../src/flags/controller-manager.js';
import {
  IMPLEMENTED, enabledControllers, isControllerEnabled, unknownControllers,
} from '../../src/daemons/controller-manager/controller-registry.js';
import { selectControllers } from '../../src/daemons/controller-manager/main.js';
import {
  PVC_PROTECTION_FINALIZER, claimNamesOf, claimNeedsWork, podUsesClaim,
} from '../../src/daemons/controller-manager/controllers/pvc-protection.js';
import { PV_PROTECTION_FINALIZER, volumeNeedsWork } from '../../src/daemons/controller-manager/controllers/pv-protection.js';
import { setMaxListeners } from 'node:events';
import { pino } from 'pino';
import { loadCoreconfig } from '../../src/client/coreconfig.js';
import { SharedInformerFactory } from '../../src/client/informer-factory.js';
import { SharedIndexInformer } from '../../src/client/informer.js';
import type { ListerWatcher } from '../../src/client/reflector.js';
import { RestClient, type ResourceRef } from '../../src/client/rest-client.js';
import { PvcProtectionController } from '../../src/daemons/controller-manager/controllers/pvc-protection.js';
import { startApiserver } from '../helpers/apiserver.js';
import { startCluster, waitFor, type Cluster } from './fixtures/cluster.js';

const NAMES = ['pvc-protection', 'pv-protection'] as const;
const NS: ResourceRef = { group: '', version: 'v1', resource: 'namespaces' };
const PVS: ResourceRef = { group: '', version: 'v1', resource: 'persistentvolumes' };
const claims = (namespace = 'default'): ResourceRef => ({ group: '', version: 'v1', resource: 'persistentvolumeclaims', namespace });
const pods = (namespace = 'default'): ResourceRef => ({ group: '', version: 'v1', resource: 'pods', namespace });
const KEEP = 'example.com/keep';

type Volume = Record<string, unknown>;
const claimVolume = (name: string, claimName: string): Volume => ({ name, persistentVolumeClaim: { claimName } });
const ephemeralVolume = (name: string): Volume => ({
  name, ephemeral: { volumeClaimTemplate: { spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } } },
});
/** A scheduled pod (only scheduled pods hold claims, as in Kubernetes). */
const podObject = (name: string, volumes: Volume[], namespace = 'default', nodeName = 'n1'): KubeObject => ({
  apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace },
  spec: { containers: [{ name: 'c', image: 'busybox' }], volumes, ...(nodeName ? { nodeName } : {}) },
});

const missing = async (f: () => Promise<unknown>): Promise<boolean> => {
  try { await f(); return false; } catch (e) { if ((e as { code?: number }).code === 404) return true; throw e; }
};
const phaseOf = (o: KubeObject): string | undefined => (o.status as { phase?: string } | undefined)?.phase;

t.test('--controllers knows pvc-protection and pv-protection; both are implemented and on by default', async (t) => {
  t.same(parseControllerManagerArgs([`--controllers=${NAMES.join(',')}`]).config.controllers, [...NAMES]);
  t.same(parseControllerManagerArgs(['--controllers=*,-pvc-protection,-pv-protection']).config.controllers, ['*', '-pvc-protection', '-pv-protection']);
  t.same(unknownControllers([...NAMES, '-pv-protection']), []);
  for (const n of NAMES) {
    t.ok(isControllerEnabled(n, ['*']), `${n} on by default`);
    t.notOk(isControllerEnabled(n, ['*', `-${n}`]));
    t.ok(enabledControllers(['*']).includes(n));
    t.ok(IMPLEMENTED[n], `${n} implemented`);
  }
  const { controllers, notImplemented } = await selectControllers([...NAMES]);
  t.same(controllers.map((c) => c.name).sort(), [...NAMES].sort());
  t.same(notImplemented, []);
});

t.test('which claims a pod holds, and which objects need work', async (t) => {
  const pod = podObject('web', [claimVolume('data', 'shared'), ephemeralVolume('scratch'), { name: 'tmp', emptyDir: {} }]);
  t.same(claimNamesOf(pod), ['shared', 'web-scratch']);
  pod.metadata!.uid = 'pod-uid';
  const claim = (name: string, owner?: string): KubeObject => ({ metadata: { name, ...(owner ? { ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: 'web', uid: owner, controller: true }] } : {}) } });
  t.ok(podUsesClaim(pod, claim('shared')));
  t.ok(podUsesClaim(pod, claim('web-scratch', 'pod-uid')));
  t.notOk(podUsesClaim(pod, claim('web-scratch')), 'an ephemeral claim the pod does not control');
  t.notOk(podUsesClaim(pod, claim('web-scratch', 'other-uid')));
  t.notOk(podUsesClaim(pod, claim('scratch', 'pod-uid')), 'the ephemeral claim is named after the pod');
  t.notOk(podUsesClaim(pod, claim('web-tmp', 'pod-uid')));
  t.ok(podUsesClaim({ ...pod, status: { phase: 'Succeeded' } }, claim('shared')), 'a finished pod still holds its claims (until it is deleted)');
  t.notOk(podUsesClaim({ ...pod, status: { phase: 'Failed' } }, claim('web-scratch', 'pod-uid')), 'but not its ephemeral ones');
  t.notOk(podUsesClaim({ ...pod, spec: { ...pod.spec as object, nodeName: undefined } }, claim('shared')), 'an unscheduled pod holds nothing');

  const at = '2024-01-01T00:00:00Z';
  t.ok(claimNeedsWork({ metadata: { name: 'a' } }), 'live, no finalizer');
  t.notOk(claimNeedsWork({ metadata: { name: 'a', finalizers: [PVC_PROTECTION_FINALIZER] } }));
  t.ok(claimNeedsWork({ metadata: { name: 'a', deletionTimestamp: at, finalizers: [KEEP, PVC_PROTECTION_FINALIZER] } }));
  t.notOk(claimNeedsWork({ metadata: { name: 'a', deletionTimestamp: at, finalizers: [KEEP] } }), 'deleted without ours: not ours to add');
  t.ok(volumeNeedsWork({ metadata: { name: 'v', finalizers: [KEEP] } }));
  t.notOk(volumeNeedsWork({ metadata: { name: 'v', deletionTimestamp: at } }));
});

/** Protection controllers only; the API server runs without StorageObjectInUseProtection. */
t.test('protection controllers against a real API server', async (t) => {
  const c: Cluster = await startCluster([`--controllers=${NAMES.join(',')}`]);
  t.teardown(() => c.stop());
  let seq = 0;

  const newClaim = (name: string, finalizers?: string[], namespace = 'default'): Promise<KubeObject> => c.client.create(claims(namespace), {
    apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name, namespace, ...(finalizers ? { finalizers } : {}) },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
  });
  const newVolume = (name: string, finalizers?: string[]): Promise<KubeObject> => c.client.create(PVS, {
    apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name, ...(finalizers ? { finalizers } : {}) },
    spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], hostPath: { path: `/tmp/${name}` } },
  });
  const claimGone = (name: string, namespace = 'default'): Promise<boolean> => waitFor(`claim ${namespace}/${name} gone`, () => missing(() => c.client.get(claims(namespace), name)));
  const volumeGone = (name: string): Promise<boolean> => waitFor(`volume ${name} gone`, () => missing(() => c.client.get(PVS, name)));
  const setPhase = (ref: ResourceRef, name: string, phase: string): Promise<KubeObject> =>
    c.client.patch(ref, name, 'merge', { status: { phase } }, { subresource: 'status' });

  /**
   * Waits until the claim controller has handled everything queued before now: one worker takes
   * keys in order and claim events arrive on one watch, so once a claim deleted after them is
   * gone, their syncs have run.
   */
  const claimsSettled = async (namespace = 'default'): Promise<void> => {
    const name = `sentinel-${++seq}`;
    await newClaim(name, [PVC_PROTECTION_FINALIZER], namespace);
    await c.client.delete(claims(namespace), name);
    await claimGone(name, namespace);
  };
  const volumesSettled = async (): Promise<void> => {
    const name = `sentinel-${++seq}`;
    await newVolume(name, [PV_PROTECTION_FINALIZER]);
    await c.client.delete(PVS, name);
    await volumeGone(name);
  };
  const terminating = async (t: Test, ref: ResourceRef, name: string, finalizers: string[]): Promise<void> => {
    const o = await c.client.get(ref, name);
    t.ok(o.metadata?.deletionTimestamp, `${name} is marked for deletion`);
    t.same(o.metadata?.finalizers, finalizers, `${name} keeps its finalizers`);
  };

  await t.test('a claim created without the finalizer gets it', async (t) => {
    await newClaim('plain');
    const got = await waitFor('finalizer added', async () => {
      const o = await c.client.get(claims(), 'plain');
      return o.metadata?.finalizers?.includes(PVC_PROTECTION_FINALIZER) && o;
    });
    t.same(got.metadata?.finalizers, [PVC_PROTECTION_FINALIZER]);
  });

  await t.test('a claim a running pod uses stays until the pod is deleted', async (t) => {
    await newClaim('data', [PVC_PROTECTION_FINALIZER]);
    await c.client.create(pods(), podObject('db', [claimVolume('storage', 'data')]));
    await setPhase(pods(), 'db', 'Running');
    const marked = await c.client.delete(claims(), 'data');
    t.ok(marked.metadata?.deletionTimestamp, 'delete only marks it');
    await claimsSettled();
    await terminating(t, claims(), 'data', [PVC_PROTECTION_FINALIZER]);

    await c.client.delete(pods(), 'db', { gracePeriodSeconds: 0 });
    t.ok(await claimGone('data'), 'released once the pod is gone');
  });

  await t.test('a finished pod holds its claim until the pod is deleted; an unscheduled one holds nothing', async (t) => {
    await newClaim('results', [PVC_PROTECTION_FINALIZER]);
    await c.client.create(pods(), podObject('job-1', [claimVolume('out', 'results')]));
    await setPhase(pods(), 'job-1', 'Succeeded');
    await c.client.delete(claims(), 'results');
    await claimsSettled();
    await terminating(t, claims(), 'results', [PVC_PROTECTION_FINALIZER]);
    await c.client.delete(pods(), 'job-1', { gracePeriodSeconds: 0 });
    t.ok(await claimGone('results'), 'released once the finished pod is deleted');

    await newClaim('pending', [PVC_PROTECTION_FINALIZER]);
    await c.client.create(pods(), podObject('waiting', [claimVolume('out', 'pending')], 'default', ''));
    await c.client.delete(claims(), 'pending');
    t.ok(await claimGone('pending'), 'a pod not yet scheduled does not hold it');
  });

  await t.test('a pod that finishes releases its ephemeral claim', async (t) => {
    const p = await c.client.create(pods(), podObject('job-2', [ephemeralVolume('logs')]));
    await c.client.create(claims(), {
      apiVersion: 'v1', kind: 'PersistentVolumeClaim',
      metadata: { name: 'job-2-logs', finalizers: [PVC_PROTECTION_FINALIZER], ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: 'job-2', uid: p.metadata!.uid!, controller: true }] },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
    });
    await setPhase(pods(), 'job-2', 'Running');
    await c.client.delete(claims(), 'job-2-logs');
    await claimsSettled();
    await terminating(t, claims(), 'job-2-logs', [PVC_PROTECTION_FINALIZER]);
    await setPhase(pods(), 'job-2', 'Failed');
    t.ok(await claimGone('job-2-logs'));
  });

  await t.test('a pod in another namespace does not hold the claim', async (t) => {
    await c.client.create(NS, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'other' } });
    await newClaim('shared', [PVC_PROTECTION_FINALIZER]);
    await c.client.create(pods('other'), podObject('reader', [claimVolume('data', 'shared')], 'other'));
    await c.client.delete(claims(), 'shared');
    t.ok(await claimGone('shared'));
  });

  await t.test('ephemeral volumes hold the claim named <pod>-<volume> that the pod controls', async (t) => {
    const p = await c.client.create(pods(), podObject('eph', [ephemeralVolume('scratch')]));
    const owned = { ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: 'eph', uid: p.metadata!.uid!, controller: true }] };
    await c.client.create(claims(), {
      apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'eph-scratch', finalizers: [PVC_PROTECTION_FINALIZER], ...owned },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
    });
    await newClaim('eph-other', [PVC_PROTECTION_FINALIZER]);
    await newClaim('scratch', [PVC_PROTECTION_FINALIZER]);
    await c.client.delete(claims(), 'eph-scratch');
    await c.client.delete(claims(), 'eph-other');
    await c.client.delete(claims(), 'scratch');
    t.ok(await claimGone('eph-other'), 'a claim named after another volume is not held');
    t.ok(await claimGone('scratch'), 'nor one named after the volume alone');
    await claimsSettled();
    await terminating(t, claims(), 'eph-scratch', [PVC_PROTECTION_FINALIZER]);
    await c.client.delete(pods(), 'eph', { gracePeriodSeconds: 0 });
    t.ok(await claimGone('eph-scratch'));
  });

  await t.test("other finalizers on claims are kept and still block", async (t) => {
    await newClaim('kept', [KEEP]);
    const got = await waitFor('finalizer added', async () => {
      const o = await c.client.get(claims(), 'kept');
      return o.metadata?.finalizers?.includes(PVC_PROTECTION_FINALIZER) && o;
    });
    t.same(got.metadata?.finalizers, [KEEP, PVC_PROTECTION_FINALIZER]);
    await c.client.delete(claims(), 'kept');
    const marked = await waitFor('protection finalizer removed', async () => {
      const o = await c.client.get(claims(), 'kept');
      return !o.metadata?.finalizers?.includes(PVC_PROTECTION_FINALIZER) && o;
    });
    t.same(marked.metadata?.finalizers, [KEEP]);
    t.ok(marked.metadata?.deletionTimestamp, 'still terminating on the other finalizer');
    await c.client.update(claims(), { ...marked, metadata: { ...marked.metadata, finalizers: [] } });
    t.ok(await claimGone('kept'));
  });

  await t.test('a volume created without the finalizer gets it; other finalizers are kept', async (t) => {
    await newVolume('pv-plain');
    await newVolume('pv-kept', [KEEP]);
    for (const [name, want] of [['pv-plain', [PV_PROTECTION_FINALIZER]], ['pv-kept', [KEEP, PV_PROTECTION_FINALIZER]]] as const) {
      const got = await waitFor(`finalizer on ${name}`, async () => {
        const o = await c.client.get(PVS, name);
        return o.metadata?.finalizers?.includes(PV_PROTECTION_FINALIZER) && o;
      });
      t.same(got.metadata?.finalizers, want, name);
    }
    await c.client.delete(PVS, 'pv-kept');
    const marked = await waitFor('protection finalizer removed', async () => {
      const o = await c.client.get(PVS, 'pv-kept');
      return !o.metadata?.finalizers?.includes(PV_PROTECTION_FINALIZER) && o;
    });
    t.same(marked.metadata?.finalizers, [KEEP]);
    await c.client.update(PVS, { ...marked, metadata: { ...marked.metadata, finalizers: [] } });
    t.ok(await volumeGone('pv-kept'));
  });

  await t.test('a bound volume stays until it is no longer bound', async (t) => {
    for (const [name, next] of [['pv-bound-1', 'Released'], ['pv-bound-2', 'Available']] as const) {
      await newVolume(name, [PV_PROTECTION_FINALIZER]);
      t.equal(phaseOf(await setPhase(PVS, name, 'Bound')), 'Bound');
      await c.client.delete(PVS, name);
      await volumesSettled();
      await terminating(t, PVS, name, [PV_PROTECTION_FINALIZER]);
      await setPhase(PVS, name, next);
      t.ok(await volumeGone(name), `${name} goes once ${next}`);
    }
  });

  await t.test('an unbound volume goes at once', async (t) => {
    await newVolume('pv-free', [PV_PROTECTION_FINALIZER]);
    await c.client.delete(PVS, 'pv-free');
    t.ok(await volumeGone('pv-free'));
  });
});

/** A pod informer that lists nothing and never hears an event: a cache that is always behind. */
function blindPodInformer(): SharedIndexInformer {
  const lw: ListerWatcher = {
    list: async () => ({ apiVersion: 'v1', kind: 'PodList', metadata: { resourceVersion: '1' }, items: [] }),
    watch: async (o) => ({
      [Symbol.asyncIterator]: () => ({
        next: () => new Promise((resolve) => {
          const end = (): void => resolve({ done: true, value: undefined });
          if (!o.signal || o.signal.aborted) end(); else o.signal.addEventListener('abort', end, { once: true });
        }),
      }),
    }),
  };
  return new SharedIndexInformer({ lw });
}

t.test('a pod the informer cache has not seen still holds the claim (live list)', async (t) => {
  const api = await startApiserver();
  const connection = await loadCoreconfig({ path: api.coreconfigPath });
  const client = new RestClient({ connection, qps: 0, contentType: 'application/json' });
  const real = new SharedInformerFactory({ client, minResyncPeriodMs: 0 });
  const blind = blindPodInformer();
  const ac = new AbortController();
  setMaxListeners(0, ac.signal);
  // Claims come from a real informer; pods from the blind one, so only the live list sees them.
  const informers = {
    informerFor: (k: ResourceRef) => (k.resource === 'pods' ? blind : real.informerFor(k)),
    start: (signal: AbortSignal) => { real.start(signal); },
  } as unknown as SharedInformerFactory;
  const blindRun = blind.run(ac.signal);
  const done = new PvcProtectionController().run({
    client, informers, config: parseControllerManagerArgs([]).config, log: pino({ level: 'silent' }), signal: ac.signal,
  });
  t.teardown(async () => { ac.abort(); await done.catch(() => undefined); await blindRun; await real.stopped(); client.close(); await api.stop(); });

  const newClaim = (name: string): Promise<KubeObject> => client.create(claims(), {
    apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name, finalizers: [PVC_PROTECTION_FINALIZER] },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
  });
  const gone = (name: string): Promise<boolean> => waitFor(`claim ${name} gone`, () => missing(() => client.get(claims(), name)));
  await newClaim('held');
  await newClaim('free');
  await client.create(pods(), podObject('user', [claimVolume('data', 'held')]));
  await client.delete(claims(), 'held');
  await client.delete(claims(), 'free');
  t.ok(await gone('free'), 'an unused claim goes (its sync ran after the held one)');
  const held = await client.get(claims(), 'held');
  t.ok(held.metadata?.deletionTimestamp);
  t.same(held.metadata?.finalizers, [PVC_PROTECTION_FINALIZER], 'the live list found the pod');
  // The blind cache never reports the pod's deletion: a change to the claim queues it again.
  await client.delete(pods(), 'user', { gracePeriodSeconds: 0 });
  await client.patch(claims(), 'held', 'merge', { metadata: { labels: { poke: '1' } } });
  t.ok(await gone('held'));
});

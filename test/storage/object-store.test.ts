// Object store behaviour on real backends: LevelDB (with and without the watch cache) and,
// when installed, etcd.
import t, { type Test } from 'tap';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeObject } from '../../src/api/resources/types.js';
import { openLevelBackend } from '../../src/storage/leveldb/level-backend.js';
import { openEtcdBackend } from '../../src/storage/etcd/etcd-backend.js';
import { createObjectStore } from '../../src/storage/object-store.js';
import type { ObjectRef, ObjectStore } from '../../src/storage/object-store-types.js';
import type { Backend } from '../../src/storage/interface.js';
import { objectKey } from '../../src/storage/keys.js';
import { etcdAvailable, startEtcd } from '../helpers/etcd.js';

type Tap = Test;
interface Env { store: ObjectStore; backend: Backend; prefix: string; }
type Opener = (t: Tap, cache: boolean) => Promise<Env>;

const pod = (name: string, ns = 'default', extra: Record<string, unknown> = {}): KubeObject =>
  // A kind without a schema declaration: the store keeps it as given (built-in kinds are put in
  // Go's form, tested in test/api/codec), so an adopted object is the result itself.
  ({ kind: 'Widget', apiVersion: 'test.corectl.io/v1', metadata: { name, namespace: ns, uid: `uid-${name}`, labels: { app: 'a' } }, spec: { n: 0 }, ...extra });
const ref = (name: string, ns = 'default'): ObjectRef => ({ group: '', resource: 'pods', namespace: ns, name });

function storeOn(backend: Backend, prefix: string, cache: boolean): ObjectStore {
  return createObjectStore({
    backendFor: () => backend, prefix,
    watchCache: { enabled: cache, defaultSize: 100, sizes: {} },
  });
}

const openLevel: Opener = async (t, cache) => {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-os-'));
  const backend = await openLevelBackend({ dir });
  const store = storeOn(backend, '/registry', cache);
  t.teardown(async () => { await store.close(); await backend.close(); await rm(dir, { recursive: true, force: true }); });
  return { store, backend, prefix: '/registry' };
};

async function until<T>(f: () => Promise<T | undefined>, what: string, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (let i = 0; ; i++) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, Math.min(200, 5 * 2 ** i)));
  }
}

function suite(t: Tap, name: string, open: Opener, cache: boolean): Promise<unknown> {
  return t.test(`${name} (watch cache ${cache ? 'on' : 'off'})`, async (t) => {
    await t.test('create, get, keys and resourceVersion', async (t) => {
      const { store, backend, prefix } = await open(t, cache);
      const created = await store.create(ref('a'), pod('a'));
      t.match(created.metadata?.resourceVersion, /^\d+$/);
      const raw = await backend.get(`${prefix}/pods/default/a`);
      t.equal(String(raw.kv?.modRevision), created.metadata?.resourceVersion, 'core namespaced key layout; RV = modRevision');
      t.notOk(JSON.parse(raw.kv!.value.toString()).metadata.resourceVersion, 'resourceVersion is not stored');
      const got = await store.get(ref('a'));
      t.same(got, created);
      await store.create({ group: '', resource: 'nodes', namespace: '', name: 'n1' }, { metadata: { name: 'n1' } });
      t.ok((await backend.get(`${prefix}/minions/n1`)).kv, 'cluster-scoped, nodes kept as minions');
      await store.create({ group: 'apps', resource: 'deployments', namespace: 'x', name: 'd' }, { metadata: { name: 'd' } });
      t.ok((await backend.get(`${prefix}/deployments/x/d`)).kv, 'built-in group: resource only');
      await store.create({ group: 'example.com', resource: 'widgets', namespace: 'x', name: 'w' }, { metadata: { name: 'w' } });
      t.ok((await backend.get(`${prefix}/example.com/widgets/x/w`)).kv, 'other groups: group/resource');
      await t.rejects(store.create(ref('b'), { metadata: { name: 'b', resourceVersion: '5' } }), { code: 'InvalidArgument' });
      await t.rejects(store.create(ref('a'), pod('a')), { code: 'KeyExists' });
      await t.rejects(store.get(ref('zz')), { code: 'KeyNotFound' });
      const entry = await store.getEntry(ref('a'));
      t.equal(String(entry?.kv.modRevision), created.metadata?.resourceVersion, 'getEntry: the stored entry');
      t.same(await entry!.decode(entry!.kv), created, 'getEntry: and its decoder');
      const cached = await until(async () => store.getEntry(ref('a'), { resourceVersion: '0' }), 'entry at resourceVersion 0');
      t.equal(cached.kv.modRevision, entry!.kv.modRevision, 'getEntry at resourceVersion 0');
      t.equal(await store.getEntry(ref('zz')), undefined, 'getEntry: undefined when absent');
      t.throws(() => objectKey(prefix, ref('../x')), { code: 'InvalidArgument' });
      const dry = await store.create(ref('dry'), pod('dry'), { dryRun: true });
      t.equal(dry.metadata?.name, 'dry');
      await t.rejects(store.get(ref('dry')), { code: 'KeyNotFound' }, 'dry-run create never writes');
      t.equal(await store.count('pods', ''), 1);
    });

    await t.test('create: the input is copied unless adopted', async (t) => {
      const { store } = await open(t, cache);
      const kept = pod('kept');
      const copied = await store.create(ref('kept'), kept);
      t.not(copied, kept, 'without adopt: a copy');
      t.equal(kept.metadata?.resourceVersion, undefined, 'and the input is left alone');
      const given = pod('given');
      const adopted = await store.create(ref('given'), given, { adopt: true });
      t.equal(adopted, given, 'adopted: the input itself is the result');
      t.equal(adopted.metadata?.resourceVersion, String((await store.getEntry(ref('given')))!.kv.modRevision), 'with its resourceVersion');
      t.same(adopted, await store.get(ref('given')), 'equal to what is stored');
      // What JSON would change is never handed back as is: the result is what the stored text decodes to.
      const odd = { ...pod('odd'), spec: { containers: [], priority: undefined, ratio: -0 } };
      const out = await store.create(ref('odd'), odd, { adopt: true });
      t.not(out, odd);
      t.same(out, await store.get(ref('odd')));
      t.notOk('priority' in (out.spec as Record<string, unknown>), 'undefined members are gone, as after a parse');
    });

    await t.test('guaranteedUpdate: conflicts, preconditions, no-op, create-on-update, dryRun', async (t) => {
      const { store } = await open(t, cache);
      const c = await store.create(ref('a'), pod('a'));
      // 20 concurrent increments: every one applied exactly once through CAS retries.
      await Promise.all(Array.from({ length: 20 }, () => store.guaranteedUpdate(ref('a'), (cur) => {
        const o = cur!;
        (o['spec'] as { n: number }).n++;
        return o;
      })));
      const after = await store.get(ref('a'));
      t.equal((after['spec'] as { n: number }).n, 20, 'no lost update');
      t.ok(Number(after.metadata!.resourceVersion) > Number(c.metadata!.resourceVersion));
      const same = await store.guaranteedUpdate(ref('a'), (cur) => cur!);
      t.equal(same.metadata?.resourceVersion, after.metadata?.resourceVersion, 'deep-equal result: no write');
      // The same members in another order (equal length, other bytes) are still no change.
      const reversed = (o: Record<string, unknown>): Record<string, unknown> =>
        Object.fromEntries(Object.entries(o).reverse().map(([k, v]) => [k, v !== null && typeof v === 'object' && !Array.isArray(v) ? reversed(v as Record<string, unknown>) : v]));
      const reordered = await store.guaranteedUpdate(ref('a'), (cur) => reversed(cur!) as NonNullable<typeof cur>);
      t.equal(reordered.metadata?.resourceVersion, after.metadata?.resourceVersion, 'reordered keys: no write');
      // A change that keeps the length (20 -> 21) is written.
      const sameLength = await store.guaranteedUpdate(ref('a'), (cur) => ({ ...cur!, spec: { n: 21 } }));
      t.ok(Number(sameLength.metadata?.resourceVersion) > Number(after.metadata?.resourceVersion), 'an equal-length change is written');
      t.same((await store.get(ref('a')))['spec'], { n: 21 });
      const back = await store.guaranteedUpdate(ref('a'), (cur) => ({ ...cur!, spec: { n: 20 } }));
      t.ok(Number(back.metadata?.resourceVersion) > Number(sameLength.metadata?.resourceVersion), 'and back');
      const after2 = await store.get(ref('a'));
      await t.rejects(store.guaranteedUpdate(ref('a'), (cur) => cur!, { preconditions: { uid: 'other' } }),
        { code: 'Conflict', message: /Precondition failed: UID in precondition: other/ });
      await t.rejects(store.guaranteedUpdate(ref('a'), (cur) => cur!, { preconditions: { resourceVersion: c.metadata!.resourceVersion! } }),
        { code: 'Conflict', message: /ResourceVersion in precondition/ });
      const ok = await store.guaranteedUpdate(ref('a'), (cur) => ({ ...cur!, spec: { n: 100 } }),
        { preconditions: { uid: 'uid-a', resourceVersion: after2.metadata!.resourceVersion! } });
      t.same(ok['spec'], { n: 100 });
      const dry = await store.guaranteedUpdate(ref('a'), (cur) => ({ ...cur!, spec: { n: -1 } }), { dryRun: true });
      t.same(dry['spec'], { n: -1 });
      t.same((await store.get(ref('a')))['spec'], { n: 100 }, 'dry-run update never writes');
      const made = await store.guaranteedUpdate(ref('new'), (cur) => {
        t.equal(cur, undefined, 'missing object: tryUpdate gets undefined');
        return pod('new');
      });
      t.equal((await store.get(ref('new'))).metadata?.resourceVersion, made.metadata?.resourceVersion);
      await t.rejects(store.guaranteedUpdate(ref('a'), () => { throw new Error('nope'); }), { message: 'nope' });
    });

    await t.test('delete: preconditions, dryRun, last state', async (t) => {
      const { store } = await open(t, cache);
      const c = await store.create(ref('a'), pod('a'));
      await t.rejects(store.delete(ref('a'), { preconditions: { uid: 'x' } }), { code: 'Conflict' });
      const dry = await store.delete(ref('a'), { dryRun: true });
      t.equal(dry.metadata?.name, 'a');
      t.ok(await store.get(ref('a')), 'dry-run delete never writes');
      const last = await store.delete(ref('a'), { preconditions: { uid: 'uid-a', resourceVersion: c.metadata!.resourceVersion! } });
      t.same(last, c, 'returns the last state');
      await t.rejects(store.get(ref('a')), { code: 'KeyNotFound' });
      await t.rejects(store.delete(ref('a')), { code: 'KeyNotFound' });
    });

    await t.test('ttl passes through', async (t) => {
      const { store } = await open(t, cache);
      await store.create(ref('e'), pod('e'), { ttlSeconds: 1 });
      await until(() => store.get(ref('e')).then(() => undefined, (e: { code?: string }) => (e.code === 'KeyNotFound' ? true : undefined)), 'ttl expiry', 15_000);
      t.pass('expired');
    });

    await t.test('lists: resourceVersion semantics, filter before limit, pagination', async (t) => {
      const { store, backend } = await open(t, cache);
      for (let i = 0; i < 30; i++) await store.create(ref(`p${String(i).padStart(2, '0')}`, i % 2 ? 'odd' : 'even'), pod(`p${String(i).padStart(2, '0')}`, i % 2 ? 'odd' : 'even', { spec: { n: i } }));
      const all = await store.list({ group: '', resource: 'pods', namespace: '' });
      t.equal(all.items.length, 30);
      t.equal(all.resourceVersion, String(await backend.currentRevision()), 'consistent list at the current revision');
      t.equal((await store.list({ group: '', resource: 'pods', namespace: 'odd' })).items.length, 15, 'namespace scope');
      const zero = await store.list({ group: '', resource: 'pods', namespace: '', resourceVersion: '0' });
      t.equal(zero.items.length, 30, "RV '0' list");
      await t.rejects(store.list({ group: '', resource: 'pods', namespace: '', resourceVersion: String(Number(all.resourceVersion) + 1000) }),
        { code: 'FutureRevision' });
      const past = await store.list({ group: '', resource: 'pods', namespace: '', resourceVersion: String(Number(all.resourceVersion) - 10), resourceVersionMatch: 'Exact' });
      t.equal(past.items.length, 20, 'Exact: a history read');
      t.equal(past.resourceVersion, String(Number(all.resourceVersion) - 10));
      // Filter applied before the limit: pages are full.
      const bigN = (o: KubeObject): boolean => (o['spec'] as { n: number }).n >= 10;
      const p1 = await store.list({ group: '', resource: 'pods', namespace: '', limit: 7, filter: bigN });
      t.equal(p1.items.length, 7, 'filtered page is full');
      t.ok(p1.continue);
      t.equal(p1.remainingItemCount, undefined, 'no remainingItemCount with a filter');
      const p2 = await store.list({ group: '', resource: 'pods', namespace: '', limit: 100, filter: bigN, continue: p1.continue });
      t.equal(p1.items.length + p2.items.length, 20);
      t.notOk(p2.continue, 'last page has no token');
      // remainingItemCount without a filter.
      const q1 = await store.list({ group: '', resource: 'pods', namespace: '', limit: 10 });
      t.equal(q1.remainingItemCount, 20);
      const q2 = await store.list({ group: '', resource: 'pods', namespace: '', limit: 10, continue: q1.continue });
      t.equal(q2.remainingItemCount, 10);
      await t.rejects(store.list({ group: '', resource: 'pods', namespace: '', continue: 'garbage!' }), { code: 'InvalidArgument' });
    });

    await t.test('pagination is consistent under concurrent writes; expired token → Compacted', async (t) => {
      const { store, backend } = await open(t, cache);
      for (let i = 0; i < 50; i++) await store.create(ref(`p${String(i).padStart(3, '0')}`), pod(`p${String(i).padStart(3, '0')}`));
      let stop = false;
      let n = 0;
      const writer = (async () => {
        while (!stop) {
          const i = n++;
          await store.create(ref(`q${String(i).padStart(4, '0')}`), pod(`q${i}`));
          if (i % 2) await store.delete(ref(`p${String(i % 50).padStart(3, '0')}`)).catch(() => undefined);
          await new Promise((r) => setImmediate(r));
        }
      })();
      const first = await store.list({ group: '', resource: 'pods', namespace: '', limit: 7 });
      const names = first.items.map((o) => o.metadata!.name!);
      try {
        let token = first.continue;
        while (token) {
          const page = await store.list({ group: '', resource: 'pods', namespace: '', limit: 7, continue: token });
          t.equal(page.resourceVersion, first.resourceVersion, 'every page at the first page revision');
          names.push(...page.items.map((o) => o.metadata!.name!));
          token = page.continue;
        }
      } finally {
        stop = true;
        await writer;
      }
      t.ok(n > 0, 'writes happened meanwhile');
      t.equal(new Set(names).size, names.length, 'no duplicates');
      const snapshot = await store.list({ group: '', resource: 'pods', namespace: '', resourceVersion: first.resourceVersion, resourceVersionMatch: 'Exact' });
      t.same(names, snapshot.items.map((o) => o.metadata!.name!), 'no gaps: pages equal the snapshot');
      // Expire the token: compact past its revision.
      const again = await store.list({ group: '', resource: 'pods', namespace: '', limit: 5 });
      await store.create(ref('later'), pod('later'));
      await backend.compact(await backend.currentRevision());
      await t.rejects(store.list({ group: '', resource: 'pods', namespace: '', limit: 5, continue: again.continue }), { code: 'Compacted' });
    });
  });
}

for (const cache of [false, true]) await suite(t, 'leveldb', openLevel, cache);

await t.test('etcd', { skip: etcdAvailable() ? false : 'etcd not installed' }, async (t) => {
  const etcd = await startEtcd();
  t.teardown(() => etcd.stop());
  const backend = await openEtcdBackend({ endpoints: [etcd.endpoint] });
  t.teardown(() => backend.close());
  let n = 0;
  const openEtcd: Opener = async (t, cache) => {
    const prefix = `/case${n++}/registry`;
    const store = storeOn(backend, prefix, cache);
    t.teardown(() => store.close());
    return { store, backend, prefix };
  };
  for (const cache of [false, true]) await suite(t, 'etcd', openEtcd, cache);
});

/**
 * The create path's shortcuts keep the contract: keys built from a resource's prefix equal
 * objectKey(); LevelDB writes report every failure as a rejected promise (never a synchronous
 * throw) and resolve with their own revision; a watch sees exactly its keys of a batch shared
 * by several writers (the hub passes a batch on uncopied only when all of it is the watch's).
 */
import t, { type Test } from 'tap';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { objectKey, objectKeyUnder, resourcePrefix } from '../../src/storage/keys.js';
import { openLevelBackend, type LevelBackend } from '../../src/storage/leveldb/level-backend.js';
import { MAX_VALUE_BYTES, isStorageError } from '../../src/storage/errors.js';
import type { WatchBatch } from '../../src/storage/interface.js';

async function open(t: Test): Promise<LevelBackend> {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-write-path-'));
  const b = await openLevelBackend({ dir });
  t.teardown(async () => {
    await b.close();
    await rm(dir, { recursive: true, force: true });
  });
  return b;
}

t.test('objectKeyUnder(resourcePrefix(...)) is objectKey', async (t) => {
  const refs = [
    { group: '', resource: 'configmaps', namespace: 'ns', name: 'a' },
    { group: '', resource: 'nodes', namespace: '', name: 'n1' },
    { group: '', resource: 'services', namespace: 'default', name: 'kubernetes' },
    { group: 'apps', resource: 'deployments', namespace: 'x', name: 'd' },
    { group: 'example.com', resource: 'widgets', namespace: 'x', name: 'w' },
    { group: 'apiextensions.k8s.io', resource: 'customresourcedefinitions', namespace: '', name: 'w.example.com' },
  ];
  for (const prefix of ['/registry', '', '/a/b']) {
    for (const r of refs) {
      t.equal(objectKeyUnder(resourcePrefix(prefix, r.group, r.resource), r.namespace, r.name), objectKey(prefix, r), `${prefix} ${r.group}/${r.resource}`);
    }
  }
  for (const [ns, name] of [['ns', ''], ['ns', '..'], ['a/b', 'x'], ['ns', 'a/b'], ['.', 'x']] as const) {
    t.throws(() => objectKeyUnder('/registry/configmaps/', ns, name), { code: 'InvalidArgument' }, `${ns} ${name}`);
  }
});

t.test('create failures are rejections, never synchronous throws', async (t) => {
  const b = await open(t);
  const v = Buffer.from('v');
  await b.create('/k', v);
  const calls: Array<[string, () => Promise<unknown>, string]> = [
    ['existing key', () => b.create('/k', v), 'KeyExists'],
    ['empty key', () => b.create('', v), 'InvalidArgument'],
    ['NUL in key', () => b.create('/a\u0000b', v), 'InvalidArgument'],
    ['value too large', () => b.create('/big', Buffer.alloc(MAX_VALUE_BYTES + 1)), 'ValueTooLarge'],
    ['bad ttl', () => b.create('/ttl', v, { ttlSeconds: -1 }), 'InvalidArgument'],
    ['aborted', () => b.create('/ab', v, { signal: AbortSignal.abort() }), 'Unavailable'],
  ];
  for (const [what, call, code] of calls) {
    let p: Promise<unknown> | undefined;
    t.doesNotThrow(() => { p = call(); }, `${what}: no synchronous throw`);
    const err = await p!.then(() => undefined, (e: unknown) => e);
    t.ok(isStorageError(err) && err.code === code, `${what}: rejects with ${code}`);
  }
  t.equal((await b.get('/big')).kv, undefined, 'nothing was written by a failed create');
});

t.test('concurrent creates share a batch; each resolves with its own revision; watches see only their keys', async (t) => {
  const b = await open(t);
  const ac = new AbortController();
  t.teardown(() => ac.abort());
  const base = await b.currentRevision();
  const all = b.watch('/', { prefix: true, fromRevision: base + 1, signal: ac.signal });
  const onlyA = b.watch('/a/', { prefix: true, fromRevision: base + 1, signal: ac.signal });
  const one = b.watch('/b/2', { fromRevision: base + 1, signal: ac.signal });
  // Interleaved keys, all decided in one synchronous run: one commit group.
  const keys = ['/a/1', '/b/1', '/a/2', '/b/2', '/a/3', '/c/1'];
  const results = await Promise.all(keys.map((k) => b.create(k, Buffer.from(k))));
  t.same(results.map((r) => r.revision), keys.map((_k, i) => base + 1 + i), 'revisions in submission order');
  t.equal(b.stats.maxBatchWrites >= 2, true, 'the writes shared a batch');
  const take = async (w: AsyncIterable<WatchBatch>, n: number): Promise<string[]> => {
    const got: string[] = [];
    for await (const batch of w) {
      for (const e of batch.events) got.push(`${e.kv.key}@${e.kv.modRevision}=${e.kv.value.toString()}`);
      if (got.length >= n) break;
    }
    return got;
  };
  const expect = (pred: (k: string) => boolean): string[] =>
    keys.map((k, i) => [k, base + 1 + i] as const).filter(([k]) => pred(k)).map(([k, r]) => `${k}@${r}=${k}`);
  t.same(await take(all, 6), expect(() => true), 'prefix watch over everything');
  t.same(await take(onlyA, 3), expect((k) => k.startsWith('/a/')), 'prefix watch over /a/');
  t.same(await take(one, 1), expect((k) => k === '/b/2'), 'single-key watch');
  for (const k of keys) t.equal((await b.get(k)).kv?.value.toString(), k, `${k} readable`);
});

// The LevelDB layout's format 2 (values only in r/, k/ a 24-byte pointer; layout.ts) and
// directories written by format 1 (k/ records carrying the value inline): such a directory is
// read as it is, migrated on open (m/format = 2), and stays consistent; so does one whose
// migration was interrupted (k/ records of both forms). Format 1 fixtures come from a small
// writer of the old records below, not from old code.
import t, { type Test } from 'tap';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClassicLevel } from 'classic-level';
import { openLevelBackend } from '../../src/storage/leveldb/level-backend.js';
import { verifyLevelStore } from '../../src/storage/leveldb/verify.js';
import {
  HISTORY_DELETE, HISTORY_PUT, META_FORMAT, META_REV, encodeLogRecord, encodeRev, historyKey, indexKey, logKey, ttlKey,
} from '../../src/storage/leveldb/layout.js';
import { collectEvents } from './conformance.js';

type Db = ClassicLevel<string, Buffer>;

async function tempDir(t: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-leveldb-format-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

async function withDb<T>(dir: string, f: (db: Db) => Promise<T>): Promise<T> {
  const db: Db = new ClassicLevel<string, Buffer>(dir, { keyEncoding: 'utf8', valueEncoding: 'buffer' });
  await db.open();
  try {
    return await f(db);
  } finally {
    await db.close();
  }
}

/** A format 1 k/ record: {create, mod, version, expireAt} as 6-byte big-endian integers, then the value. */
function oldIndexRecord(create: number, mod: number, version: number, expireAt: number, value: Buffer): Buffer {
  const b = Buffer.alloc(24 + value.length);
  b.writeUIntBE(create, 0, 6);
  b.writeUIntBE(mod, 6, 6);
  b.writeUIntBE(version, 12, 6);
  b.writeUIntBE(expireAt, 18, 6);
  value.copy(b, 24);
  return b;
}

const v = (s: string): Buffer => Buffer.from(s);

/**
 * Writes the worked example of layout.ts the way format 1 did (no m/format):
 *   rev 2 create /a a1; rev 3 update /a a2; rev 4 create /b b1; rev 5 delete /b;
 *   rev 6 create /c c1 (expires in an hour).
 * With `interrupted`, /c's k/ record is already a pointer (a migration cut short).
 */
async function writeFormat1(dir: string, interrupted: boolean): Promise<{ expireAt: number }> {
  const expireAt = Date.now() + 3_600_000;
  await withDb(dir, async (db) => {
    const put = (key: string, rev: number, create: number, version: number, prev: number, value: Buffer) => [
      { type: 'put' as const, key: logKey(rev), value: encodeLogRecord({ type: 'PUT', key, createRevision: create, version, prevRev: prev, value }) },
      { type: 'put' as const, key: historyKey(key, rev), value: HISTORY_PUT },
    ];
    const c = oldIndexRecord(6, 6, 1, expireAt, v('c1'));
    await db.batch([
      ...put('/x/a', 2, 2, 1, 0, v('a1')),
      ...put('/x/a', 3, 2, 2, 2, v('a2')),
      ...put('/x/b', 4, 4, 1, 0, v('b1')),
      { type: 'put', key: logKey(5), value: encodeLogRecord({ type: 'DELETE', key: '/x/b', createRevision: 0, version: 0, prevRev: 4, value: Buffer.alloc(0) }) },
      { type: 'put', key: historyKey('/x/b', 5), value: HISTORY_DELETE },
      ...put('/x/c', 6, 6, 1, 0, v('c1')),
      { type: 'put', key: ttlKey(expireAt, '/x/c'), value: Buffer.alloc(0) },
      { type: 'put', key: indexKey('/x/a'), value: oldIndexRecord(2, 3, 2, 0, v('a2')) },
      { type: 'put', key: indexKey('/x/c'), value: interrupted ? c.subarray(0, 24) : c },
      { type: 'put', key: META_REV, value: encodeRev(6) },
    ], { sync: true });
  });
  return { expireAt };
}

async function indexRecordLengths(dir: string): Promise<Record<string, number>> {
  return withDb(dir, async (db) => {
    const out: Record<string, number> = {};
    for (const [k, val] of await db.iterator({ gte: 'k/', lt: 'k0' }).all()) out[k] = val.length;
    return out;
  });
}

for (const interrupted of [false, true]) {
  t.test(`a format 1 directory${interrupted ? ' whose migration was interrupted' : ''} is read and migrated on open`, async (t) => {
    const dir = await tempDir(t);
    await writeFormat1(dir, interrupted);
    const before = await verifyLevelStore(dir);
    t.same(before.problems, [], 'the fixture is a consistent format 1 store');
    t.equal(before.format, 1);

    let b = await openLevelBackend({ dir });
    t.equal(await b.currentRevision(), 6);
    const a = await b.get('/x/a');
    t.match(a, { revision: 6, kv: { key: '/x/a', createRevision: 2, modRevision: 3, version: 2 } });
    t.equal(a.kv?.value.toString(), 'a2');
    t.equal((await b.get('/x/b')).kv, undefined);
    const r = await b.range('/x/', { prefix: true });
    t.same(r.kvs.map((kv) => `${kv.key}=${kv.value.toString()}@${kv.modRevision}`), ['/x/a=a2@3', '/x/c=c1@6']);
    const past = await b.range('/x/', { prefix: true, revision: 4 });
    t.same(past.kvs.map((kv) => `${kv.key}=${kv.value.toString()}`), ['/x/a=a2', '/x/b=b1'], 'history reads');
    const evs = await collectEvents(b.watch('/x/', { prefix: true, fromRevision: 3 }), 4);
    t.same(evs.map((e) => `${e.type} ${e.kv.key}@${e.kv.modRevision} prev ${e.prevKv?.value.toString() ?? '-'}`),
      ['PUT /x/a@3 prev a1', 'PUT /x/b@4 prev -', 'DELETE /x/b@5 prev b1', 'PUT /x/c@6 prev -'], 'history replay with prevKv');
    // An update reads the current value for prevKv from r/ (nothing is cached after an open).
    const w = b.watch('/x/a');
    const next = collectEvents(w, 1);
    const u = await b.update('/x/a', v('a3'), 3);
    t.equal(u.revision, 7);
    t.match(await next, [{ type: 'PUT', kv: { modRevision: 7, version: 3 }, prevKv: { modRevision: 3 } }]);
    t.equal((await next)[0]!.prevKv!.value.toString(), 'a2');
    const d = await b.delete('/x/c');
    t.equal(d.prevKv.value.toString(), 'c1', 'prevKv of a delete of a migrated key');
    await b.close();

    const after = await verifyLevelStore(dir);
    t.same(after.problems, [], 'consistent after migration and writes');
    t.equal(after.format, 2);
    t.same(await indexRecordLengths(dir), { 'k//x/a': 24 }, 'k/ records are pointers');

    b = await openLevelBackend({ dir });
    t.equal((await b.get('/x/a')).kv?.value.toString(), 'a3', 'reopens as format 2');
    t.equal(await b.currentRevision(), 8);
    await b.close();
  });
}

t.test('a new directory is format 2 and never stores a value twice', async (t) => {
  const dir = await tempDir(t);
  const b = await openLevelBackend({ dir });
  const c = await b.create('/y/a', v('x'.repeat(1000)));
  await b.update('/y/a', v('y'.repeat(1000)), c.revision);
  await b.create('/y/b', v('z'.repeat(1000)), { ttlSeconds: 600 });
  await b.close();
  const report = await verifyLevelStore(dir);
  t.same(report.problems, []);
  t.equal(report.format, 2);
  t.same(await indexRecordLengths(dir), { 'k//y/a': 24, 'k//y/b': 24 });
  const format = await withDb(dir, (db) => db.get(META_FORMAT));
  t.equal(format?.toString(), '2');
});

t.test('a directory of an unknown (newer) format is refused', async (t) => {
  const dir = await tempDir(t);
  await withDb(dir, (db) => db.put(META_FORMAT, v('9')));
  await t.rejects(openLevelBackend({ dir }), { code: 'Unavailable', message: /layout format 9/ });
  // The refusal released the directory: a later open (after fixing it) works.
  await withDb(dir, (db) => db.del(META_FORMAT));
  const b = await openLevelBackend({ dir });
  await b.close();
});

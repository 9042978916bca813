// Periodic compaction on a real LevelDB: each round compacts to the revision seen one round before.
import t from 'tap';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openLevelBackend } from '../../src/storage/leveldb/level-backend.js';
import { startCompactor } from '../../src/storage/compactor.js';

t.test('compacts to the previous round revision, keeping the last interval of history', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-compact-'));
  const b = await openLevelBackend({ dir });
  t.teardown(async () => { await b.close(); await rm(dir, { recursive: true, force: true }); });
  const c = startCompactor({ backends: () => [b], intervalMs: 0 });
  t.teardown(() => c.stop());
  const w1 = await b.create('/k/a', Buffer.from('1'));
  await c.runOnce();
  t.equal(await b.compactedRevision(), 0, 'the first round only remembers the revision');
  const w2 = await b.update('/k/a', Buffer.from('2'), w1.revision);
  await c.runOnce();
  t.equal(await b.compactedRevision(), w1.revision, 'second round compacts to the first round revision');
  t.equal((await b.get('/k/a', { revision: w1.revision })).kv?.value.toString(), '1', 'the kept point is readable');
  await t.rejects(b.get('/k/a', { revision: w1.revision - 1 }), { code: 'Compacted' });
  t.equal((await b.get('/k/a', { revision: w2.revision })).kv?.value.toString(), '2');
  await c.runOnce();
  t.equal(await b.compactedRevision(), w2.revision);
  await c.runOnce();
  t.equal(await b.compactedRevision(), w2.revision, 'no writes: nothing more to compact');
});

t.test('the timer runs rounds; 0 disables', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-compact-'));
  const b = await openLevelBackend({ dir });
  t.teardown(async () => { await b.close(); await rm(dir, { recursive: true, force: true }); });
  const c = startCompactor({ backends: () => [b], intervalMs: 50 });
  let rev = 0;
  for (let i = 0; i < 5; i++) rev = (await b.create(`/k/${i}`, Buffer.from('x'))).revision;
  const deadline = Date.now() + 10_000;
  while ((await b.compactedRevision()) < rev && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
  t.equal(await b.compactedRevision(), rev);
  await c.stop();
});

// The minimal create server the API server bench measures its creates against (the composite
// ceiling of perf-anchors.md §2g): it must do the work the ceiling names, or the ratio means nothing.
import t from 'tap';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ClassicLevel } from 'classic-level';
import { freePort, makePki, spawnNode, waitReady } from '../../bench/lib/children.js';
import { closeSessions, openSessions, runLoad, send } from '../../bench/lib/h2-load.js';
import { configMapBody, configMapGenerateBody } from '../../bench/lib/apiserver-child.js';

const SCRIPT = fileURLToPath(new URL('../../bench/fixtures/minimal-create-server.js', import.meta.url));
const PATH = '/api/v1/namespaces/bench/configmaps';
const JSON_CT = { 'content-type': 'application/json', accept: 'application/json' };

t.test('creates are stamped, durable in LevelDB, served back, and not made twice', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'minimal-create-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const pki = await makePki(dir);
  const port = await freePort();
  const data = join(dir, 'data');
  const child = spawnNode([SCRIPT, String(port), pki.certFile, pki.keyFile, data], undefined);
  let stopped = false;
  t.teardown(async () => { if (!stopped) await child.stop(); });
  const url = `https://127.0.0.1:${port}`;
  await waitReady(url, { ca: pki.client.ca }, '/', child);
  const sessions = await openSessions(url, { ca: pki.client.ca }, 1);

  const first = await send(sessions[0]!, { path: PATH, method: 'POST', headers: JSON_CT, body: configMapBody('one', 'bench', { a: 'b' }) });
  t.equal(first.status, 201);
  const obj = JSON.parse(first.body.toString()) as { metadata: Record<string, string>; data: Record<string, string> };
  t.equal(obj.metadata['name'], 'one');
  t.match(obj.metadata['uid'], /^[0-9a-f-]{36}$/);
  t.match(obj.metadata['creationTimestamp'], /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  t.equal(obj.metadata['resourceVersion'], '1');
  t.equal(obj.data['a'], 'b', 'the body is kept');

  const got = await send(sessions[0]!, { path: `${PATH}/one` });
  t.equal(got.status, 200);
  t.equal(got.body.toString(), first.body.toString(), 'GET answers the stored JSON');
  t.equal((await send(sessions[0]!, { path: `${PATH}/none` })).status, 404);
  t.equal((await send(sessions[0]!, { path: PATH, method: 'POST', headers: JSON_CT, body: configMapBody('one', 'bench', {}) })).status, 409);
  t.equal((await send(sessions[0]!, { path: PATH, method: 'POST', headers: JSON_CT, body: '{' })).status, 400);
  const generated = new Set<string>();
  for (let i = 0; i < 20; i++) {
    const res = await send(sessions[0]!, { path: PATH, method: 'POST', headers: JSON_CT, body: configMapGenerateBody('gen-', 'bench') });
    t.equal(res.status, 201);
    generated.add((JSON.parse(res.body.toString()) as { metadata: { name: string } }).metadata.name);
  }
  t.equal(generated.size, 20, 'generateName gives each create its own name');
  t.ok([...generated].every((n) => /^gen-[a-z0-9]{5}$/.test(n)), 'prefix and 5 random characters');

  // 50 in flight share batches; each create gets its own revision and reaches the disk.
  const r = await runLoad({
    sessions, concurrency: 50, durationMs: 60_000, maxOps: 500,
    request: (i) => ({ path: PATH, method: 'POST', headers: JSON_CT, body: configMapBody(`cm-${i}`, 'bench', { i: String(i) }) }),
  });
  t.equal(r.ops, 500);
  t.equal(r.errors, 0);
  closeSessions(sessions);
  await child.stop();
  stopped = true;

  const db = new ClassicLevel<string, string>(data, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
  await db.open();
  t.teardown(() => db.close());
  const keys = await db.keys().all();
  t.equal(keys.length, 521, 'every create is in LevelDB');
  const revisions = new Set<string>();
  for (const v of await db.values().all()) revisions.add((JSON.parse(v) as { metadata: { resourceVersion: string } }).metadata.resourceVersion);
  t.equal(revisions.size, 521, 'no revision is handed out twice');
  t.equal(await db.get(`${PATH}/one`), first.body.toString());
});

// The shared WatchFeed routes each event to the one watch cache (sink) whose prefix owns its key:
// with many resources by prefix lookup (one- and two-segment resource prefixes), and with
// prefixes that nest by the first attached match, as a scan of the sinks in order gives.
import t, { type Test } from 'tap';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openLevelBackend } from '../../src/storage/leveldb/level-backend.js';
import type { WatchBatch } from '../../src/storage/interface.js';
import { WatchFeed, type FeedSink } from '../../src/storage/watch-cache/watch-feed.js';

class Sink implements FeedSink {
  readonly keys: string[] = [];
  constructor(readonly prefix: string) {}
  resync(): void { /* starts empty */ }
  onBatch(b: WatchBatch): void { for (const e of b.events) this.keys.push(e.kv.key); }
}

async function route(t: Test, prefixes: string[], keys: string[]): Promise<Record<string, string[]>> {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-feed-'));
  const backend = await openLevelBackend({ dir });
  const feed = new WatchFeed(backend, '/registry/');
  const sinks = prefixes.map((p) => new Sink(p));
  try {
    for (const s of sinks) feed.attach(s);
    t.ok(await feed.waitFor(1, 5000), 'the feed started');
    let rev = 0;
    // One write per batch, and several in one batch (concurrent writers share a commit).
    for (const k of keys.slice(0, 2)) rev = (await backend.create(k, Buffer.from('v'))).revision;
    rev = Math.max(...(await Promise.all(keys.slice(2).map((k) => backend.create(k, Buffer.from('v'))))).map((r) => r.revision));
    t.ok(await feed.waitFor(rev, 5000), 'the feed reached the last write');
    return Object.fromEntries(sinks.map((s) => [s.prefix, s.keys.sort()]));
  } finally {
    for (const s of sinks) feed.detach(s);
    await feed.close();
    await backend.close();
    await rm(dir, { recursive: true, force: true });
  }
}

t.test('many resources: each key goes to the resource that owns it', async (t) => {
  const got = await route(t, [
    '/registry/pods/', '/registry/services/specs/', '/registry/services/endpoints/', '/registry/minions/',
    '/registry/example.com/widgets/', '/registry/deployments/',
  ], [
    '/registry/pods/ns/a', '/registry/services/specs/ns/s', '/registry/services/endpoints/ns/s', '/registry/minions/n1',
    '/registry/example.com/widgets/ns/w', '/registry/deployments/ns/d', '/registry/pods/ns2/b',
    '/registry/services/x', '/registry/other/ns/o', '/registry/example.com/gadgets/ns/g', '/registry/podsx/ns/p',
  ]);
  t.same(got, {
    '/registry/pods/': ['/registry/pods/ns/a', '/registry/pods/ns2/b'],
    '/registry/services/specs/': ['/registry/services/specs/ns/s'],
    '/registry/services/endpoints/': ['/registry/services/endpoints/ns/s'],
    '/registry/minions/': ['/registry/minions/n1'],
    '/registry/example.com/widgets/': ['/registry/example.com/widgets/ns/w'],
    '/registry/deployments/': ['/registry/deployments/ns/d'],
  }, 'keys no resource owns go nowhere');
});

t.test('nested prefixes: the first attached match wins', async (t) => {
  const got = await route(t, ['/registry/a/b/', '/registry/a/', '/registry/c/', '/registry/d/', '/registry/e/'], [
    '/registry/a/b/x', '/registry/a/y', '/registry/c/z', '/registry/a/b/w',
  ]);
  t.same(got['/registry/a/b/'], ['/registry/a/b/w', '/registry/a/b/x']);
  t.same(got['/registry/a/'], ['/registry/a/y']);
  t.same(got['/registry/c/'], ['/registry/c/z']);
});

import t, { type Test } from 'tap';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Etcd3 } from 'etcd3';
import { driverFor, openBackend, parseOverride } from '../../src/storage/backend-factory.js';
import { skipWithoutEtcd, startEtcd } from '../helpers/etcd.js';

const caught = (p: Promise<unknown>): Promise<unknown> => p.then(() => undefined, (e: unknown) => e);
const levelBackendPresent = existsSync(join(process.cwd(), 'src/storage/leveldb/level-backend.ts'));

async function tempDir(t: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-factory-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

t.test('override entries', async (t) => {
  t.same(parseOverride('/pods#http://127.0.0.1:2379'), { group: '', resource: 'pods', servers: ['http://127.0.0.1:2379'] }, 'core group');
  t.same(parseOverride('apps/deployments#http://a:1;https://b:2'), { group: 'apps', resource: 'deployments', servers: ['http://a:1', 'https://b:2'] });
  for (const bad of ['pods#http://a:1', '/pods', 'apps/deployments#', '/#http://a:1', 'a/b/c#http://a:1']) {
    t.throws(() => parseOverride(bad), { name: 'StorageError', code: 'InvalidArgument', message: /--kvstore-servers-overrides/ }, `rejects ${bad}`);
  }
});

t.test('servers choose the driver by scheme', async (t) => {
  t.type(driverFor(['http://127.0.0.1:2379']), 'function');
  t.equal(driverFor(['https://a:1', 'https://b:1']), driverFor(['http://a:1']), 'http and https are both etcd');
  t.throws(() => driverFor(['sqlite://db']), { code: 'InvalidArgument', message: /unsupported scheme "sqlite".*supported: http, https/ });
  t.throws(() => driverFor(['127.0.0.1:2379']), { code: 'InvalidArgument', message: /scheme:\/\/host:port/ });
  t.throws(() => driverFor(['http://a:1', 'unix://sock']), { message: /"unix"/ });
});

t.test('storage backend names', async (t) => {
  const dir = await tempDir(t);
  const base = { servers: ['http://127.0.0.1:1'], overrides: [], dataDir: dir };
  t.match(await caught(openBackend({ ...base, storageBackend: 'kvstore2' })), {
    name: 'StorageError',
    code: 'InvalidArgument',
    message: 'storage backend kvstore2 (the v2 API) is not supported; use kvstore3',
  });
  t.match(await caught(openBackend({ ...base, storageBackend: 'mongodb' })), { code: 'InvalidArgument', message: /unknown storage backend "mongodb"/ });
  t.match(await caught(openBackend({ ...base, servers: ['redis://127.0.0.1:6379'] })), { code: 'InvalidArgument', message: /"redis"/ });
  t.match(await caught(openBackend({ ...base, overrides: ['/pods#zk://a:1'] })), { code: 'InvalidArgument', message: /pods.*"zk"/ });
});

t.test('no servers: the embedded LevelDB store in the data directory', { skip: levelBackendPresent ? false : 'the LevelDB backend is not in the tree yet' }, async (t) => {
  const dir = await tempDir(t);
  for (const storageBackend of [undefined, '', 'kvstore3']) {
    const dataDir = join(dir, `d${storageBackend ?? 'u'}`);
    const set = await openBackend({ servers: [], overrides: [], dataDir, storageBackend });
    t.equal(set.default.name, 'leveldb');
    t.equal(set.for('', 'pods'), set.default);
    const c = await set.default.create('/registry/x', Buffer.from('y'));
    t.equal((await set.default.get('/registry/x')).kv?.modRevision, c.revision);
    await set.close();
    await set.close();
    t.ok((await readdir(dataDir)).length > 0, 'the store lives in the data directory');
  }
});

t.test('overrides send a resource to its own etcd', { skip: skipWithoutEtcd() }, async (t) => {
  const [main, side] = await Promise.all([startEtcd(), startEtcd()]);
  t.teardown(() => Promise.all([main.stop(), side.stop()]).then(() => undefined));
  const dir = await tempDir(t);
  const set = await openBackend({
    servers: [main.endpoint],
    overrides: [`/pods#${side.endpoint}`, `apps/deployments#${side.endpoint}`, `/events#${main.endpoint}`],
    dataDir: dir,
    storageBackend: 'kvstore3',
  });
  t.teardown(() => set.close());
  t.equal(set.default.name, 'etcd');
  t.not(set.for('', 'pods'), set.default, 'pods go elsewhere');
  t.equal(set.for('apps', 'deployments'), set.for('', 'pods'), 'one backend per distinct server list');
  t.equal(set.for('', 'events'), set.default, 'an override to the default servers shares the default backend');
  t.equal(set.for('', 'services'), set.default);
  t.equal(set.for('apps', 'pods'), set.default, 'the group is part of the match');

  await set.for('', 'pods').create('/registry/pods/default/p', Buffer.from('pod'));
  await set.default.create('/registry/services/default/s', Buffer.from('svc'));
  const count = async (endpoint: string, key: string) => {
    const raw = new Etcd3({ hosts: endpoint });
    try {
      return Number((await raw.kv.range({ key: Buffer.from(key), count_only: true })).count);
    } finally {
      raw.close();
    }
  };
  t.equal(await count(side.endpoint, '/registry/pods/default/p'), 1, 'the pod is in the override etcd');
  t.equal(await count(main.endpoint, '/registry/pods/default/p'), 0, 'and not in the main one');
  t.equal(await count(main.endpoint, '/registry/services/default/s'), 1, 'other resources stay in the main etcd');
  t.equal(await count(side.endpoint, '/registry/services/default/s'), 0);
  await set.close();
  t.match(await caught(set.default.get('/x')), { code: 'Unavailable' }, 'close closes every backend');
});

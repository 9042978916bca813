// etcd writes whose answer is lost (the connection drops after etcd got the request): the
// backend sends them again and recognises its own earlier success by the stored value, and
// never takes another writer's value for its own.
import t from 'tap';
import { openEtcdBackend } from '../../src/storage/etcd/etcd-backend.js';
import { isStorageError } from '../../src/storage/errors.js';
import { skipWithoutEtcd, startEtcd } from '../helpers/etcd.js';
import { startTcpCut } from '../helpers/tcp-cut.js';

const skip = skipWithoutEtcd();

t.test('a create or compare-and-swap whose answer was lost', { skip }, async (t) => {
  const etcd = await startEtcd();
  t.teardown(() => etcd.stop());
  const relay = await startTcpCut('127.0.0.1', Number(new URL(etcd.endpoint).port));
  t.teardown(() => relay.close());
  const direct = await openEtcdBackend({ endpoints: [etcd.endpoint] });
  const viaRelay = await openEtcdBackend({ endpoints: [`http://${relay.address}`], requestTimeoutMs: 10_000 });
  t.teardown(async () => { await viaRelay.close(); await direct.close(); });

  relay.cutAfterNextRequest(300);
  const created = await viaRelay.create('/t/mine', Buffer.from('mine-1'));
  const stored = await direct.get('/t/mine');
  t.equal(stored.kv?.value.toString(), 'mine-1');
  t.equal(created.revision, stored.kv?.modRevision, 'the create reports its own write, not KeyExists');

  relay.cutAfterNextRequest(300);
  const updated = await viaRelay.update('/t/mine', Buffer.from('mine-2'), created.revision);
  t.equal(updated.revision, (await direct.get('/t/mine')).kv?.modRevision, 'the compare-and-swap reports its own write, not Conflict');

  // Another writer's value under the key: a lost answer must still end in KeyExists.
  await direct.create('/t/theirs', Buffer.from('theirs'));
  relay.cutAfterNextRequest(300);
  const err = await viaRelay.create('/t/theirs', Buffer.from('mine')).then(() => undefined, (e: unknown) => e);
  t.ok(isStorageError(err, 'KeyExists'), `KeyExists (${String(err)})`);
});

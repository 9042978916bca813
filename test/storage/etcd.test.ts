import t from 'tap';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Etcd3 } from 'etcd3';
import { openEtcdBackend } from '../../src/storage/etcd/etcd-backend.js';
import { answersProgressRequestsInOrder } from '../../src/storage/etcd/etcd-watch.js';
import { MAX_VALUE_BYTES, type StorageError } from '../../src/storage/errors.js';
import type { Backend, WatchBatch } from '../../src/storage/interface.js';
import { skipWithoutEtcd, startEtcd, withKeyPrefix } from '../helpers/etcd.js';
import { makeTestPki } from '../helpers/pki.js';
import { collectEvents, runConformance } from './conformance.js';

const skip = skipWithoutEtcd();
const buf = (s: string): Buffer => Buffer.from(s);
const caught = (p: Promise<unknown>): Promise<unknown> => p.then(() => undefined, (e: unknown) => e);

t.test('progress requests are trusted only from etcd versions that order them', async (t) => {
  t.equal(answersProgressRequestsInOrder('3.4.23'), false);
  t.equal(answersProgressRequestsInOrder('3.4.31'), true);
  t.equal(answersProgressRequestsInOrder('3.5.12'), false);
  t.equal(answersProgressRequestsInOrder('3.5.13'), true);
  t.equal(answersProgressRequestsInOrder('3.6.0'), true);
  t.equal(answersProgressRequestsInOrder('garbage'), false);
});

t.test('etcd backend', { skip }, async (t) => {
  const etcd = await startEtcd();
  t.teardown(() => etcd.stop());
  let instance = 0;

  // One etcd for the whole suite; each case gets its own key prefix (cases run one at a time).
  await runConformance(t, 'etcd', async () => {
    const raw = await openEtcdBackend({ endpoints: [etcd.endpoint] });
    const backend = withKeyPrefix(raw, `/case-${++instance}`);
    return { backend, cleanup: () => backend.close() };
  });

  t.test('TTL keys share one etcd lease per TTL', async (t) => {
    const b = await openEtcdBackend({ endpoints: [etcd.endpoint] });
    const raw = new Etcd3({ hosts: etcd.endpoint });
    t.teardown(async () => {
      raw.close();
      await b.close();
    });
    await b.create('/lease/a', buf('a'), { ttlSeconds: 300 });
    await b.create('/lease/b', buf('b'), { ttlSeconds: 300 });
    const c = await b.create('/lease/c', buf('c'), { ttlSeconds: 600 });
    await b.update('/lease/c', buf('c2'), c.revision, { ttlSeconds: 300 });
    await b.create('/lease/none', buf('n'));
    const lease = async (k: string) => (await raw.kv.range({ key: Buffer.from(k) })).kvs[0]!.lease;
    const [la, lb, lc, ln] = [await lease('/lease/a'), await lease('/lease/b'), await lease('/lease/c'), await lease('/lease/none')];
    t.not(la, '0', 'a TTL key has a lease');
    t.equal(la, lb, 'keys with the same TTL share the lease');
    t.equal(lc, la, 'an update with the same TTL reuses it too');
    t.equal(ln, '0', 'a key without TTL has no lease');
    const d = await b.create('/lease/d', buf('d'), { ttlSeconds: 600 });
    t.ok(d.revision > 0);
    t.not(await lease('/lease/d'), la, 'another TTL gets another lease');
    const ttl = await raw.leaseClient.leaseTimeToLive({ ID: la });
    t.ok(Number(ttl.grantedTTL) >= 300 && Number(ttl.grantedTTL) <= 360, `granted TTL ${ttl.grantedTTL} is the TTL plus a short reuse window`);
    // A lease revoked behind the backend's back is replaced on the next write.
    await raw.leaseClient.leaseRevoke({ ID: la });
    await b.create('/lease/e', buf('e'), { ttlSeconds: 300 });
    const le = await lease('/lease/e');
    t.not(le, la, 'a fresh lease after the old one vanished');
    t.not(le, '0');
  });

  t.test('compaction errors carry etcd\'s compaction point', async (t) => {
    const b = await openEtcdBackend({ endpoints: [etcd.endpoint] });
    const raw = new Etcd3({ hosts: etcd.endpoint });
    t.teardown(async () => {
      raw.close();
      await b.close();
    });
    const first = await b.create('/compact/a', buf('1'));
    const second = await b.update('/compact/a', buf('2'), first.revision);
    await b.compact(second.revision);
    await t.resolves(b.compact(first.revision), 'compacting below the point is a no-op');
    t.match(await caught(b.compact(second.revision + 10_000)), { code: 'FutureRevision' });
    t.match(await caught(b.get('/compact/a', { revision: first.revision })), { name: 'StorageError', code: 'Compacted' });
    const err = (await caught(collectEvents(b.watch('/compact/', { prefix: true, fromRevision: first.revision }), 1, 5000))) as StorageError;
    t.match(err, { code: 'Compacted', details: { compactRevision: second.revision } });
    // A compaction by another client is found by the probe.
    const third = await b.update('/compact/a', buf('3'), second.revision);
    const fourth = await b.update('/compact/a', buf('4'), third.revision);
    await raw.kv.compact({ revision: fourth.revision });
    t.equal(await b.compactedRevision(), fourth.revision);
    const fresh = await openEtcdBackend({ endpoints: [etcd.endpoint] });
    t.equal(await fresh.compactedRevision(), fourth.revision, 'a new backend finds the point too');
    await fresh.close();
  });

  t.test('a value etcd refuses as too large maps to ValueTooLarge', async (t) => {
    const b = await openEtcdBackend({ endpoints: [etcd.endpoint] });
    t.teardown(() => b.close());
    // Exactly MAX_VALUE_BYTES passes the local check, but key and framing push the request
    // over etcd's --max-request-bytes (the same 1.5 MiB).
    t.match(await caught(b.create('/big/exact', Buffer.alloc(MAX_VALUE_BYTES))), { code: 'ValueTooLarge' });
  });

  t.test('a watch whose consumer falls behind ends with Unavailable after the buffered batches', async (t) => {
    const b = await openEtcdBackend({ endpoints: [etcd.endpoint], watchBufferEvents: 10 });
    t.teardown(() => b.close());
    const r0 = await b.currentRevision();
    for (let i = 0; i < 30; i++) await b.create(`/slow/${i}`, buf('x'));
    const w = b.watch('/slow/', { prefix: true, fromRevision: r0 + 1 });
    // Let etcd push the whole history while nobody reads.
    const deadline = Date.now() + 5000;
    const seen: WatchBatch[] = [];
    let error: unknown;
    await new Promise((r) => setTimeout(r, 300));
    try {
      for await (const batch of w) {
        seen.push(batch);
        if (Date.now() > deadline) break;
      }
    } catch (e) {
      error = e;
    }
    t.match(error, { code: 'Unavailable', message: /fell behind/ });
    t.ok(seen.length > 0 && seen.length <= 10, `the buffered batches came first (${seen.length})`);
    t.same(seen.map((s) => s.revision), seen.map((_, i) => r0 + 1 + i), 'in order, without gaps');
  });

  t.test('values pass through byte for byte, keys in UTF-8 byte order', async (t) => {
    const b = await openEtcdBackend({ endpoints: [etcd.endpoint] });
    t.teardown(() => b.close());
    const bytes = Buffer.from([0, 1, 2, 254, 255, 0]);
    await b.create('/bytes/z', bytes);
    await b.create('/bytes/é', buf('accent'));
    await b.create('/bytes/a', buf('a'));
    t.same((await b.get('/bytes/z')).kv?.value, bytes);
    t.same((await b.range('/bytes/', { prefix: true })).kvs.map((kv) => kv.key), ['/bytes/a', '/bytes/z', '/bytes/é']);
  });
});

t.test('etcd over TLS with client certificates', { skip }, async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-etcd-pki-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const pki = await makeTestPki(dir);
  const other = await makeTestPki(dir, { caName: 'some-other-ca', filePrefix: 'other-' });
  const etcd = await startEtcd({
    tls: {
      caFile: pki.caFile,
      certFile: pki.serverCertFile,
      keyFile: pki.serverKeyFile,
      clientCaFile: pki.caFile,
      clientCertFile: pki.clientCertFile,
      clientKeyFile: pki.clientKeyFile,
    },
  });
  t.teardown(() => etcd.stop());
  t.match(etcd.endpoint, /^https:\/\//);

  const b = await openEtcdBackend({ endpoints: [etcd.endpoint], tls: { caFile: pki.caFile, certFile: pki.clientCertFile, keyFile: pki.clientKeyFile } });
  const r0 = await b.currentRevision();
  const got = collectEvents(b.watch('/tls/', { prefix: true, fromRevision: r0 + 1 }), 1);
  const c = await b.create('/tls/a', buf('secret'));
  t.equal((await b.get('/tls/a')).kv?.value.toString(), 'secret', 'reads and writes work over mutual TLS');
  t.same((await got).map((e) => e.kv.modRevision), [c.revision], 'watches too');
  await b.close();

  const wrongCa = await caught(
    openEtcdBackend({ endpoints: [etcd.endpoint], tls: { caFile: other.caFile, certFile: pki.clientCertFile, keyFile: pki.clientKeyFile }, dialTimeoutMs: 1500 }),
  );
  t.match(wrongCa, { name: 'StorageError', code: 'Unavailable', message: /cannot reach etcd.*certificate/ }, 'a wrong CA fails with the TLS reason');
  const noClientCert = await caught(openEtcdBackend({ endpoints: [etcd.endpoint], tls: { caFile: pki.caFile }, dialTimeoutMs: 1500 }));
  t.match(noClientCert, { code: 'Unavailable', message: /certificate/ }, 'no client certificate is refused by etcd');
  const untrustedClient = await caught(
    openEtcdBackend({ endpoints: [etcd.endpoint], tls: { caFile: pki.caFile, certFile: other.clientCertFile, keyFile: other.clientKeyFile }, dialTimeoutMs: 1500 }),
  );
  t.match(untrustedClient, { code: 'Unavailable', message: /certificate/ }, 'a client certificate from another CA is refused');
  t.match(await caught(openEtcdBackend({ endpoints: [etcd.endpoint], tls: { caFile: join(dir, 'missing.crt') } })), {
    code: 'InvalidArgument',
    message: /missing\.crt/,
  }, 'an unreadable CA file names the file');
});

t.test('connection failures surface as Unavailable', { skip }, async (t) => {
  const etcd = await startEtcd();
  let stopped = false;
  t.teardown(() => (stopped ? undefined : etcd.stop()));
  const b: Backend = await openEtcdBackend({ endpoints: [etcd.endpoint], requestTimeoutMs: 3000 });
  t.teardown(() => b.close());
  await b.create('/down/a', buf('x'));
  const w = b.watch('/down/', { prefix: true });
  const watchEnd = caught((async () => { for await (const _ of w) { /* no writes */ } })());
  await new Promise((r) => setTimeout(r, 100));
  await etcd.stop();
  stopped = true;
  t.match(await watchEnd, { code: 'Unavailable' }, 'a watch ends with Unavailable when etcd goes away');
  t.match(await caught(b.get('/down/a')), { name: 'StorageError', code: 'Unavailable' }, 'reads fail with Unavailable');
  t.match(await caught(b.create('/down/b', buf('y'))), { code: 'Unavailable' }, 'writes fail with Unavailable');
  t.match(await caught(openEtcdBackend({ endpoints: [etcd.endpoint], dialTimeoutMs: 500 })), { code: 'Unavailable', message: /cannot reach etcd/ });
  await b.close();
  t.match(await caught(b.get('/down/a')), { code: 'Unavailable', message: /closed/ }, 'a closed backend says so');
  t.match(await caught(openEtcdBackend({ endpoints: ['ftp://127.0.0.1:1'] })), { code: 'InvalidArgument' });
  t.match(await caught(openEtcdBackend({ endpoints: ['http://127.0.0.1:1', 'https://127.0.0.1:2'] })), { code: 'InvalidArgument', message: /mix/ });
});

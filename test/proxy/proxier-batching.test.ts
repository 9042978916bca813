/**
 * The sync loop without nft (a recording stand-in): changes within --min-sync-period are
 * batched into one transaction; the first sync and the --sync-period ones are full; a failed
 * transaction is retried as a full sync; /healthz's rule (nothing queued for two sync periods).
 */
import t from 'tap';
import { pino } from 'pino';
import type { NftCommand } from '../../src/daemons/proxy/nft-command.js';
import { NftProxier } from '../../src/daemons/proxy/proxier.js';
import type { EndpointSliceObject, ServiceObject } from '../../src/daemons/proxy/service-model.js';
import { service, slice } from './fixtures.js';

class FakeNft {
  scripts: string[] = [];
  fail = 0;
  async apply(script: string): Promise<void> {
    if (this.fail > 0) { this.fail--; throw new Error('nft: transaction refused'); }
    this.scripts.push(script);
  }
  async objects(): Promise<{ chains: Set<string>; sets: Set<string> }> { return { chains: new Set(), sets: new Set() }; }
}

function setup(minSyncPeriodMs: number, syncPeriodMs = 3600_000) {
  const nft = new FakeNft();
  const state = { services: [] as ServiceObject[], slices: [] as EndpointSliceObject[] };
  const proxier = new NftProxier({
    nft: nft as unknown as NftCommand, nodeName: 'node-a', log: pino({ level: 'silent' }),
    rules: { table: 'corectl-proxy', masqueradeBit: 14, masqueradeAll: false, clusterCidrs: [], nodePortCidrs: [] },
    services: () => state.services, slices: () => state.slices, minSyncPeriodMs, syncPeriodMs,
  });
  return { nft, state, proxier };
}

t.test('changes within the min sync period are batched into one transaction', async (t) => {
  const { nft, state, proxier } = setup(2000);
  const stop = new AbortController();
  const running = proxier.run(stop.signal);
  await proxier.nextSync();
  t.equal(nft.scripts.length, 1, 'the first (full) sync');
  t.match(nft.scripts[0], /flush map ip corectl-proxy service-ips/);
  const next = proxier.nextSync();
  for (let i = 0; i < 5; i++) {
    state.services = [...state.services, service(`s${i}`, `10.0.0.${10 + i}`)];
    state.slices = [...state.slices, slice(`s${i}`, [{ ip: `10.88.0.${10 + i}` }])];
    proxier.requestSync();
    // Spread over time, as informer events come: each would be its own sync without batching.
    await new Promise((r) => setTimeout(r, 30));
  }
  await next;
  t.equal(nft.scripts.length, 2, 'five changes, one transaction');
  t.equal((nft.scripts[1]?.match(/add chain ip corectl-proxy svc_/g) ?? []).length, 5, 'carrying all five services');
  t.notMatch(nft.scripts[1], /flush map/, 'a partial sync');
  stop.abort();
  await running;
});

t.test('a failed transaction is retried as a full sync', async (t) => {
  const { nft, state, proxier } = setup(0);
  await proxier.syncOnce(true);
  state.services = [service('a', '10.0.0.20')];
  nft.fail = 1;
  const stop = new AbortController();
  const running = proxier.run(stop.signal);
  await proxier.nextSync();
  await proxier.nextSync();
  t.equal(nft.scripts.length, 2);
  t.match(nft.scripts[1], /flush map ip corectl-proxy service-ips/, 'the retry is full');
  t.match(nft.scripts[1], /10\.0\.0\.20 \. tcp \. 80 : goto reject-chain/);
  stop.abort();
  await running;
});

t.test('nothing changed: no transaction', async (t) => {
  const { nft, proxier } = setup(0);
  await proxier.syncOnce(true);
  await proxier.syncOnce(false);
  t.equal(nft.scripts.length, 1);
});

t.test('healthy while changes are programmed within two sync periods', async (t) => {
  const { proxier } = setup(0, 1000);
  const now = Date.now();
  t.ok(proxier.healthy(now), 'nothing queued yet');
  proxier.queuedAt = now - 1500;
  t.ok(proxier.healthy(now));
  proxier.queuedAt = now - 2500;
  t.notOk(proxier.healthy(now), 'a change waiting for longer than 2 sync periods');
});

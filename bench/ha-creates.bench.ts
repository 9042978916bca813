/**
 * Creates per second on a three-member etcd cluster (loopback, test/helpers/ha-cluster.ts):
 *   etcd3 ceiling   the plain etcd3 client's create-if-absent transaction, of a value the size
 *                   of the stored ConfigMap, on the cluster (what one create costs etcd);
 *   1 API server    ConfigMap creates through one API server;
 *   3 API servers   the same creates spread round-robin over three API servers.
 * 64 in flight, rounds alternate so drift on the machine hits every mode alike; medians and
 * the ratios to the ceiling are printed. On one machine the API servers, etcd and this client
 * share the cores: the API servers a mode does not use are paused (SIGSTOP) so that their
 * watch caches do not take CPU from it, and three servers add no cores, so their figure shows
 * the cost of sharing one etcd, not the gain of more machines.
 * Run: node dist/bench/ha-creates.bench.js   (needs etcd on PATH)
 */
import { Etcd3 } from 'etcd3';
import { loadCoreconfig } from '../src/client/coreconfig.js';
import { RestClient } from '../src/client/rest-client.js';
import { etcdAvailable } from '../test/helpers/etcd.js';
import { startHaCluster } from '../test/helpers/ha-cluster.js';

const IN_FLIGHT = 64;
const OPS = Number(process.env['HA_BENCH_OPS'] ?? 3000);
const ROUNDS = 3;
const CM = { group: '', version: 'v1', resource: 'configmaps', namespace: 'bench' };

async function measure(label: string, op: (i: number) => Promise<unknown>): Promise<number> {
  let next = 0;
  const started = process.hrtime.bigint();
  await Promise.all(Array.from({ length: IN_FLIGHT }, async () => {
    for (let i = next++; i < OPS; i = next++) await op(i);
  }));
  const rate = OPS / (Number(process.hrtime.bigint() - started) / 1e9);
  console.log(`  ${label.padEnd(14)} ${rate.toFixed(0).padStart(6)} creates/s`);
  return rate;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  if (!etcdAvailable()) {
    console.log('ha-creates bench: etcd not installed, skipped');
    return;
  }
  const ha = await startHaCluster({ apiservers: 3 });
  const raw = new Etcd3({ hosts: [...ha.etcd.endpoints] });
  const clients = await Promise.all(ha.apiservers.map(async (a) => new RestClient({ connection: await loadCoreconfig({ path: ha.coreconfigFor(a.index) }), qps: 0 })));
  try {
    await clients[0]!.create({ group: '', version: 'v1', resource: 'namespaces' }, { metadata: { name: 'bench' } });
    const data = { a: 'x'.repeat(64), b: 'y'.repeat(64) };
    // The value etcd stores for such a ConfigMap, for the ceiling: one created and read back.
    const sample = await clients[0]!.create(CM, { metadata: { name: 'sample' }, data });
    const value = Buffer.from(JSON.stringify(sample));
    // Warm-up (JIT, connections, watch caches), not counted.
    await Promise.all(Array.from({ length: 300 }, (_, i) => clients[i % 3]!.create(CM, { metadata: { name: `warm-${i}` }, data })));
    const rates: Record<'raw' | 'one' | 'three', number[]> = { raw: [], one: [], three: [] };
    const only = (n: number): void => { for (const a of ha.apiservers) a.child?.kill(a.index < n ? 'SIGCONT' : 'SIGSTOP'); };
    for (let round = 0; round < ROUNDS; round++) {
      console.log(`round ${round + 1}/${ROUNDS} (${OPS} creates, ${IN_FLIGHT} in flight)`);
      only(0);
      rates.raw.push(await measure('etcd3 ceiling', (i) => {
        const key = `/bench/r${round}/${i}`;
        return raw.if(key, 'Create', '==', 0).then(raw.put(key).value(value)).commit();
      }));
      only(1);
      rates.one.push(await measure('1 API server', (i) => clients[0]!.create(CM, { metadata: { name: `one-${round}-${i}` }, data })));
      only(3);
      rates.three.push(await measure('3 API servers', (i) => clients[i % 3]!.create(CM, { metadata: { name: `three-${round}-${i}` }, data })));
    }
    const [c, one, three] = [median(rates.raw), median(rates.one), median(rates.three)];
    console.log('median creates/s on a three-member etcd cluster:');
    console.log(`  plain etcd3 client (ceiling)  ${c.toFixed(0)}`);
    console.log(`  through 1 API server          ${one.toFixed(0)}  (${((100 * one) / c).toFixed(0)} % of the ceiling)`);
    console.log(`  through 3 API servers         ${three.toFixed(0)}  (${((100 * three) / c).toFixed(0)} % of the ceiling)`);
  } finally {
    for (const a of ha.apiservers) a.child?.kill('SIGCONT');
    for (const c of clients) c.close();
    raw.close();
    await ha.stop();
  }
}

await main();

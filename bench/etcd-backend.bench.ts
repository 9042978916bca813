/**
 * Creates per second at 64 in flight, 1 KiB values, against a fresh local etcd:
 *   raw put       the etcd3 client's plain put (the floor any etcd write path pays)
 *   raw txn       the etcd3 client's create-if-absent transaction (what create sends)
 *   backend       EtcdBackend.create (the same transaction plus the Backend layer)
 * Rounds alternate so drift on the machine hits every mode alike; medians are printed.
 * Run: node dist/bench/etcd-backend.bench.js   (needs etcd on PATH)
 */
import { Etcd3 } from 'etcd3';
import { openEtcdBackend } from '../src/storage/etcd/etcd-backend.js';
import { etcdAvailable, startEtcd } from '../test/helpers/etcd.js';

const IN_FLIGHT = 64;
const OPS_PER_ROUND = 6000;
const ROUNDS = 3;
const value = Buffer.alloc(1024, 'x');

/** Creates per second; also prints this process's CPU per create, which load elsewhere disturbs less. */
async function measure(label: string, op: (i: number) => Promise<unknown>): Promise<number> {
  let next = 0;
  const cpu0 = process.cpuUsage();
  const started = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      for (let i = next++; i < OPS_PER_ROUND; i = next++) await op(i);
    }),
  );
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  const cpuPerOpUs = (cpu.user + cpu.system) / OPS_PER_ROUND;
  const rate = OPS_PER_ROUND / seconds;
  console.log(`  ${label.padEnd(8)} ${rate.toFixed(0).padStart(6)} creates/s   client CPU ${cpuPerOpUs.toFixed(0)} µs/create`);
  return rate;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  if (!etcdAvailable()) {
    console.log('etcd-backend bench: etcd not installed, skipped');
    return;
  }
  const etcd = await startEtcd();
  const raw = new Etcd3({ hosts: etcd.endpoint });
  const backend = await openEtcdBackend({ endpoints: [etcd.endpoint] });
  const rates: Record<'put' | 'txn' | 'backend', number[]> = { put: [], txn: [], backend: [] };
  try {
    for (let round = 0; round < ROUNDS; round++) {
      console.log(`round ${round + 1}/${ROUNDS} (${OPS_PER_ROUND} creates, ${IN_FLIGHT} in flight, 1 KiB values)`);
      const p = `/bench/r${round}`;
      rates.put.push(await measure('raw put', (i) => raw.put(`${p}/put/${i}`).value(value).exec()));
      rates.txn.push(
        await measure('raw txn', (i) => {
          const key = `${p}/txn/${i}`;
          return raw.if(key, 'Create', '==', 0).then(raw.put(key).value(value)).commit();
        }),
      );
      rates.backend.push(await measure('backend', (i) => backend.create(`${p}/backend/${i}`, value)));
      // Keep etcd's history small between rounds, as the apiserver's compaction loop would.
      await backend.compact(await backend.currentRevision());
    }
    const [put, txn, mine] = [median(rates.put), median(rates.txn), median(rates.backend)];
    console.log('median creates/s:');
    console.log(`  raw etcd3 put             ${put.toFixed(0)}`);
    console.log(`  raw create-if-absent txn  ${txn.toFixed(0)}`);
    console.log(`  EtcdBackend.create        ${mine.toFixed(0)}  (${((100 * mine) / put).toFixed(0)} % of raw put, ${((100 * mine) / txn).toFixed(0)} % of raw txn)`);
  } finally {
    await backend.close();
    raw.close();
    await etcd.stop();
  }
}

await main();

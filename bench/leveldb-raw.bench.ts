/**
 * Durable creates through the LevelDB backend vs raw classic-level synced puts, at 1 and 64 in
 * flight (1 KiB values, pod-like keys). Prints throughput, latency percentiles and, for the
 * backend, how many writes each fsynced batch carried. Quick: ~15 s.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClassicLevel } from 'classic-level';
import { openLevelBackend } from '../src/storage/leveldb/level-backend.js';
import { closedLoop, quantile } from './lib/closed-loop.js';

const VALUE = Buffer.alloc(1024, 'v');
const SECONDS = Number(process.env['BENCH_SECONDS'] ?? '3');

interface Result { ops: number; perSec: number; p50: number; p99: number }

async function drive(inFlight: number, op: (i: number) => Promise<unknown>): Promise<Result> {
  const r = await closedLoop(inFlight, op, { ms: SECONDS * 1000 });
  const lat = r.lat.sort((a, b) => a - b);
  return { ops: r.ops, perSec: r.ops / r.seconds, p50: quantile(lat, 0.5), p99: quantile(lat, 0.99) };
}

const fmt = (name: string, r: Result, extra = ''): string =>
  `${name.padEnd(44)} ${Math.round(r.perSec).toString().padStart(7)} /s   p50 ${r.p50.toFixed(3)} ms   p99 ${r.p99.toFixed(3)} ms${extra}`;

const key = (run: string, i: number): string => `/registry/pods/default/${run}-${i.toString().padStart(8, '0')}`;

async function main(): Promise<void> {
  for (const inFlight of [1, 64]) {
    const rawDir = await mkdtemp(join(tmpdir(), 'bench-raw-'));
    const db = new ClassicLevel<string, Buffer>(rawDir, { keyEncoding: 'utf8', valueEncoding: 'buffer' });
    await db.open();
    const raw = await drive(inFlight, (i) => db.put(key('raw', i), VALUE, { sync: true }));
    await db.close();
    await rm(rawDir, { recursive: true, force: true });
    console.log(fmt(`raw classic-level put sync, ${inFlight} in flight`, raw));

    const dir = await mkdtemp(join(tmpdir(), 'bench-backend-'));
    const b = await openLevelBackend({ dir });
    const s0 = b.stats;
    const res = await drive(inFlight, (i) => b.create(key('be', i), VALUE));
    const s1 = b.stats;
    const batches = Math.max(1, s1.batches - s0.batches);
    const perBatch = (s1.writes - s0.writes) / batches;
    const batchMs = (s1.writeMs - s0.writeMs) / batches;
    console.log(fmt(`backend create (durable), ${inFlight} in flight`, res, `   ${perBatch.toFixed(1)} writes/batch, ${batchMs.toFixed(2)} ms in LevelDB per batch`));
    const upd = await drive(inFlight, async (i) => {
      const k = key('be', i % res.ops);
      const { kv } = await b.get(k);
      if (kv) await b.update(k, VALUE, kv.modRevision).catch(() => undefined);
    });
    console.log(fmt(`backend get+update (durable), ${inFlight} in flight`, upd));
    await b.close();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();

/**
 * The object store on LevelDB and on etcd, next to the raw stores, with 1 KiB objects:
 *   create (64 in flight and 1 writer), get (consistent and RV '0'), guaranteedUpdate,
 *   list of 10 000 objects (consistent and RV '0'), watch delivery to 1 and to 100 watchers;
 *   raw classic-level synced puts and raw etcd3 puts as the floor, with the ratio to them. The
 *   LevelDB writes at 64 in flight are compared with raw synced batches of 64 puts written one
 *   at a time (what group commit does): that row is the disk's ceiling in this run.
 * The watch cache is on (as in the API server): gets, lists and watches are answered from
 * memory; a consistent read asks the backend only for its current revision.
 * Each row also prints the process CPU per operation (all threads, so LevelDB's included; etcd's
 * own CPU is not): steadier than rates on a shared machine. Create rows at 64 and 256 in flight
 * run CREATE_MS each.
 * Run: node dist/bench/storage.bench.js   (etcd rows need etcd on PATH). Takes about a minute.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setMaxListeners } from 'node:events';
import { ClassicLevel } from 'classic-level';
import { Etcd3 } from 'etcd3';
import type { KubeObject } from '../src/api/resources/types.js';
import type { Backend } from '../src/storage/interface.js';
import { openLevelBackend } from '../src/storage/leveldb/level-backend.js';
import { openEtcdBackend } from '../src/storage/etcd/etcd-backend.js';
import { createObjectStore } from '../src/storage/object-store.js';
import type { ObjectRef, ObjectStore } from '../src/storage/object-store-types.js';
import { etcdAvailable, startEtcd } from '../test/helpers/etcd.js';
import { closedLoop, quantile } from './lib/closed-loop.js';
import { cpuTicks, stealNote, stealPercent } from './lib/steal.js';

const IN_FLIGHT = 64;
const LIST_SIZE = 10_000;
const value = Buffer.alloc(1024, 'x');

interface Row { name: string; ops: number; seconds: number; lat: number[]; unit?: string; cpuUs?: number; stealPct?: number }

/** JSON length of obj('', '') without its padding; names and namespaces are plain ASCII (no escapes). */
const OBJ_BASE_LENGTH = JSON.stringify(shell('', '')).length;
/** Padding strings by length: flat, as a decoded request body's strings are ('x'.repeat gives a rope). */
const pads = new Map<number, string>();

function shell(name: string, ns: string): KubeObject {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns, labels: { app: 'bench' } }, data: { v: '' } };
}

/**
 * A fresh 1 KiB ConfigMap per call (the store gets a new object each time, as from a decoded
 * request), built without serializing it: the harness should not cost as much as the store.
 */
function obj(name: string, ns = 'bench'): KubeObject {
  const o = shell(name, ns);
  const n = Math.max(0, 1024 - OBJ_BASE_LENGTH - name.length - ns.length);
  let pad = pads.get(n);
  if (pad === undefined) { pad = Buffer.alloc(n, 'x').toString('latin1'); pads.set(n, pad); }
  (o['data'] as { v: string }).v = pad;
  return o;
}
const ref = (name: string, ns = 'bench'): ObjectRef => ({ group: '', resource: 'configmaps', namespace: ns, name });

/** How long the 64- and 256-in-flight create rows run: long enough for a steady figure. */
const CREATE_MS = 3000;

/**
 * Runs `total` ops with `inflight` concurrent loops (or until `maxMs`), recording latencies and
 * the process CPU time (all threads: LevelDB's work included; not etcd's, a separate process).
 */
async function run(name: string, total: number, inflight: number, op: (i: number) => Promise<unknown>, maxMs = 8000): Promise<Row> {
  const cpu0 = process.cpuUsage();
  const ticks0 = cpuTicks();
  const r = await closedLoop(inflight, op, { ms: maxMs, maxOps: total });
  const cpu = process.cpuUsage(cpu0);
  return { name, ops: r.ops, seconds: r.seconds, lat: r.lat, cpuUs: r.ops ? (cpu.user + cpu.system) / r.ops : undefined, stealPct: stealPercent(ticks0, cpuTicks()) };
}

function pct(xs: number[], p: number): number {
  return quantile([...xs].sort((a, b) => a - b), p / 100);
}

/** A latency column: '—' when the row measures none (replays count deliveries, not latencies). */
function ms(x: number): string {
  return (Number.isFinite(x) ? x.toFixed(2) : '—').padStart(7);
}

function print(r: Row, base?: Row): void {
  const rate = r.ops / r.seconds;
  const ratio = base ? `${((rate / (base.ops / base.seconds)) * 100).toFixed(0)} % of raw${base.unit === 'puts/s' ? ' batches' : ''}` : '';
  const cpu = r.cpuUs !== undefined ? `cpu ${r.cpuUs.toFixed(0).padStart(4)} µs/op` : ''.padEnd(15);
  console.log(`  ${r.name.padEnd(44)} ${rate.toFixed(0).padStart(8)} ${(r.unit ?? 'ops/s').padEnd(13)} p50 ${ms(pct(r.lat, 50))} ms  p99 ${ms(pct(r.lat, 99))} ms  ${cpu}  ${[ratio, stealNote(r.stealPct)].filter(Boolean).join('  ')}`);
}

/**
 * Watch delivery to `watchers` watchers of events written for up to `writeMs` (then an 'end'
 * marker): `live` — the watchers wait while the events are written (bounded by the write
 * rate; latency is write start → receipt by watcher 0); otherwise the events are written first
 * and the watchers replay them from the cache's history (the fan-out rate itself).
 */
async function watchDelivery(store: ObjectStore, watchers: number, writeMs: number, ns: string, live: boolean): Promise<Row> {
  const ac = new AbortController();
  setMaxListeners(watchers + 10, ac.signal);
  const start = await store.currentRevision();
  let delivered = 0;
  const lat: number[] = [];
  const created = new Map<string, number>();
  const write = async (): Promise<void> => {
    await run('', 1_000_000, IN_FLIGHT, async (i) => {
      created.set(`w${i}`, performance.now());
      await store.create(ref(`w${i}`, ns), obj(`w${i}`, ns));
    }, writeMs);
    await store.create(ref('end', ns), obj('end', ns));
  };
  if (!live) await write();
  const t0 = performance.now();
  const done = Promise.all(Array.from({ length: watchers }, async (_x, wi) => {
    for await (const e of store.watch({ group: '', resource: 'configmaps', namespace: ns, resourceVersion: String(start), signal: ac.signal })) {
      if (e.type !== 'ADDED') continue;
      const name = e.object.metadata!.name!;
      if (name === 'end') break;
      if (wi === 0 && live) { const c = created.get(name); if (c !== undefined) lat.push(performance.now() - c); }
      delivered++;
    }
  }));
  if (live) await write();
  const timeout = setTimeout(() => ac.abort(), 30_000);
  await done;
  clearTimeout(timeout);
  const what = `${watchers} watcher${watchers > 1 ? 's' : ''}`;
  return { name: live ? `watch, live: ${what} (lat write→receive)` : `watch, replay: ${what}`, ops: delivered, seconds: (performance.now() - t0) / 1000, lat, unit: 'deliveries/s' };
}

async function objectStoreRows(label: string, backend: Backend, raw: Row, rawOne: Row): Promise<void> {
  const store = createObjectStore({ backendFor: () => backend, watchCache: { enabled: true, defaultSize: 100, sizes: {} } });
  try {
    console.log(`${label}: backend alone`);
    print(await run(`backend.create, ${IN_FLIGHT} in flight`, 10_000_000, IN_FLIGHT, (i) => backend.create(`/bench-raw/${i}`, value), CREATE_MS), raw);
    print(await run('backend.create, 1 writer', 3000, 1, (i) => backend.create(`/bench-raw1/${i}`, value), 2000), rawOne);
    console.log(`${label}: object store with watch cache`);
    const c64 = await run(`create, ${IN_FLIGHT} in flight`, 10_000_000, IN_FLIGHT, (i) => store.create(ref(`c${i}`), obj(`c${i}`)), CREATE_MS);
    print(c64, raw);
    // Four times the writers: how far group commit stretches (bigger batches, same fsync rate).
    print(await run(`create, ${4 * IN_FLIGHT} in flight`, 10_000_000, 4 * IN_FLIGHT, (i) => store.create(ref(`d${i}`, 'wide'), obj(`d${i}`, 'wide')), CREATE_MS), raw);
    const c1 = await run('create, 1 writer', 3000, 1, (i) => store.create(ref(`s${i}`, 'single'), obj(`s${i}`, 'single')), 3000);
    print(c1, rawOne);
    const n = c64.ops;
    print(await run(`get (consistent), ${IN_FLIGHT} in flight`, 40_000, IN_FLIGHT, (i) => store.get(ref(`c${i % n}`)), 2000));
    print(await run(`get (RV 0), ${IN_FLIGHT} in flight`, 100_000, IN_FLIGHT, (i) => store.get(ref(`c${i % n}`), { resourceVersion: '0' }), 2000));
    print(await run(`update (guaranteedUpdate), ${IN_FLIGHT} in flight`, 20_000, IN_FLIGHT, (i) => store.guaranteedUpdate(ref(`c${i % n}`),
      (o) => ({ ...o!, metadata: { ...o!.metadata, labels: { app: 'bench', i: String(i) } } })), 3000), raw);
    // LIST_SIZE objects in their own namespace (fewer if the store is too slow to write them in 15 s).
    const size = (await run('', LIST_SIZE, IN_FLIGHT, (i) => store.create(ref(`l${i}`, 'list'), obj(`l${i}`, 'list')), 15_000)).ops;
    const listQ = { group: '', resource: 'configmaps', namespace: 'list' };
    const l = await run(`list ${size} (consistent)`, 5, 1, async () => {
      if ((await store.list(listQ)).items.length !== size) throw new Error('list size');
    }, 5000);
    print({ ...l, unit: 'lists/s' });
    print({ ...(await run(`list ${size} (RV 0)`, 5, 1, () => store.list({ ...listQ, resourceVersion: '0' }), 5000)), unit: 'lists/s' });
    print({ ...(await run(`list ${size} in pages of 500`, 4, 1, async () => {
      let token: string | undefined;
      do token = (await store.list({ ...listQ, limit: 500, continue: token })).continue; while (token);
    }, 5000)), unit: 'lists/s' });
    print(await watchDelivery(store, 1, 1500, 'watch1', true));
    print(await watchDelivery(store, 100, 1500, 'watch100', true));
    print(await watchDelivery(store, 1, 1500, 'replay1', false));
    print(await watchDelivery(store, 100, 1000, 'replay100', false));
  } finally {
    await store.close();
  }
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-storage-bench-'));
  try {
    // Raw classic-level, synced puts.
    const db = new ClassicLevel<string, Buffer>(join(dir, 'raw'), { valueEncoding: 'buffer' });
    await db.open();
    console.log('raw classic-level (sync: true)');
    const rawLevel = await run(`put, ${IN_FLIGHT} in flight`, 10_000_000, IN_FLIGHT, (i) => db.put(`/registry/raw/${i}`, value, { sync: true }), CREATE_MS);
    print(rawLevel);
    const rawLevel1 = await run('put, 1 writer', 3000, 1, (i) => db.put(`/registry/raw1/${i}`, value, { sync: true }), 2000);
    print(rawLevel1);
    // The disk's ceiling for group commit in this run: synced batches of IN_FLIGHT puts, one
    // batch at a time as the group committer writes them; counted in puts, latency per batch.
    let k = 0;
    const b = await run(`batches of ${IN_FLIGHT} puts, 1 in flight`, 1_000_000, 1, async () => {
      const batch = db.batch();
      for (let j = 0; j < IN_FLIGHT; j++) batch.put(`/registry/rawb/${k++}`, value);
      await batch.write({ sync: true });
    }, CREATE_MS);
    const rawBatched: Row = { ...b, ops: b.ops * IN_FLIGHT, cpuUs: b.cpuUs === undefined ? undefined : b.cpuUs / IN_FLIGHT, unit: 'puts/s' };
    print(rawBatched);
    await db.close();

    const level = await openLevelBackend({ dir: join(dir, 'store') });
    try {
      await objectStoreRows('leveldb', level, rawBatched, rawLevel1);
    } finally {
      await level.close();
    }

    if (!etcdAvailable()) {
      console.log('etcd: not installed, rows skipped');
      return;
    }
    const etcd = await startEtcd();
    try {
      const client = new Etcd3({ hosts: etcd.endpoint });
      console.log('raw etcd3 client');
      const rawEtcd = await run(`put, ${IN_FLIGHT} in flight`, 20_000, IN_FLIGHT, (i) => client.put(`/raw/${i}`).value(value).exec(), 4000);
      print(rawEtcd);
      const rawEtcd1 = await run('put, 1 writer', 2000, 1, (i) => client.put(`/raw1/${i}`).value(value).exec(), 2000);
      print(rawEtcd1);
      client.close();
      const backend = await openEtcdBackend({ endpoints: [etcd.endpoint] });
      try {
        await objectStoreRows('etcd', backend, rawEtcd, rawEtcd1);
      } finally {
        await backend.close();
      }
    } finally {
      await etcd.stop();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const started = Date.now();
await main();
console.log(`total ${((Date.now() - started) / 1000).toFixed(1)} s`);

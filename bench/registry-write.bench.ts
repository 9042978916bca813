/**
 * The API server's write path below HTTP, in one process: strict field validation of the raw
 * body, decode, then ResourceRegistry create / update (PUT-style) / no-op update of 1 KiB
 * configmaps on the object store (watch cache on) over a durable LevelDB backend, 50 in flight.
 * Prints throughput, latency and the CPU each write costs on the main thread and in the other
 * threads (libuv pool, GC helpers, LevelDB): the main-thread figure is what the request path
 * costs and the steadiest number on a shared machine. Quick (~15 s).
 * Run: node dist/bench/registry-write.bench.js   (REGBENCH_MS: length of each row; REGBENCH_IN_FLIGHT: 50).
 */
import { readdirSync } from 'node:fs';
import { procStat } from './lib/children.js';
import { closedLoop, quantile } from './lib/closed-loop.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeObject } from '../src/api/resources/types.js';
import { findResource } from '../src/api/resources/registry.js';
import { openLevelBackend } from '../src/storage/leveldb/level-backend.js';
import { createObjectStore } from '../src/storage/object-store.js';
import { ResourceRegistry } from '../src/daemons/apiserver/registry/resource-registry.js';
import { checkFields } from '../src/daemons/apiserver/rest/field-validation.js';
import { decodeObject } from '../src/daemons/apiserver/rest/codec-adapter.js';

const ROW_MS = Number(process.env['REGBENCH_MS'] ?? 3000);
const IN_FLIGHT = Number(process.env['REGBENCH_IN_FLIGHT'] ?? 50);

function body(name: string, i: number, resourceVersion?: string): Buffer {
  const o = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'bench', ...(resourceVersion ? { resourceVersion } : {}) }, data: { i: String(i), pad: '' } };
  o.data.pad = 'x'.repeat(Math.max(0, 1024 - JSON.stringify(o).length));
  return Buffer.from(JSON.stringify(o));
}

/** CPU seconds so far of this process's main thread and of all its other threads. */
function cpu(): { main: number; other: number } {
  let main = 0, other = 0;
  for (const tid of readdirSync('/proc/self/task')) {
    const t = procStat('self', tid);
    if (!t) continue;
    if (tid === String(process.pid)) main += t.user + t.sys; else other += t.user + t.sys;
  }
  return { main, other };
}

async function row(name: string, op: (i: number) => Promise<unknown>): Promise<void> {
  const c0 = cpu();
  const r = await closedLoop(IN_FLIGHT, op, { ms: ROW_MS });
  const c1 = cpu();
  const lat = r.lat.sort((a, b) => a - b);
  const us = (s: number): string => ((s * 1e6) / r.ops).toFixed(0).padStart(5);
  console.log(`  ${name.padEnd(30)} ${(r.ops / r.seconds).toFixed(0).padStart(6)}/s  p50 ${quantile(lat, 0.5).toFixed(2).padStart(6)} ms  p99 ${quantile(lat, 0.99).toFixed(2).padStart(7)} ms  CPU µs/op: main ${us(c1.main - c0.main)}  other threads ${us(c1.other - c0.other)}`);
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-regbench-'));
  const backend = await openLevelBackend({ dir });
  const store = createObjectStore({ backendFor: () => backend, watchCache: { enabled: true, defaultSize: 100, sizes: {} } });
  const registry = new ResourceRegistry(store, { repairMalformedUpdates: true }) // the server's default;
  const nsDef = findResource('', 'v1', 'namespaces')!;
  const cmDef = findResource('', 'v1', 'configmaps')!;
  try {
    await registry.create(nsDef, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'bench' } });
    const rv = new Map<number, string>();
    // What handleCreate does below HTTP: strict check of the raw body, decode, create.
    const create = async (i: number): Promise<void> => {
      const raw = body(`cm-${i}`, i);
      const obj = decodeObject('application/json', raw);
      checkFields('Warn', obj, 'v1', 'ConfigMap', raw);
      const out: KubeObject = await registry.create(cmDef, obj, { inputOwned: true });
      rv.set(i, out.metadata!.resourceVersion!);
    };
    for (let i = 0; i < 500; i++) await create(1_000_000 + i); // warm-up
    console.log(`registry write path, ${IN_FLIGHT} in flight, durable LevelDB, watch cache on (${ROW_MS} ms rows)`);
    let made = 0;
    await row('create configmap', async (i) => { await create(i); made = Math.max(made, i + 1); });
    const n = Math.min(made, 5000);
    await row('update configmap (PUT)', async (i) => {
      const k = i % n;
      const raw = body(`cm-${k}`, i + 1, rv.get(k));
      const obj = decodeObject('application/json', raw);
      checkFields('Warn', obj, 'v1', 'ConfigMap', raw);
      const { object } = await registry.update(cmDef, 'bench', `cm-${k}`, () => obj, {});
      rv.set(k, object.metadata!.resourceVersion!);
    });
    await row('no-op update (same content)', async (i) => {
      const k = i % n;
      await registry.update(cmDef, 'bench', `cm-${k}`, (cur) => cur!, {});
    });
  } finally {
    await store.close();
    await backend.close();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();

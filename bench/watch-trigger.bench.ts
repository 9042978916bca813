/**
 * What the watch cache's trigger index saves: N watches of pods, one per node (filtered by
 * spec.nodeName, as node agents watch), then pod writes spread over 10 nodes. Each write is
 * timed from its call to the moment its own node's watch got the event, with and without
 * WatchQuery.trigger, in one process on a real LevelDB (no HTTP: the fan-out is the part
 * measured). Prints ms per write, and the filter calls per write the index spared.
 * Run: node dist/bench/watch-trigger.bench.js      Env: TRIGGERBENCH_NODES=1000,5000 TRIGGERBENCH_WRITES=2000
 */
import { setMaxListeners } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeObject } from '../src/api/resources/types.js';
import { openLevelBackend } from '../src/storage/leveldb/level-backend.js';
import { createObjectStore } from '../src/storage/object-store.js';

const NODES = (process.env['TRIGGERBENCH_NODES'] ?? '1000,5000').split(',').map(Number);
const WRITES = Number(process.env['TRIGGERBENCH_WRITES'] ?? 2000);

const nodeOf = (o: KubeObject): string => String((o.spec as { nodeName?: string } | undefined)?.nodeName ?? '');

async function run(nodes: number, indexed: boolean): Promise<{ msPerWrite: number; filterCallsPerWrite: number }> {
  const dir = await mkdtemp(join(tmpdir(), 'trigger-bench-'));
  const backend = await openLevelBackend({ dir });
  const store = createObjectStore({ backendFor: () => backend, prefix: '/registry', watchCache: { enabled: true, defaultSize: 1000, sizes: {} } });
  const ac = new AbortController();
  setMaxListeners(0, ac.signal); // one signal ends every watch
  let filterCalls = 0;
  const waiting = new Map<string, () => void>();
  try {
    const rv = String(await store.currentRevision());
    for (let i = 0; i < nodes; i++) {
      const node = `node-${i}`;
      const w = store.watch({
        group: '', resource: 'pods', namespace: 'default', resourceVersion: rv, signal: ac.signal,
        filter: (o) => { filterCalls++; return nodeOf(o) === node; },
        ...(indexed ? { trigger: { field: 'spec.nodeName', value: node, valueOf: nodeOf } } : {}),
      });
      w.push!({ event: (ev) => { waiting.get(String(ev.object.metadata?.name))?.(); return true; }, end: () => undefined });
    }
    await new Promise((r) => setTimeout(r, 200));
    filterCalls = 0;
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < WRITES; i++) {
      const name = `p-${i}`;
      const seen = new Promise<void>((r) => waiting.set(name, r));
      await store.create({ group: '', resource: 'pods', namespace: 'default', name },
        { apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'default' }, spec: { nodeName: `node-${i % 10}` } });
      await seen;
      waiting.delete(name);
    }
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    return { msPerWrite: ms / WRITES, filterCallsPerWrite: filterCalls / WRITES };
  } finally {
    ac.abort();
    await store.close();
    await backend.close();
    await rm(dir, { recursive: true, force: true });
  }
}

console.log(`watch trigger index: ${WRITES} pod creates over 10 nodes, one spec.nodeName watch per node`);
for (const n of NODES) {
  const plain = await run(n, false);
  const indexed = await run(n, true);
  console.log(`  ${String(n).padStart(5)} node watches: unindexed ${plain.msPerWrite.toFixed(3)} ms/write (${plain.filterCallsPerWrite.toFixed(0)} filter calls), ` +
    `indexed ${indexed.msPerWrite.toFixed(3)} ms/write (${indexed.filterCallsPerWrite.toFixed(1)} filter calls)`);
}

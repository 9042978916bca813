import t from 'tap';
import { pino } from 'pino';
import type { KubeObject } from '../../src/api/resources/types.js';
import { loadCoreconfig } from '../../src/client/coreconfig.js';
import { deletedObject, isTombstone, type DeletedFinalStateUnknown } from '../../src/client/informer.js';
import { SharedInformerFactory } from '../../src/client/informer-factory.js';
import { RestClient, type ResourceRef } from '../../src/client/rest-client.js';
import { startApiserver } from '../helpers/apiserver.js';
import { SharedIndexInformer } from '../../src/client/informer.js';
import { listerWatcherFor, type ListerWatcher } from '../../src/client/reflector.js';
import type { ListOptions } from '../../src/client/rest-client.js';
import type { WatchEvent } from '../../src/client/watch-stream.js';

/** Passes list/watch through; pause() ends the open watch and holds new ones until resume(). */
class WatchGate implements ListerWatcher {
  private current: AbortController | undefined;
  private opened = 0;
  private held: Promise<void> | undefined;
  private release: (() => void) | undefined;
  constructor(private readonly inner: ListerWatcher) {}
  list(o: ListOptions): ReturnType<ListerWatcher['list']> { return this.inner.list(o); }
  async watch(o: ListOptions): Promise<AsyncIterable<WatchEvent>> {
    if (this.held) await this.held;
    const ac = new AbortController();
    this.current = ac;
    this.opened++;
    return this.inner.watch({ ...o, signal: o.signal ? AbortSignal.any([o.signal, ac.signal]) : ac.signal });
  }
  async pause(): Promise<void> {
    this.held = new Promise((r) => { this.release = r; });
    const before = this.opened;
    this.current?.abort();
    // The reflector's next watch call is now parked at the gate.
    await new Promise((r) => setTimeout(r, 0));
    void before;
  }
  resume(): void { const r = this.release; this.held = undefined; r?.(); }
}

// Watches go to storage (no watch cache) so that compaction makes old versions expire.
const api = await startApiserver({ args: ['--watch-cache=false'] });
t.teardown(() => api.stop());
const conn = await loadCoreconfig({ path: api.coreconfigPath });

async function until(what: string, cond: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

type Ev = [string, string, string?];

for (const contentType of ['application/json', 'application/vnd.kubernetes.protobuf'] as const) {
  t.test(`informer: sync, handlers, relist after compaction (${contentType})`, async (t) => {
    const ns = contentType === 'application/json' ? 'inf-json' : 'inf-proto';
    const client = new RestClient({ connection: conn, contentType, qps: 0 });
    const ac = new AbortController();
    t.teardown(() => { ac.abort(); client.close(); });
    await client.create({ group: '', version: 'v1', resource: 'namespaces' }, { metadata: { name: ns } });
    const ref: ResourceRef = { group: '', version: 'v1', resource: 'configmaps', namespace: ns };
    // More objects than one page, to exercise pagination.
    for (let i = 0; i < 5; i++) await client.create(ref, { metadata: { name: `pre-${i}`, labels: { team: i % 2 ? 'odd' : 'even' } } });

    const factory = new SharedInformerFactory({ client, minResyncPeriodMs: 0 });
    const shared = factory.informerFor({ ...ref });
    t.equal(factory.informerFor({ ...ref }), shared, 'one informer per resource');
    t.not(factory.informerFor({ ...ref, labelSelector: 'team=odd' }), shared, 'selectors make another');
    factory.start(ac.signal);
    t.equal(await factory.waitForCacheSync(ac.signal), true, 'factory informers sync');
    t.equal(shared.indexer.size, 5);
    t.equal(factory.informerFor({ ...ref, labelSelector: 'team=odd' }).indexer.size, 2, 'label selector applied');

    // The informer under test watches through a gate, so the test can hold its watch closed.
    const gate = new WatchGate(listerWatcherFor(client, ref));
    const logLines: string[] = [];
    const log = pino({ level: 'debug' }, { write: (l: string) => { logLines.push(l); } });
    const inf = new SharedIndexInformer({ lw: gate, ref, log });
    inf.addIndexers({ team: (o: KubeObject) => (o.metadata?.labels?.team ? [o.metadata.labels.team] : []) });
    const events: Ev[] = [];
    inf.addEventHandler({
      onAdd: (o, initial) => events.push(['add', o.metadata?.name ?? '', initial ? 'initial' : undefined]),
      onUpdate: (a, b) => events.push(['update', b.metadata?.name ?? '', (b.data as Record<string, string> | undefined)?.v]),
      onDelete: (o: KubeObject | DeletedFinalStateUnknown) => events.push([isTombstone(o) ? 'tombstone' : 'delete', deletedObject(o).metadata?.name ?? '']),
    });
    const running = inf.run(ac.signal);
    t.teardown(async () => { ac.abort(); await running; });
    t.equal(await inf.waitForSync(ac.signal), true);
    t.ok(inf.hasSynced());
    t.equal(inf.indexer.size, 5);
    t.equal(inf.indexer.byIndex('team', 'odd').length, 2, 'custom index');
    t.equal(inf.indexer.listNamespace(ns).length, 5, 'namespace index');
    t.equal(inf.indexer.get(ns, 'pre-0')?.kind, 'ConfigMap', 'list items get their kind');
    t.same(events.filter((e) => e[0] === 'add').length, 5);
    t.ok(events.every((e) => e[2] === 'initial'));
    events.length = 0;

    const c = await client.create(ref, { metadata: { name: 'live' }, data: { v: '1' } });
    await client.update(ref, { ...c, data: { v: '2' } });
    await client.delete(ref, 'pre-0');
    await until('watch events', () => events.length >= 3);
    t.same(events, [['add', 'live', undefined], ['update', 'live', '2'], ['delete', 'pre-0']]);
    t.equal(inf.indexer.get(ns, 'live')?.data && (inf.indexer.get(ns, 'live')?.data as Record<string, string>).v, '2', 'cache updated');

    // A late handler hears about everything already cached.
    const late: string[] = [];
    const reg = inf.addEventHandler({ onAdd: (o) => late.push(o.metadata?.name ?? '') });
    t.equal(late.length, 5);
    reg.remove();

    // Compaction while the informer is behind: its watch version expires and it relists.
    const lists = inf.listCount;
    const backend = api.parts?.storage.default;
    if (!backend) throw new Error('no backend');
    events.length = 0;
    await gate.pause();
    const writer = new RestClient({ connection: conn, contentType, qps: 0 });
    t.teardown(() => writer.close());
    await writer.delete(ref, 'pre-1');
    const l2 = await writer.get(ref, 'live');
    await writer.update(ref, { ...l2, data: { v: '3' } });
    await writer.create(ref, { metadata: { name: 'after' } });
    await backend.compact(await backend.currentRevision());
    gate.resume();
    await until('relist', () => inf.listCount > lists && events.length >= 3);
    t.ok(inf.listCount > lists, 'relisted');
    t.ok(logLines.some((l) => l.includes('resource version expired')), 'because the version expired (410)');
    t.notOk(logLines.some((l) => l.includes('list/watch failed')), 'not because of a failure');
    t.same(events.filter((e) => e[0] === 'tombstone'), [['tombstone', 'pre-1']], 'a delete seen by relist is a tombstone');
    t.ok(events.some((e) => e[0] === 'add' && e[1] === 'after'));
    t.ok(events.some((e) => e[0] === 'update' && e[1] === 'live' && e[2] === '3'));
    t.same(inf.indexer.keys().sort(), [`${ns}/after`, `${ns}/live`, `${ns}/pre-2`, `${ns}/pre-3`, `${ns}/pre-4`]);
  });
}

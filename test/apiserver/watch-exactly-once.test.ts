import t, { type Test } from 'tap';
import { startApiserver, type StartedApiserver } from '../helpers/apiserver.js';
import { skipWithoutEtcd, startEtcd } from '../helpers/etcd.js';
import { connectClient, type RestClient } from '../helpers/rest-client.js';

// Watch delivery under load, through the REST watch endpoint: writers create, update and
// delete concurrently (so the embedded store commits several revisions per batch) while
// watchers reconnect from the last resourceVersion they saw every few events. Kubernetes
// delivers exactly the events after that resourceVersion, in order, once: each watcher must
// see every write exactly once with strictly increasing resourceVersions, and what they saw
// must be the writes.

const WRITERS = 6;
const OPS_PER_WRITER = 60;
const WATCHERS = 4;
const NS = 'once';

interface Seen { type: string; name: string; rv: number }

/** A deterministic generator, so a failure replays with the same reconnect points. */
function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => { s = (s * 1664525 + 1013904223) >>> 0; return s / 2 ** 32; };
}

async function writer(c: RestClient, id: number, done: Seen[]): Promise<void> {
  const base = `/api/v1/namespaces/${NS}/configmaps`;
  let live: { name: string; rv: string } | undefined;
  let n = 0;
  for (let op = 0; op < OPS_PER_WRITER; op++) {
    if (!live) {
      const name = `w${id}-${n++}`;
      const r = await c.request('POST', base, { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { op: String(op) } } });
      if (r.status !== 201) throw new Error(`create ${name}: ${r.status} ${r.body.toString()}`);
      live = { name, rv: r.json.metadata.resourceVersion };
      done.push({ type: 'ADDED', name, rv: Number(live.rv) });
    } else if (op % 5 === 4) {
      const r = await c.request('DELETE', `${base}/${live.name}`);
      if (r.status !== 200) throw new Error(`delete ${live.name}: ${r.status} ${r.body.toString()}`);
      done.push({ type: 'DELETED', name: live.name, rv: 0 }); // the delete's revision is not in the reply
      live = undefined;
    } else {
      const body = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: live.name, resourceVersion: live.rv }, data: { op: String(op) } };
      const r = await c.request('PUT', `${base}/${live.name}`, { body });
      if (r.status !== 200) throw new Error(`update ${live.name}: ${r.status} ${r.body.toString()}`);
      live.rv = r.json.metadata.resourceVersion;
      done.push({ type: 'MODIFIED', name: live.name, rv: Number(live.rv) });
    }
  }
}

/**
 * Watches from `startRv`, reconnecting from the last resourceVersion it saw (an event's or a
 * bookmark's) after every few events, until it has `want()` events or the deadline passes.
 * Returns the events in arrival order; an ERROR event or a non-200 answer fails the run.
 */
async function watcher(c: RestClient, startRv: string, seed: number, bookmarks: boolean, want: () => number | undefined, deadline: number): Promise<{ events: Seen[]; resumes: number }> {
  const rand = prng(seed);
  const events: Seen[] = [];
  let last = startRv;
  let resumes = 0;
  for (;;) {
    const target = want();
    if (target !== undefined && events.length >= target) return { events, resumes };
    if (Date.now() > deadline) throw new Error(`watcher ${seed}: ${events.length} events before the deadline (want ${target ?? '?'})`);
    const path = `/api/v1/namespaces/${NS}/configmaps?watch=true&resourceVersion=${last}&timeoutSeconds=30${bookmarks ? '&allowWatchBookmarks=true' : ''}`;
    const s = c.stream(path);
    const status = await s.status();
    if (status !== 200) throw new Error(`watch from ${last}: ${status}`);
    // Reconnect after 1..20 events (or when the watch goes quiet, to look at `want` again).
    let budget = 1 + Math.floor(rand() * 20);
    try {
      while (budget > 0) {
        let line: string | undefined;
        try { line = await s.next(300); } catch { break; } // quiet: reconnect
        if (line === undefined) break;
        const ev = JSON.parse(line) as { type: string; object: { metadata?: { name?: string; resourceVersion?: string }; message?: string } };
        if (ev.type === 'ERROR') throw new Error(`watch from ${last}: ERROR ${ev.object.message}`);
        last = ev.object.metadata!.resourceVersion!;
        if (ev.type === 'BOOKMARK') continue;
        events.push({ type: ev.type, name: ev.object.metadata!.name!, rv: Number(last) });
        budget--;
      }
    } finally {
      s.close();
    }
    resumes++;
  }
}

/**
 * One watch started without a resourceVersion ('', a consistent list) or at '0' (any cached
 * state) while the writers run: the current objects as ADDED, then the changes after that
 * list. Read without resuming until the state it built equals `final()` (set once the writers
 * are done). Counts events that repeat or go back for an object (resourceVersion not above the
 * object's previous one).
 */
async function stateWatcher(c: RestClient, rv: '' | '0', final: () => Map<string, number> | undefined, deadline: number): Promise<{ bad: number; events: number }> {
  const state = new Map<string, number>();
  const last = new Map<string, number>();
  let bad = 0, events = 0;
  const s = c.stream(`/api/v1/namespaces/${NS}/configmaps?watch=true&resourceVersion=${rv}&timeoutSeconds=60`);
  const same = (want: Map<string, number>): boolean => want.size === state.size && [...want].every(([k, v]) => state.get(k) === v);
  try {
    if (await s.status() !== 200) throw new Error(`watch at '${rv}': ${await s.status()}`);
    for (;;) {
      const want = final();
      if (want && same(want)) return { bad, events };
      if (Date.now() > deadline) throw new Error(`watch at '${rv}': state not reached before the deadline`);
      let line: string | undefined;
      try { line = await s.next(300); } catch { continue; }
      if (line === undefined) throw new Error(`watch at '${rv}' ended`);
      const ev = JSON.parse(line) as { type: string; object: { metadata: { name: string; resourceVersion: string } } };
      if (ev.type === 'ERROR') throw new Error(`watch at '${rv}': ERROR ${line}`);
      const { name, resourceVersion } = ev.object.metadata;
      const r = Number(resourceVersion);
      events++;
      if (r <= (last.get(name) ?? 0)) bad++;
      last.set(name, r);
      if (ev.type === 'DELETED') state.delete(name); else state.set(name, r);
    }
  } finally {
    s.close();
  }
}

async function exactlyOnce(t: Test, a: StartedApiserver): Promise<void> {
  const c = await connectClient(a);
  t.teardown(() => c.close());
  t.equal((await c.request('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } } })).status, 201);
  // List, then watch from the list's resourceVersion (what an informer does).
  const startRv = (await c.request('GET', `/api/v1/namespaces/${NS}/configmaps`)).json.metadata.resourceVersion as string;

  const written: Seen[] = [];
  let total: number | undefined;
  const deadline = Date.now() + 60_000;
  const clients = await Promise.all(Array.from({ length: WATCHERS }, () => connectClient(a)));
  t.teardown(() => { for (const w of clients) w.close(); });
  const watching = clients.map((w, i) => watcher(w, startRv, 7 + i, i % 2 === 1, () => total, deadline));
  let finalState: Map<string, number> | undefined;
  const writing = Promise.all(Array.from({ length: WRITERS }, (_, i) => writer(c, i, written)));
  // Two more watchers join while the writers run: from the current state ('') and from any ('0').
  while (written.length < WRITERS * OPS_PER_WRITER / 3) await new Promise((r) => setTimeout(r, 10));
  const fromState = (['', '0'] as const).map((rv) => stateWatcher(clients[0]!, rv, () => finalState, deadline));
  await writing;
  total = written.length;
  const list = (await c.request('GET', `/api/v1/namespaces/${NS}/configmaps`)).json as { items: Array<{ metadata: { name: string; resourceVersion: string } }> };
  finalState = new Map(list.items.map((o) => [o.metadata.name, Number(o.metadata.resourceVersion)]));
  const results = await Promise.all(watching);
  for (const [i, r] of (await Promise.all(fromState)).entries()) {
    t.equal(r.bad, 0, `the watch at '${['', '0'][i]}' saw no object's event twice or out of order (${r.events} events), and reached the final state`);
  }

  const byRv = new Map<number, Seen>();
  results.forEach(({ events, resumes }, i) => {
    t.ok(resumes >= 10, `watcher ${i} resumed ${resumes} times`);
    let prev = Number(startRv);
    let bad = 0;
    for (const e of events) {
      if (e.rv <= prev) bad++;
      prev = Math.max(prev, e.rv);
      const other = byRv.get(e.rv);
      if (other && (other.type !== e.type || other.name !== e.name)) bad++;
      byRv.set(e.rv, e);
    }
    t.equal(bad, 0, `watcher ${i}: every resourceVersion after the last one, the same event as the others see`);
    t.equal(events.length, total, `watcher ${i}: ${events.length} events for ${total} writes`);
  });
  // The union is the writes: every create and update at its resourceVersion, and one DELETED per delete.
  const union = [...byRv.values()];
  const key = (e: Seen): string => `${e.type} ${e.name} ${e.type === 'DELETED' ? '' : e.rv}`;
  t.same(union.map(key).sort(), written.map(key).sort(), 'the events seen are the writes done');
}

t.test('LevelDB with the watch cache: every event exactly once, in order, across resumes', async (t) => {
  const a = await startApiserver({});
  t.teardown(() => a.stop());
  await exactlyOnce(t, a);
});

t.test('etcd with the watch cache: every event exactly once, in order, across resumes', { skip: skipWithoutEtcd() }, async (t) => {
  const etcd = await startEtcd();
  t.teardown(() => etcd.stop());
  const a = await startApiserver({ args: [`--kvstore-servers=${etcd.endpoint}`] });
  t.teardown(() => a.stop());
  await exactlyOnce(t, a);
});

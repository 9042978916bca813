// StreamTable (the map of an HTTP/2 session's open streams) against a reference Map, and in
// place of Node's own map in real HTTP/2 sessions: growth past many concurrent streams, a
// session destroyed with streams open, a graceful close that waits for them.
import t, { type Test } from 'tap';
import * as http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { PendingStreams, StreamTable, adoptStreamTable } from '../../src/util/h2-stream-table.js';
import { sessionState } from '../helpers/h2-session-state.js';

/** A small deterministic PRNG (mulberry32) so failures replay. */
function prng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

t.test('behaves as a Map for stream ids, and holds nothing it no longer has', async (t) => {
  const rnd = prng(7);
  const table = new StreamTable<{ id: number }>();
  const ref = new Map<number, { id: number }>();
  let next = 1;
  let checks = 0;
  for (let op = 0; op < 20_000; op++) {
    const r = rnd();
    // Phases of growth and of shrinking, so the table resizes both ways.
    const growing = Math.floor(op / 2_500) % 2 === 0;
    if (r < (growing ? 0.6 : 0.3)) {
      const v = { id: next };
      table.set(next, v);
      ref.set(next, v);
      next += 2;
    } else if (ref.size > 0) {
      const keys = [...ref.keys()];
      const k = keys[Math.floor(rnd() * keys.length)]!;
      if (table.delete(k) !== ref.delete(k)) { t.fail(`delete ${k} at op ${op}`); return; }
    }
    if (op % 97 === 0) {
      if (table.delete(next + 1000)) { t.fail(`deleted an absent id at op ${op}`); return; }
      if (table.size !== ref.size || table.heldValues() !== ref.size) { t.fail(`size ${table.size}, held ${table.heldValues()}, want ${ref.size} at op ${op}`); return; }
      for (const [k, v] of ref) if (table.get(k) !== v || !table.has(k)) { t.fail(`lost ${k} at op ${op}`); return; }
      checks++;
    }
  }
  t.equal(checks, Math.ceil(20_000 / 97), 'size, held values and every entry checked along the way');
  t.same([...table.keys()].sort((a, b) => a - b), [...ref.keys()].sort((a, b) => a - b));
  t.same(new Set(table.values()), new Set(ref.values()));
  t.same(new Map(table.entries()), ref);
  t.same(new Map(table), ref, 'iterable as [id, stream] pairs');
  for (const k of [...ref.keys()]) table.delete(k);
  t.equal(table.size, 0);
  t.equal(table.heldValues(), 0);
});

t.test('set replaces, clear empties, and invalid ids are refused or simply absent', async (t) => {
  const table = new StreamTable<string>();
  table.set(1, 'a').set(1, 'b');
  t.equal(table.size, 1);
  t.equal(table.get(1), 'b');
  t.throws(() => table.set(0, 'x'), RangeError);
  t.throws(() => table.set(1.5, 'x'), RangeError);
  t.throws(() => table.set(2 ** 31, 'x'), RangeError);
  t.equal(table.get(-1), undefined);
  t.equal(table.has(0), false);
  t.equal(table.delete(Number.NaN), false);
  table.set(2 ** 31 - 1, 'last');
  t.equal(table.get(2 ** 31 - 1), 'last');
  table.clear();
  t.equal(table.size, 0);
  t.equal(table.get(1), undefined);
  t.equal(table.heldValues(), 0);
});

t.test('forEach visits what was there and skips what a callback removed', async (t) => {
  const table = new StreamTable<string>().set(1, 'a').set(3, 'b').set(5, 'c').set(7, 'd');
  const seen: number[] = [];
  const self: unknown[] = [];
  table.forEach(function (this: unknown, v, id, tb) {
    seen.push(id);
    self.push(this);
    t.equal(tb, table);
    t.equal(v, table.get(id));
    // Destroying one stream may take another with it; the removed one is not visited.
    if (id === seen[0]) for (const other of [1, 3, 5, 7]) if (other !== id && other !== 5) { table.delete(other); break; }
    table.delete(id);
  }, 'ctx');
  t.equal(seen.length, 3, 'one entry removed before its turn');
  t.ok(self.every((x) => x === 'ctx'), 'thisArg passed');
  t.equal(table.size, 0);
});

t.test('PendingStreams is a small insertion-ordered set', async (t) => {
  const p = new PendingStreams<string>();
  p.add('a').add('b').add('a').add('c');
  t.equal(p.size, 3);
  t.same([...p], ['a', 'b', 'c']);
  t.same([...p.keys()], [...p.values()]);
  t.ok(p.has('b'));
  t.equal(p.delete('b'), true);
  t.equal(p.delete('b'), false);
  const seen: string[] = [];
  p.add('d');
  p.forEach((v, again, set) => {
    t.equal(v, again);
    t.equal(set, p);
    seen.push(v);
    if (v === 'a') p.delete('c'); // removed before its turn: skipped
    p.delete(v);
  });
  t.same(seen, ['a', 'd']);
  t.equal(p.size, 0);
  p.add('x');
  p.clear();
  t.equal(p.size, 0);
});

/** The table or map in which Node keeps a session's streams. */
function streamsOf(session: http2.Http2Session): unknown {
  return sessionState(session).streams;
}

async function h2Pair(t: Test, onStream: (s: http2.ServerHttp2Stream, h: http2.IncomingHttpHeaders) => void): Promise<{ server: http2.Http2Server; client: http2.ClientHttp2Session; sessions: http2.ServerHttp2Session[] }> {
  const server = http2.createServer();
  const sessions: http2.ServerHttp2Session[] = [];
  server.on('session', (s) => { t.equal(adoptStreamTable(s), true, 'server session adopted'); sessions.push(s); });
  server.on('stream', onStream);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const client = http2.connect(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  t.equal(adoptStreamTable(client), true, 'client session adopted');
  t.equal(adoptStreamTable(client), true, 'adopting twice keeps the table');
  t.teardown(() => { client.destroy(); for (const s of sessions) s.destroy(); server.close(); });
  await new Promise<void>((r, j) => { client.once('connect', () => r()); client.once('error', j); });
  return { server, client, sessions };
}

function get(client: http2.ClientHttp2Session, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = client.request({ ':path': path });
    let body = '';
    let status = 0;
    req.setEncoding('utf8');
    req.on('response', (h) => { status = Number(h[':status']); });
    req.on('data', (d: string) => { body += d; });
    req.on('end', () => resolve({ status, body }));
    req.on('error', reject);
  });
}

t.test('a real session serves many concurrent streams through the table', async (t) => {
  const N = 300;
  const waiting: http2.ServerHttp2Stream[] = [];
  const { client, sessions } = await h2Pair(t, (stream, h) => {
    stream.on('error', () => undefined);
    waiting.push(stream);
    // Answer only once all N are open at the same time, so the table grows well past its start.
    if (waiting.length === N) {
      t.equal((streamsOf(sessions[0]!) as StreamTable<unknown>).size, N, 'all open at once');
      for (const s of waiting.splice(0)) { s.respond({ ':status': 200 }); s.end(String(s.id)); }
    }
    void h;
  });
  client.setMaxListeners(0);
  const results = await Promise.all(Array.from({ length: N }, (_, i) => get(client, `/r${i}`)));
  t.ok(results.every((r) => r.status === 200 && Number(r.body) % 2 === 1), 'every stream answered with its own id');
  const serverTable = streamsOf(sessions[0]!) as StreamTable<unknown>;
  const clientTable = streamsOf(client) as StreamTable<unknown>;
  t.ok(serverTable instanceof StreamTable && clientTable instanceof StreamTable);
  t.ok(sessionState(client).pendingStreams instanceof PendingStreams && sessionState(sessions[0]!).pendingStreams instanceof PendingStreams, 'pending sets replaced too');
  t.equal((sessionState(client).pendingStreams as PendingStreams<unknown>).size, 0, 'every client stream was numbered');
  // Streams leave the table once closed (the server side may take a tick more).
  for (let i = 0; i < 100 && (serverTable.size > 0 || clientTable.size > 0); i++) await new Promise((r) => setTimeout(r, 10));
  t.equal(serverTable.size, 0);
  t.equal(serverTable.heldValues(), 0, 'no closed stream held');
  t.equal(clientTable.size, 0);
  t.equal(clientTable.heldValues(), 0);
});

t.test('destroying a session closes the streams still in its table', async (t) => {
  const open: http2.ServerHttp2Stream[] = [];
  const { client, sessions } = await h2Pair(t, (stream) => { stream.on('error', () => undefined); open.push(stream); });
  const pending = [get(client, '/a'), get(client, '/b'), get(client, '/c')].map((p) => p.then((r) => r.status === 200, () => false));
  for (let i = 0; i < 200 && open.length < 3; i++) await new Promise((r) => setTimeout(r, 5));
  t.equal(open.length, 3);
  const closed = Promise.all(open.map((s) => new Promise<void>((r) => s.once('close', () => r()))));
  sessions[0]!.destroy();
  await closed;
  t.ok(open.every((s) => s.destroyed), 'every open stream destroyed with its session');
  t.same(await Promise.all(pending), [false, false, false], 'no request was answered');
});

t.test('a graceful close waits for the open streams in the table', async (t) => {
  let held: http2.ServerHttp2Stream | undefined;
  const { client, sessions } = await h2Pair(t, (stream) => { stream.on('error', () => undefined); held = stream; });
  const answer = get(client, '/slow');
  for (let i = 0; i < 200 && !held; i++) await new Promise((r) => setTimeout(r, 5));
  let sessionClosed = false;
  sessions[0]!.close(() => { sessionClosed = true; });
  await new Promise((r) => setTimeout(r, 50));
  t.equal(sessionClosed, false, 'the session stays while a stream is open');
  held!.respond({ ':status': 200 });
  held!.end('done');
  t.same(await answer, { status: 200, body: 'done' });
  for (let i = 0; i < 200 && !sessionClosed; i++) await new Promise((r) => setTimeout(r, 5));
  t.equal(sessionClosed, true, 'and closes once it is done');
});

t.test('a session without the expected shape is left alone', async (t) => {
  const fake = { [Symbol('state')]: { streams: 'not a map' } } as unknown as http2.Http2Session;
  t.equal(adoptStreamTable(fake), false);
  t.equal(adoptStreamTable({} as unknown as http2.Http2Session), false);
});

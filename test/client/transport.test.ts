import t from 'tap';
import * as http2 from 'node:http2';
import { createServer, connect, type Socket } from 'node:net';
import { TransportError } from '../../src/client/transport.js';
import { RestClient } from '../../src/client/rest-client.js';
import { startLocalH2 } from './local-h2-server.js';

const ref = { group: '', version: 'v1', resource: 'configmaps', namespace: 'ns' };
const ok = (res: http2.Http2ServerResponse): void => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ kind: 'ConfigMap', apiVersion: 'v1', metadata: { name: 'ok' } }));
};

t.test('one session is reused; GOAWAY makes the next request reconnect', async (t) => {
  const sessions = new Set<http2.ServerHttp2Session>();
  let goaway = false;
  const srv = await startLocalH2((req, res) => {
    sessions.add(res.stream.session as http2.ServerHttp2Session);
    ok(res);
    if (goaway) { goaway = false; res.stream.session?.goaway(); }
  });
  const client = new RestClient({ connection: { server: srv.url }, contentType: 'application/json', qps: 0 });
  t.teardown(async () => { client.close(); await srv.close(); });
  await client.get(ref, 'a');
  await client.get(ref, 'b');
  await Promise.all([client.get(ref, 'c'), client.get(ref, 'd')]);
  t.equal(sessions.size, 1, 'four requests, one connection');
  goaway = true;
  await client.get(ref, 'e');
  await new Promise((r) => setTimeout(r, 20));
  await client.get(ref, 'f');
  t.equal(sessions.size, 2, 'reconnected after GOAWAY');
});

t.test('a reset POST is not resent; a reset GET is retried', async (t) => {
  let resets = 2;
  const srv = await startLocalH2((req, res) => {
    if (resets > 0) { resets--; res.stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR); return; }
    ok(res);
  });
  const sleeps: number[] = [];
  const client = new RestClient({ connection: { server: srv.url }, contentType: 'application/json', qps: 0, clock: { now: () => Date.now(), sleep: async (ms) => { sleeps.push(ms); } } });
  t.teardown(async () => { client.close(); await srv.close(); });
  const err = await client.create(ref, { metadata: { name: 'x' } }).catch((e: unknown) => e);
  t.ok(err instanceof TransportError && err.sent, 'POST fails with a TransportError that may have been applied');
  t.equal(srv.requests.length, 1, 'and is not resent');
  const got = await client.get(ref, 'x');
  t.equal(got.metadata?.name, 'ok', 'GET retried through a reset');
  t.equal(srv.requests.length, 3);
  t.equal(sleeps.length, 1, 'with a backoff');
});

t.test('connection refused: even a POST is retried (it never reached the server), within the bound', async (t) => {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  let attempts = 0;
  const client = new RestClient({ connection: { server: `http://127.0.0.1:${port}` }, contentType: 'application/json', qps: 0, maxRetries: 3, clock: { now: () => Date.now(), sleep: async () => { attempts++; } } });
  t.teardown(() => client.close());
  const err = await client.create(ref, { metadata: { name: 'x' } }).catch((e: unknown) => e);
  t.ok(err instanceof TransportError && !err.sent, 'never sent');
  t.equal(attempts, 3, 'retried maxRetries times');
});

t.test('a silently dead connection is detected by PING and the watch ends with an error', async (t) => {
  const srv = await startLocalH2((req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write(`${JSON.stringify({ type: 'ADDED', object: { kind: 'ConfigMap', apiVersion: 'v1', metadata: { name: 'a', resourceVersion: '5' } } })}\n`);
    // ...and then nothing, forever.
  });
  // A proxy that can stop forwarding bytes without closing anything.
  let frozen = false;
  const sockets: Socket[] = [];
  const proxy = createServer((c) => {
    const u = connect(Number(new URL(srv.url).port), '127.0.0.1');
    sockets.push(c, u);
    c.on('data', (d) => { if (!frozen) u.write(d); });
    u.on('data', (d) => { if (!frozen) c.write(d); });
    c.on('error', () => undefined); u.on('error', () => undefined);
    c.on('close', () => u.destroy()); u.on('close', () => c.destroy());
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  const pport = (proxy.address() as { port: number }).port;
  const client = new RestClient({ connection: { server: `http://127.0.0.1:${pport}` }, contentType: 'application/json', qps: 0, transport: { pingIntervalMs: 50, pingTimeoutMs: 100 } });
  t.teardown(async () => {
    client.close();
    for (const s of sockets) s.destroy();
    await new Promise<void>((r) => proxy.close(() => r()));
    await srv.close();
  });
  const events: string[] = [];
  let error: unknown;
  try {
    for await (const e of await client.watch(ref, { resourceVersion: '1' })) {
      events.push(e.type);
      frozen = true;
    }
  } catch (e) {
    error = e;
  }
  t.same(events, ['ADDED']);
  t.ok(error, 'the stalled watch failed instead of hanging');
});

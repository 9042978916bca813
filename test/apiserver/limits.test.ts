import t from 'tap';
import { readFile } from 'node:fs/promises';
import type { RestHandler } from '../../src/daemons/apiserver/chain.js';
import type { RequestContext } from '../../src/daemons/apiserver/context.js';
import { TokenBucket } from '../../src/daemons/apiserver/filters/connection-throttle.js';
import type { Exchange } from '../../src/daemons/apiserver/filters/filter.js';
import { inflightLimit } from '../../src/daemons/apiserver/filters/inflight-limit.js';
import { ApiError } from '../../src/api/meta/status.js';
import { effectiveTimeoutMs } from '../../src/daemons/apiserver/filters/request-timeout.js';
import { h1request, h2request, startApiserver } from '../helpers/apiserver.js';

/** Polls `cond` until true or the deadline passes. */
async function until(cond: () => boolean, what: string, deadlineMs = 5000): Promise<void> {
  const end = Date.now() + deadlineMs;
  let wait = 5;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, wait));
    wait = Math.min(wait * 2, 100);
  }
}

/** A REST stub whose requests named "block" wait on a gate; "hang" waits for the signal. */
function gatedRest() {
  let release!: () => void;
  let gate = new Promise<void>((r) => { release = r; });
  const state = { blocked: 0, aborted: [] as string[], contexts: [] as RequestContext[] };
  const rest: RestHandler = {
    async handle(ctx, _req, res) {
      state.contexts.push(ctx);
      if (ctx.info.name === 'block' || ctx.info.verb === 'watch') {
        state.blocked++;
        await gate;
        state.blocked--;
      }
      if (ctx.info.name === 'hang') {
        await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
        state.aborted.push(ctx.requestId);
        res.end('too late'); // must not reach the client
        return;
      }
      if (ctx.info.name === 'stream') {
        res.setHeader('Content-Type', 'text/plain');
        const w = res as unknown as { write(chunk: string): boolean };
        for (let i = 0; i < 30; i++) w.write('x'.repeat(99) + '\n');
        res.end();
        return;
      }
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify({ verb: ctx.info.verb, deadline: ctx.deadline ?? null, long: ctx.isLongRunning }));
    },
  };
  return { rest, state, open: () => release(), reset: () => { gate = new Promise<void>((r) => { release = r; }); } };
}

t.test('in-flight limit: 429 with Retry-After; long-running and the other pool unaffected', async (t) => {
  const g = gatedRest();
  const s = await startApiserver({ rest: g.rest, serving: { maxRequestsInflight: 1, maxMutatingRequestsInflight: 1 } });
  t.teardown(() => s.stop());
  const ca = await readFile(s.caFile);
  const first = h2request(s.url, { path: '/api/v1/namespaces/a/pods/block', ca });
  await until(() => g.state.blocked === 1, 'the first read to hold its seat');

  // With every seat held for longer than the queue wait (1 s), a queued request ends in 429.
  const rejected = await h2request(s.url, { path: '/api/v1/namespaces/a/pods/other', ca });
  t.equal(rejected.status, 429);
  t.equal(rejected.headers['retry-after'], '1');
  t.match(JSON.parse(rejected.body), { kind: 'Status', reason: 'TooManyRequests', code: 429, details: { retryAfterSeconds: 1 } });
  t.equal((await h2request(s.url, { path: '/healthz', ca })).status, 429, 'non-resource reads share the read pool');

  const write = await h2request(s.url, { path: '/api/v1/namespaces/a/pods', method: 'POST', ca, body: '{}' });
  t.equal(write.status, 200, 'writes have their own pool');

  const watch = h2request(s.url, { path: '/api/v1/namespaces/a/pods?watch=1', ca });
  await until(() => g.state.blocked === 2, 'the watch to be admitted while reads are full');

  g.open();
  t.equal((await first).status, 200);
  t.equal((await watch).status, 200);
  t.equal((await h2request(s.url, { path: '/api/v1/namespaces/a/pods/other', ca })).status, 200, 'seat released');
});

/** A minimal exchange for driving the in-flight filter directly. */
function fakeExchange(verb: string): { x: Exchange; abort: AbortController } {
  const abort = new AbortController();
  const ctx = { isLongRunning: false, signal: abort.signal, info: { isResourceRequest: true, verb } };
  return { x: { ctx, abort } as unknown as Exchange, abort };
}

t.test('in-flight limit: a burst over the limit waits FIFO for a seat; 429 + Retry-After once the queue is full', async (t) => {
  // Limit 1, queue of 2, a long wait so that only seat hand-over or a full queue decides.
  const f = inflightLimit({ maxRequestsInflight: 1, maxMutatingRequestsInflight: 1, maxQueueWaitMs: 60_000 });
  const order: string[] = [];
  let releaseFirst!: () => void;
  const first = f.run(fakeExchange('create').x, () => new Promise<void>((r) => { releaseFirst = r; }));
  const second = f.run(fakeExchange('create').x, async () => { order.push('second'); });
  const third = f.run(fakeExchange('create').x, async () => { order.push('third'); });
  // Queue full: refused at once, while the first still holds the seat.
  const refused = await f.run(fakeExchange('update').x, async () => { order.push('fourth'); }).then(() => undefined, (e: unknown) => e);
  t.ok(refused instanceof ApiError, 'refused with an ApiError');
  t.match(refused, { status: { code: 429, reason: 'TooManyRequests', details: { retryAfterSeconds: 1 } }, headers: { 'Retry-After': '1' } });
  t.same(order, [], 'queued requests wait while the seat is held');
  t.equal((await f.run(fakeExchange('get').x, async () => { order.push('read'); }).then(() => 'ok')), 'ok', 'the read pool is separate');
  releaseFirst();
  await Promise.all([first, second, third]);
  t.same(order, ['read', 'second', 'third'], 'waiters get the seat in arrival order');

  // A queued request whose client goes away leaves the queue and gets no seat.
  let releaseAgain!: () => void;
  const holder = f.run(fakeExchange('create').x, () => new Promise<void>((r) => { releaseAgain = r; }));
  const gone = fakeExchange('create');
  const leaving = f.run(gone.x, async () => { order.push('gone'); }).then(() => 'ran', () => 'refused');
  gone.abort.abort();
  t.equal(await leaving, 'refused');
  releaseAgain();
  await holder;
  await f.run(fakeExchange('create').x, async () => { order.push('after'); });
  t.same(order.slice(3), ['after'], 'the seat is free again and the aborted request never ran');

  // A wait that ends without a seat is a 429 too.
  const short = inflightLimit({ maxRequestsInflight: 1, maxMutatingRequestsInflight: 1, maxQueueWaitMs: 20 });
  let releaseShort!: () => void;
  const held = short.run(fakeExchange('create').x, () => new Promise<void>((r) => { releaseShort = r; }));
  t.match(await short.run(fakeExchange('create').x, async () => undefined).then(() => undefined, (e: unknown) => e), { status: { code: 429 } });
  releaseShort();
  await held;
});

t.test('request timeout: 504, the handler signal aborts, the late answer is dropped', async (t) => {
  const g = gatedRest();
  const s = await startApiserver({ rest: g.rest, serving: { requestTimeout: 300 } });
  t.teardown(() => s.stop());
  const ca = await readFile(s.caFile);
  const r = await h2request(s.url, { path: '/api/v1/namespaces/a/pods/hang', ca });
  t.equal(r.status, 504);
  t.match(JSON.parse(r.body), { kind: 'Status', reason: 'Timeout', code: 504 });
  t.match(JSON.parse(r.body).message, /request did not complete within requested timeout/);
  await until(() => g.state.aborted.length === 1, 'the handler to see its aborted signal');
  const r1 = await h1request(s.url, { path: '/api/v1/namespaces/a/pods/hang', ca });
  t.equal(r1.status, 504, 'HTTP/1.1 too');
  await until(() => g.state.aborted.length === 2, 'the second handler to be aborted');

  const ok = JSON.parse((await h2request(s.url, { path: '/api/v1/namespaces/a/pods/fine', ca })).body) as { deadline: number | null };
  t.type(ok.deadline, 'number', 'ordinary requests carry a deadline');
  t.equal((await h2request(s.url, { path: '/api/v1/namespaces/a/pods/x?timeout=abc', ca })).status, 400, 'bad ?timeout is 400');
  t.equal((await h2request(s.url, { path: '/healthz', ca })).status, 200, 'still serving');

  // A watch outlives the request timeout: it is long-running.
  const watch = h2request(s.url, { path: '/api/v1/namespaces/a/pods?watch=true', ca });
  await until(() => g.state.blocked === 1, 'the watch to start');
  const started = Date.now();
  await until(() => Date.now() - started > 600, 'twice the request timeout to pass');
  g.open();
  const w = await watch;
  t.equal(w.status, 200);
  t.match(JSON.parse(w.body), { verb: 'watch', deadline: null, long: true });
});

t.test('a client that goes away aborts the handler signal', async (t) => {
  const g = gatedRest();
  const s = await startApiserver({ rest: g.rest });
  t.teardown(() => s.stop());
  const ca = await readFile(s.caFile);
  await t.rejects(h2request(s.url, { path: '/api/v1/namespaces/a/pods/hang', ca, timeoutMs: 300 }), /timed out/);
  await until(() => g.state.aborted.length === 1, 'the handler to see the disconnect');
});

t.test('?timeout shortens the server limit, never lengthens it', async (t) => {
  t.equal(effectiveTimeoutMs(60_000, new URLSearchParams('timeout=32s')), 32_000);
  t.equal(effectiveTimeoutMs(60_000, new URLSearchParams('timeout=5m')), 60_000);
  t.equal(effectiveTimeoutMs(60_000, new URLSearchParams('timeout=0s')), 60_000);
  t.equal(effectiveTimeoutMs(60_000, new URLSearchParams('')), 60_000);
  t.throws(() => effectiveTimeoutMs(60_000, new URLSearchParams('timeout=soon')), /invalid timeout/);

  const g = gatedRest();
  const s = await startApiserver({ rest: g.rest });
  t.teardown(() => s.stop());
  const ca = await readFile(s.caFile);
  const r = await h2request(s.url, { path: '/api/v1/namespaces/a/pods/hang?timeout=200ms', ca });
  t.equal(r.status, 504);
  await until(() => g.state.aborted.length === 1, 'the handler to be aborted');
});

t.test('--max-connection-bytes-per-sec throttles long-running responses without losing bytes', async (t) => {
  const b = new TokenBucket(1000);
  t.equal(b.reserve(600), 0, 'burst of one second is free');
  t.equal(b.reserve(400), 0);
  const wait = b.reserve(500);
  t.ok(wait > 0 && wait <= 500, 'beyond the burst the caller waits for the debt');

  const g = gatedRest();
  const s = await startApiserver({ rest: g.rest, serving: { maxConnectionBytesPerSec: 2000 } });
  t.teardown(() => s.stop());
  const ca = await readFile(s.caFile);
  // A followed log is long-running, so it is throttled; 3000 bytes at 2000 B/s.
  const r = await h2request(s.url, { path: '/api/v1/namespaces/a/pods/stream/log?follow=true', ca });
  t.equal(r.status, 200);
  t.equal(r.body.length, 3000);
  t.equal(r.body, ('x'.repeat(99) + '\n').repeat(30));
  const plain = await h2request(s.url, { path: '/api/v1/namespaces/a/pods/stream', ca });
  t.equal(plain.body.length, 3000, 'ordinary responses are not throttled');
});

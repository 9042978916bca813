// The lean HTTP/2 request/response pair (h2-request.ts, h2-response.ts) on a real node:http2
// server and client, and the API server's listener serving every HTTP/2 stream through it
// exactly once while HTTP/1.1 keeps Node's own classes.
import t from 'tap';
import * as http from 'node:http';
import * as http2 from 'node:http2';
import { readFile } from 'node:fs/promises';
import type { RestHandler } from '../../src/daemons/apiserver/chain.js';
import { H2Request } from '../../src/daemons/apiserver/h2-request.js';
import { H2Response } from '../../src/daemons/apiserver/h2-response.js';
import { readBody } from '../../src/daemons/apiserver/rest/http-io.js';
import { h1request, h2request, startApiserver } from '../helpers/apiserver.js';
import { waitFor } from '../helpers/wait-for.js';

type StreamHandler = (req: H2Request, res: H2Response) => void;

interface Reply { status: number; headers: http2.IncomingHttpHeaders; body: Buffer; frames: number }

/** A plain-text (h2c) server handing each stream to `handler` as an H2Request/H2Response pair. */
async function leanServer(handler: StreamHandler): Promise<{ session: http2.ClientHttp2Session; close(): Promise<void> }> {
  const server = http2.createServer();
  server.on('stream', (stream, headers) => {
    stream.on('error', () => undefined);
    handler(new H2Request(stream, headers), new H2Response(stream));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  const session = http2.connect(`http://127.0.0.1:${port}`);
  session.on('error', () => undefined);
  return {
    session,
    close: async () => {
      session.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

function exchange(session: http2.ClientHttp2Session, headers: http2.OutgoingHttpHeaders, body?: Buffer | string): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = session.request(headers, { endStream: body === undefined });
    let status = 0;
    let got: http2.IncomingHttpHeaders = {};
    let frames = 0;
    const chunks: Buffer[] = [];
    req.on('response', (h) => { status = Number(h[':status']); got = h; });
    req.on('data', (d: Buffer) => { frames++; chunks.push(d); });
    req.on('end', () => resolve({ status, headers: got, body: Buffer.concat(chunks), frames }));
    req.on('error', reject);
    if (body !== undefined) req.end(body);
  });
}

t.test('response: headers, status, body, end callback', async (t) => {
  let ended = false;
  let sentBeforeEnd: boolean | undefined;
  const s = await leanServer((req, res) => {
    t.equal(req.method, 'GET');
    t.equal(req.url, '/a/b?x=1');
    t.equal(req.headers['x-test'], 'yes');
    res.statusCode = 201;
    res.setHeader('Content-Type', 'application/json');
    res.setHeader('X-Multi', ['a', 'b']);
    res.setHeader('Connection', 'close'); // dropped: no such header in HTTP/2
    res.setHeader('X-Gone', '1');
    t.equal(res.getHeader('content-type'), 'application/json');
    t.ok(res.hasHeader('X-GONE'));
    res.removeHeader('x-gone');
    t.notOk(res.hasHeader('x-gone'));
    sentBeforeEnd = res.headersSent;
    const body = '{"ok":true}';
    res.setHeader('Content-Length', Buffer.byteLength(body));
    res.end(body, () => { ended = true; });
    t.ok(res.writableEnded);
    t.ok(res.headersSent);
    t.throws(() => res.setHeader('X-Late', '1'), { code: 'ERR_HTTP2_HEADERS_SENT' });
  });
  t.teardown(() => s.close());
  const r = await exchange(s.session, { ':path': '/a/b?x=1', 'x-test': 'yes' });
  t.equal(r.status, 201);
  t.equal(sentBeforeEnd, false);
  t.equal(r.headers['content-type'], 'application/json');
  t.equal(r.headers['content-length'], '11');
  t.equal(r.headers['x-multi'], 'a, b');
  t.equal(r.headers['connection'], undefined);
  t.equal(r.headers['x-gone'], undefined);
  t.ok(r.headers['date'], 'a Date header, as the compat layer sends');
  t.equal(r.body.toString(), '{"ok":true}');
  t.equal(r.frames, 1, 'the body arrives in one DATA frame');
  await waitFor('ended', () => ended);
});

t.test('response: header names that Object.prototype also has are plain headers', async (t) => {
  const s = await leanServer((_req, res) => {
    t.equal(res.getHeader('constructor'), undefined, 'nothing is inherited');
    t.notOk(res.hasHeader('toString'));
    res.setHeader('Constructor', 'c');
    res.setHeader('__proto__', 'p');
    res.setHeader('hasOwnProperty', 'h');
    t.equal(res.getHeader('constructor'), 'c');
    t.equal(res.getHeader('__proto__'), 'p');
    res.end();
  });
  t.teardown(() => s.close());
  const r = await exchange(s.session, { ':path': '/' });
  t.equal(r.status, 200);
  t.equal(r.headers['constructor'], 'c');
  t.equal(r.headers['__proto__'], 'p');
  t.equal(r.headers['hasownproperty'], 'h');
});

t.test('response: writeHead, write, flushHeaders, empty end, HEAD', async (t) => {
  const s = await leanServer((req, res) => {
    if (req.url === '/stream') {
      res.writeHead(200, { 'Content-Type': 'text/plain', 'X-Undefined': undefined });
      t.throws(() => res.writeHead(500), { code: 'ERR_HTTP2_HEADERS_SENT' });
      res.flushHeaders(); // no-op once sent
      t.equal(res.write('one '), true);
      res.write(Buffer.from('two'), () => res.end());
    } else if (req.url === '/flush') {
      res.statusCode = 202;
      res.flushHeaders();
      t.ok(res.headersSent);
      res.end();
    } else if (req.url === '/empty') {
      res.statusCode = 204;
      res.end();
      res.end(); // a second end is harmless
    } else {
      res.setHeader('Content-Length', '5');
      res.write('hello');
      res.end();
    }
  });
  t.teardown(() => s.close());
  const a = await exchange(s.session, { ':path': '/stream' });
  t.equal(a.status, 200);
  t.equal(a.headers['x-undefined'], undefined);
  t.equal(a.body.toString(), 'one two');
  const b = await exchange(s.session, { ':path': '/flush' });
  t.equal(b.status, 202);
  t.equal(b.body.length, 0);
  const c = await exchange(s.session, { ':path': '/empty' });
  t.equal(c.status, 204);
  const d = await exchange(s.session, { ':path': '/head', ':method': 'HEAD' });
  t.equal(d.status, 200);
  t.equal(d.headers['content-length'], '5');
  t.equal(d.body.length, 0);
});

t.test('request body: read from the stream, limits, drained when unread', async (t) => {
  const seen: string[] = [];
  const s = await leanServer((req, res) => {
    const limit = req.url === '/small' ? 10 : 1 << 20;
    if (req.url === '/ignore') { res.statusCode = 200; res.end('ignored'); return; }
    readBody(req, limit).then((b) => {
      seen.push(`body ${b.length}`);
      res.end(b);
    }, (e: { code?: number }) => {
      seen.push(`error ${e.code}`);
      res.statusCode = e.code ?? 500;
      res.end();
    });
  });
  t.teardown(() => s.close());
  const big = Buffer.alloc(200_000, 7);
  const r = await exchange(s.session, { ':path': '/echo', ':method': 'POST' }, big);
  t.equal(r.status, 200);
  t.ok(r.body.equals(big), 'the whole body came back');
  const tooBig = await exchange(s.session, { ':path': '/small', ':method': 'POST' }, 'x'.repeat(100));
  t.equal(tooBig.status, 413);
  const declared = await exchange(s.session, { ':path': '/small', ':method': 'POST', 'content-length': '100' }, 'x'.repeat(100));
  t.equal(declared.status, 413);
  const empty = await exchange(s.session, { ':path': '/echo', ':method': 'DELETE' });
  t.equal(empty.status, 200);
  t.equal(empty.body.length, 0);
  const ignored = await exchange(s.session, { ':path': '/ignore', ':method': 'POST' }, Buffer.alloc(100_000));
  t.equal(ignored.body.toString(), 'ignored');
  // The session still works after a body nobody read.
  t.equal((await exchange(s.session, { ':path': '/echo', ':method': 'POST' }, 'again')).body.toString(), 'again');
  t.same(seen, ['body 200000', 'error 413', 'error 413', 'body 0', 'body 5']);
});

t.test('end(body): END_STREAM goes out only once the body\'s write completed', async (t) => {
  // A stream whose request body was read to its end is destroyed as soon as it closes; had the
  // body and END_STREAM gone out together, the body's write would complete on a destroyed
  // stream, and Node builds an ERR_STREAM_DESTROYED Error (with its stack) for every such
  // response. So the stream's writable side must still be open right after end(body).
  let openRightAfterEnd: boolean | undefined;
  let endedLater = false;
  const s = await leanServer((req, res) => {
    readBody(req, 1 << 20).then((b) => {
      res.statusCode = 201;
      res.end(b);
      openRightAfterEnd = res.writableEnded && !res.stream.writableEnded;
      res.stream.once('finish', () => { endedLater = true; });
    }, () => res.end());
  });
  t.teardown(() => s.close());
  const r = await exchange(s.session, { ':path': '/create', ':method': 'POST' }, '{"kind":"ConfigMap"}');
  t.equal(r.status, 201);
  t.equal(r.body.toString(), '{"kind":"ConfigMap"}', 'the body arrives whole');
  t.equal(openRightAfterEnd, true, 'the response is ended but END_STREAM waits for the body\'s write');
  await waitFor('the stream ended', () => endedLater);
});

t.test('end(body) on an unread request: body and END_STREAM go out together', async (t) => {
  // Nobody read the GET's stream, so Node destroys it only after its readable side ends (a
  // later tick), and the body's write completes on a live stream: the end needs no second write.
  let endedWithBody: boolean | undefined;
  let flowing: boolean | null | undefined;
  const s = await leanServer((_req, res) => {
    flowing = res.stream.readableFlowing;
    res.end('{"kind":"ConfigMap"}');
    endedWithBody = res.stream.writableEnded;
  });
  t.teardown(() => s.close());
  for (let i = 0; i < 3; i++) {
    const r = await exchange(s.session, { ':path': '/get', ':method': 'GET' });
    t.equal(r.status, 200);
    t.equal(r.body.toString(), '{"kind":"ConfigMap"}', 'the body arrives whole');
    t.equal(r.frames, 1, 'in one DATA frame');
  }
  t.equal(flowing, null, 'the request was not read');
  t.equal(endedWithBody, true, 'the stream\'s writable side ended with the body');
});

t.test('back-pressure: write returns false and drain follows', async (t) => {
  let sawFalse = false;
  let drained = false;
  const s = await leanServer((_req, res) => {
    res.writeHead(200);
    const chunk = Buffer.alloc(64 * 1024, 1);
    let n = 0;
    const pump = (): void => {
      while (n < 64) {
        n++;
        if (!res.write(chunk)) {
          sawFalse = true;
          res.once('drain', () => { drained = true; pump(); });
          return;
        }
      }
      res.end();
    };
    pump();
  });
  t.teardown(() => s.close());
  const r = await exchange(s.session, { ':path': '/big' });
  t.equal(r.body.length, 64 * 64 * 1024);
  t.ok(sawFalse, 'write reported a full buffer');
  t.ok(drained, 'drain was delivered');
});

t.test('a reset stream: close on both sides, writes dropped, writableEnded stays false', async (t) => {
  const events: string[] = [];
  let res: H2Response | undefined;
  let writeErr: unknown;
  const s = await leanServer((req, r) => {
    res = r;
    req.on('close', () => events.push('req close'));
    r.once('finish', () => events.push('res finish'));
    r.on('close', () => {
      events.push(`res close ended=${r.writableEnded}`);
      t.equal(r.write('late', (e) => { writeErr = e; }), false);
      r.end(); // quietly ignored
    });
    r.writeHead(200);
    r.write('first');
  });
  t.teardown(() => s.close());
  const req = s.session.request({ ':path': '/w' });
  req.on('error', () => undefined);
  await new Promise<void>((r) => req.once('data', () => r()));
  req.close(http2.constants.NGHTTP2_CANCEL);
  await waitFor('writeErr !== undefined', () => writeErr !== undefined);
  t.match(events, ['req close', 'res finish', 'res close ended=false']);
  t.ok(res?.destroyed);
  t.notOk(res?.writableEnded);
  t.match(writeErr, { code: 'ERR_HTTP2_INVALID_STREAM' });
});

t.test('the API server: HTTP/2 streams through the lean pair once each, HTTP/1.1 unchanged', async (t) => {
  const calls: string[] = [];
  const errorListeners: number[] = [];
  const rest: RestHandler = {
    async handle(ctx, req, res) {
      const kind = req instanceof H2Request && res instanceof H2Response ? 'lean'
        : req instanceof http.IncomingMessage && res instanceof http.ServerResponse ? 'http1' : 'other';
      calls.push(`${kind} ${req.method}`);
      if (req instanceof H2Request && req.method === 'GET') errorListeners.push(req.stream.listenerCount('error'));
      const body = req.method === 'POST' ? (await readBody(req)).toString() : '';
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify({ user: ctx.user.name, body }));
    },
  };
  const s = await startApiserver({ rest });
  t.teardown(() => s.stop());
  const [ca, cert, key] = await Promise.all([readFile(s.caFile), readFile(s.clientCertFile), readFile(s.clientKeyFile)]);
  const path = '/api/v1/namespaces/default/configmaps';

  const got = await h2request(s.url, { path, ca, cert, key });
  t.equal(got.status, 200);
  t.same(JSON.parse(got.body), { user: 'admin', body: '' }, 'the client certificate is read from the session socket');
  const posted = await h2request(s.url, { path, method: 'POST', ca, cert, key, body: '{"a":1}', headers: { 'content-type': 'application/json' } });
  t.same(JSON.parse(posted.body), { user: 'admin', body: '{"a":1}' });
  const h1 = await h1request(s.url, { path, method: 'POST', ca, cert, key, body: 'h1' });
  t.same(JSON.parse(h1.body), { user: 'admin', body: 'h1' });
  t.equal(h1.protocol, 'http/1.1');
  const cont = await h2request(s.url, { path, method: 'POST', ca, cert, key, body: 'c', headers: { expect: '100-continue' } });
  t.same(JSON.parse(cont.body), { user: 'admin', body: 'c' }, 'Expect: 100-continue is answered and served');
  const odd = await h2request(s.url, { path, ca, cert, key, headers: { expect: 'something-else' } });
  t.equal(odd.status, 417);
  t.same(calls, ['lean GET', 'lean POST', 'http1 POST', 'lean POST'], 'each request reached the handler exactly once');
  t.same(errorListeners, [1], "a served stream's errors have one listener (the chain's), never none");
});

t.test('the API server: a reset stream aborts the request, a failure after the headers resets the stream', async (t) => {
  let aborted = false;
  let started = false;
  const rest: RestHandler = {
    async handle(ctx, _req, res) {
      if (ctx.info.name === 'wait') {
        started = true;
        await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
        aborted = true;
        return;
      }
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.write('{"partial":');
      throw new Error('boom after the headers');
    },
  };
  const s = await startApiserver({ rest });
  t.teardown(() => s.stop());
  const [ca, cert, key] = await Promise.all([readFile(s.caFile), readFile(s.clientCertFile), readFile(s.clientKeyFile)]);
  const session = http2.connect(s.url, { ca, cert, key });
  session.on('error', () => undefined);
  t.teardown(() => session.destroy());

  const waiting = session.request({ ':path': '/api/v1/namespaces/default/configmaps/wait' });
  waiting.on('error', () => undefined);
  await waitFor('started', () => started);
  waiting.close(http2.constants.NGHTTP2_CANCEL);
  await waitFor('aborted', () => aborted);
  t.ok(aborted, 'the handler saw its signal aborted when the client reset the stream');

  const cut = session.request({ ':path': '/api/v1/namespaces/default/configmaps/fail' });
  cut.on('error', () => undefined);
  let status = 0;
  const body: Buffer[] = [];
  cut.on('response', (h) => { status = Number(h[':status']); });
  cut.on('data', (d: Buffer) => body.push(d));
  await new Promise<void>((r) => cut.once('close', () => r()));
  t.equal(status, 200);
  t.equal(cut.rstCode, http2.constants.NGHTTP2_INTERNAL_ERROR, 'the half-sent response is cut off with INTERNAL_ERROR');
  t.equal(Buffer.concat(body).toString(), '{"partial":');
});

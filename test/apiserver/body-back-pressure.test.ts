// Response bodies and slow readers (issue 27), on an in-process server: a request whose body
// is still being written keeps its in-flight seat until the client has taken it or left (also
// a pipelined request queued behind another), a reader slower than the request timeout is cut
// off, and the connection throttle waits for the connection instead of writing ahead of it.
import t from 'tap';
import { EventEmitter } from 'node:events';
import { readFile } from 'node:fs/promises';
import * as http2 from 'node:http2';
import * as tls from 'node:tls';
import type { RestHandler } from '../../src/daemons/apiserver/chain.js';
import type { ApiResponse } from '../../src/daemons/apiserver/context.js';
import { TokenBucket, throttleResponse } from '../../src/daemons/apiserver/filters/connection-throttle.js';
import { writeBody } from '../../src/daemons/apiserver/rest/http-io.js';
import { h2request, startApiserver, type StartedApiserver } from '../helpers/apiserver.js';
import { waitFor } from '../helpers/wait-for.js';

/** Larger than what the kernel's socket buffers on both sides can absorb. */
const BIG = Buffer.alloc(48 * 1024 * 1024, 0x78);
const BIG_PATH = '/api/v1/namespaces/default/configmaps/big';
const SMALL_PATH = '/api/v1/namespaces/default/configmaps/small';

const rest: RestHandler = {
  async handle(ctx, _req, res) {
    if (ctx.info.name === 'big') writeBody(res, 200, BIG, 'text/plain');
    else writeBody(res, 200, Buffer.from('{"kind":"Small"}'), 'application/json');
  },
};

interface Creds { ca: Buffer; cert: Buffer; key: Buffer }

async function creds(s: StartedApiserver): Promise<Creds> {
  const [ca, cert, key] = await Promise.all([readFile(s.caFile), readFile(s.clientCertFile), readFile(s.clientKeyFile)]);
  return { ca, cert, key };
}

/** An HTTP/1.1 connection that sends `requests` GETs at once (pipelined) and does not read. */
function slowReader(s: StartedApiserver, c: Creds, paths: string[]): Promise<tls.TLSSocket> {
  return new Promise((resolve, reject) => {
    const sock = tls.connect({ host: '127.0.0.1', port: s.port, ...c, ALPNProtocols: ['http/1.1'], servername: 'localhost' }, () => {
      sock.write(paths.map((p) => `GET ${p} HTTP/1.1\r\nHost: localhost\r\n\r\n`).join(''));
      resolve(sock);
    });
    sock.on('error', reject);
  });
}

async function probe(s: StartedApiserver, c: Creds): Promise<number> {
  return (await h2request(s.url, { path: SMALL_PATH, ...c })).status;
}

async function metrics(s: StartedApiserver, c: Creds): Promise<string> {
  return (await h2request(s.url, { path: '/metrics', ...c })).body;
}

t.test('a body still being written keeps its seat until the slow reader leaves', async (t) => {
  // With a request timeout (which waits for the body too) and without one (the limit alone).
  for (const requestTimeout of [60_000, 0]) {
    const s = await startApiserver({ rest, serving: { maxRequestsInflight: 1, requestTimeout } });
    t.teardown(() => s.stop());
    const c = await creds(s);
    t.equal(await probe(s, c), 200, `a seat is free (--request-timeout=${requestTimeout}ms)`);
    const slow = await slowReader(s, c, [BIG_PATH]);
    t.teardown(() => slow.destroy());
    await waitFor('the seat taken by the slow reader', async () => (await probe(s, c)) === 429, 20_000);
    slow.destroy();
    await waitFor('the seat back once the reader left', async () => (await probe(s, c)) === 200, 20_000);
  }
});

t.test('over HTTP/2 too: a stream the client does not read keeps its seat until it is reset', async (t) => {
  const s = await startApiserver({ rest, serving: { maxRequestsInflight: 1 } });
  t.teardown(() => s.stop());
  const c = await creds(s);
  const session = http2.connect(s.url, c);
  session.on('error', () => undefined);
  t.teardown(() => session.destroy());
  const stream = session.request({ ':path': BIG_PATH });
  stream.on('error', () => undefined);
  stream.pause(); // never read: the flow-control window closes
  await waitFor('the seat taken by the unread stream', async () => (await probe(s, c)) === 429, 20_000);
  stream.close(http2.constants.NGHTTP2_CANCEL);
  await waitFor('the seat back once the stream was reset', async () => (await probe(s, c)) === 200, 20_000);
});

t.test('pipelined requests queued behind a slow one give their seats back when the connection goes', async (t) => {
  const s = await startApiserver({ rest, serving: { maxRequestsInflight: 2 } });
  t.teardown(() => s.stop());
  const c = await creds(s);
  const slow = await slowReader(s, c, [BIG_PATH, BIG_PATH]);
  t.teardown(() => slow.destroy());
  await waitFor('both seats taken by the one connection', async () => (await probe(s, c)) === 429, 20_000);
  slow.destroy();
  // Every seat back: the scrape itself is then the only read in flight.
  await waitFor('both seats back once the connection closed', async () => /apiserver_current_inflight_requests\{request_kind="readOnly"\} 1\n/.test(await metrics(s, c)), 20_000);
  t.equal(await probe(s, c), 200);
});

t.test('a reader slower than the request timeout is cut off and its seat freed', async (t) => {
  const s = await startApiserver({ rest, serving: { maxRequestsInflight: 1, requestTimeout: 1000 } });
  t.teardown(() => s.stop());
  const c = await creds(s);
  const slow = await slowReader(s, c, [BIG_PATH]);
  t.teardown(() => slow.destroy());
  await waitFor('the seat back after the deadline', async () => (await probe(s, c)) === 200, 20_000);
  // Now read what the server had sent: the connection ends before the whole body.
  let received = 0;
  await new Promise<void>((resolve) => {
    // (A whole body would leave the keep-alive connection open: stop reading there.)
    slow.on('data', (d: Buffer) => { received += d.length; if (received >= BIG.length) resolve(); });
    slow.on('close', () => resolve());
    slow.on('end', () => resolve());
    slow.on('error', () => resolve());
    slow.resume();
  });
  t.ok(received < BIG.length, `the body was cut off (${received} of ${BIG.length} bytes)`);
});

t.test('HTTP/2 advertises 250 concurrent streams by default, as Kubernetes', async (t) => {
  for (const [option, want] of [[undefined, 250], [0, 250], [1000, 1000]] as const) {
    const s = await startApiserver({ servingOnly: true, serving: option === undefined ? {} : { http2MaxStreamsPerConnection: option } });
    const ca = await readFile(s.caFile);
    const settings = await new Promise<http2.Settings>((resolve, reject) => {
      const session = http2.connect(s.url, { ca });
      session.on('error', reject);
      session.on('remoteSettings', (st) => { session.close(); resolve(st); });
    });
    t.equal(settings.maxConcurrentStreams, want, `--http2-max-streams-per-connection=${option ?? 'unset'}`);
    await s.stop();
  }
});

t.test('the connection throttle waits for the connection to drain', async (t) => {
  // A response whose connection takes nothing more until it drains.
  const fake = new EventEmitter() as EventEmitter & { written: number; write(b: Buffer, cb?: () => void): boolean; end(cb?: () => void): void };
  fake.written = 0;
  fake.write = (b: Buffer): boolean => { fake.written += b.length; return false; };
  let ended = false;
  fake.end = (cb?: () => void): void => { ended = true; cb?.(); };
  const signal = new AbortController().signal;
  throttleResponse(fake as unknown as ApiResponse, new TokenBucket(1_000_000), signal);
  const res = fake as unknown as { write(b: Buffer): boolean; end(): void };
  res.write(Buffer.alloc(1000));
  res.write(Buffer.alloc(1000));
  res.end();
  await waitFor('the first write', () => fake.written >= 1000);
  await new Promise((r) => setImmediate(r));
  t.equal(fake.written, 1000, 'nothing more before the connection drained');
  fake.emit('drain');
  await waitFor('the second write after the drain', () => fake.written === 2000);
  t.notOk(ended, 'the end waits for the second write to drain');
  fake.emit('drain');
  await waitFor('the end', () => ended);
});

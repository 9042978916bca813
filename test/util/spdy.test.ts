// The SPDY/3 pieces on their own: the header dictionary, header blocks, frame splitting, and a
// client and a server session talking over a real TCP connection (streams, half-close, reset,
// ping). Interoperability with Go's implementation is covered by test/e2e/kubectl-exec.test.ts.
import { createHash } from 'node:crypto';
import { createServer, connect, type Socket } from 'node:net';
import t from 'tap';
import { SPDY3_HEADER_DICTIONARY } from '../../src/util/spdy/dictionary.js';
import { controlFrame, dataFrame, FLAG_FIN, FrameReader, FrameType, words } from '../../src/util/spdy/frames.js';
import { decodeHeaderBlock, encodeHeaderBlock, HeaderCompressor, HeaderDecompressor } from '../../src/util/spdy/header-codec.js';
import { SpdySession, type SpdyStream } from '../../src/util/spdy/session.js';

t.test('the header dictionary is the 1 423 bytes of SPDY/3', async (t) => {
  t.equal(SPDY3_HEADER_DICTIONARY.length, 1423);
  t.equal(createHash('sha256').update(SPDY3_HEADER_DICTIONARY).digest('hex'), '51d27341373f923f3cd88e1eb7162aeaa3723d7585ff2399201dc06498407f02');
});

t.test('header blocks round-trip through one compression context', async (t) => {
  const block = encodeHeaderBlock({ StreamType: 'error', port: ['80', '81'] });
  t.same(decodeHeaderBlock(block), { streamtype: ['error'], port: ['80', '81'] });
  const c = new HeaderCompressor();
  const d = new HeaderDecompressor();
  for (let i = 0; i < 5; i++) {
    const z = await c.compress({ streamtype: 'data', requestid: String(i) });
    t.same(await d.decompress(z), { streamtype: ['data'], requestid: [String(i)] }, `block ${i}`);
  }
  c.close();
  d.close();
  t.throws(() => decodeHeaderBlock(Buffer.from([0, 0, 0, 1, 0, 0, 0, 9])), /truncated/);
});

t.test('frames split at any byte boundary', async (t) => {
  const bytes = Buffer.concat([dataFrame(3, FLAG_FIN, Buffer.from('hello')), controlFrame(FrameType.Ping, 0, words(7))]);
  const r = new FrameReader();
  const frames = [];
  for (const b of bytes) frames.push(...r.push(Buffer.from([b])));
  t.equal(frames.length, 2);
  t.match(frames[0], { kind: 'data', streamId: 3, flags: FLAG_FIN });
  t.equal(frames[0]?.kind === 'data' ? frames[0].data.toString() : '', 'hello');
  t.match(frames[1], { kind: 'control', type: FrameType.Ping });
  t.throws(() => new FrameReader().push(Buffer.from([0x80, 2, 0, 6, 0, 0, 0, 0])), /unsupported SPDY version 2/);
});

function readAll(s: SpdyStream): Promise<string> {
  return new Promise((resolve) => {
    let out = '';
    s.on('data', (d: Buffer) => { out += d.toString(); });
    s.on('end', () => resolve(out));
  });
}

t.test('client and server sessions over TCP', async (t) => {
  const seen: Array<Record<string, string[]>> = [];
  const server = createServer((sock) => {
    // An echo server: every stream's bytes come back upper-cased; FIN is answered with FIN.
    new SpdySession(sock, {
      client: false,
      onStream: (s) => {
        seen.push(s.headers);
        if (s.header('streamtype') === 'refuse') { s.reset(); return; }
        void s.reply({}).then(() => {
          s.on('data', (d: Buffer) => s.write(d.toString().toUpperCase()));
          s.on('end', () => s.end());
        });
      },
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  const sock: Socket = connect(port, '127.0.0.1');
  await new Promise<void>((r) => sock.once('connect', () => r()));
  const client = new SpdySession(sock, { client: true });
  t.teardown(() => { client.destroy(); server.close(); });

  const a = await client.openStream({ streamtype: 'data', port: '80' });
  const b = await client.openStream({ streamtype: 'error', port: '80' });
  t.equal(a.id, 1);
  t.equal(b.id, 3, 'client streams are odd');
  const aOut = readAll(a);
  const bOut = readAll(b);
  a.write('hello ');
  b.write('other');
  a.end('world');
  b.end();
  t.equal(await aOut, 'HELLO WORLD', 'data both ways, FIN ends the reply');
  t.equal(await bOut, 'OTHER', 'streams stay apart');
  t.same(seen[0], { streamtype: ['data'], port: ['80'] }, 'headers arrive');
  const big = 'x'.repeat(200_000);
  const c = await client.openStream({ streamtype: 'data' });
  const cOut = readAll(c);
  c.end(big);
  t.equal((await cOut).length, big.length, 'large payloads cross in many frames');
  await t.rejects(client.openStream({ streamtype: 'refuse' }), /reset by peer/, 'a refused stream rejects');
  sock.destroy();
  await client.closed;
  await t.rejects(client.openStream({ streamtype: 'data' }), /closed/);
});

// The batch log's line arena: lines encoded when added and written in the order added, batch by
// batch, across chunk boundaries, with multi-byte characters and lines larger than a chunk; a
// write that throws still drops its batch (the next batch is not shifted); emptied chunks are reused.
import t from 'tap';
import { LineArena } from '../../../src/daemons/apiserver/audit/line-arena.js';

function takeText(a: LineArena, bytes: number): string {
  const parts: Buffer[] = [];
  // The pieces are views of the arena's chunks: copied before the arena reuses them.
  a.take(bytes, (p) => parts.push(Buffer.from(p)));
  return Buffer.concat(parts).toString('utf8');
}

t.test('lines come back in order, batch by batch, across chunks', async (t) => {
  const a = new LineArena();
  const lines = Array.from({ length: 500 }, (_, i) => `{"n":${i},"pad":"${'x'.repeat(300 + (i % 7))}","u":"é✓"}\n`);
  const sizes = lines.map((l) => a.add(l));
  t.same(sizes, lines.map((l) => Buffer.byteLength(l)), 'each add answers its UTF-8 byte count');
  t.equal(a.pending, sizes.reduce((x, y) => x + y, 0));
  let got = '';
  for (let i = 0; i < lines.length; i += 37) {
    const batch = sizes.slice(i, i + 37).reduce((x, y) => x + y, 0);
    got += takeText(a, batch);
  }
  t.equal(got, lines.join(''), '500 lines of ~320 bytes (several 64 KiB chunks) come back whole and in order');
  t.equal(a.pending, 0);
});

t.test('ASCII lines copied and others encoded give the same bytes', async (t) => {
  const a = new LineArena();
  const lines = ['{"u":"plain"}\n', '{"u":"\u00fcn\u00efc\u00f8d\u00e9 \u2713 \u{1f600}"}\n', '{"u":"again plain"}\n'];
  const sizes = lines.map((l) => a.add(l, /^[\x00-\x7f]*$/.test(l)));
  t.same(sizes, lines.map((l) => Buffer.byteLength(l)));
  t.equal(takeText(a, sizes.reduce((x, y) => x + y, 0)), lines.join(''));
});

t.test('a line larger than a chunk gets its own', async (t) => {
  const a = new LineArena();
  const small = '{"a":1}\n';
  const big = `{"body":"${'y'.repeat(100_000)}"}\n`;
  const n1 = a.add(small);
  const n2 = a.add(big);
  const n3 = a.add(small);
  t.equal(takeText(a, n1 + n2), small + big);
  t.equal(takeText(a, n3), small);
});

t.test('a write that throws drops its batch only', async (t) => {
  const a = new LineArena();
  const first = a.add('first\n');
  const second = a.add('second\n');
  t.throws(() => a.take(first, () => { throw new Error('disk full'); }), /disk full/);
  t.equal(takeText(a, second), 'second\n', 'the next batch starts where the failed one ended');
});

t.test('lines added while earlier ones wait are kept apart', async (t) => {
  const a = new LineArena();
  const sizes: number[] = [];
  let expect = '';
  // Interleave adds and takes so the oldest chunk is emptied while later ones fill (and is reused).
  for (let round = 0; round < 20; round++) {
    for (let i = 0; i < 150; i++) {
      const l = `r${round}-${i}-${'z'.repeat(200)}\n`;
      sizes.push(a.add(l));
      expect += l;
    }
    const batch = sizes.splice(0, 100).reduce((x, y) => x + y, 0);
    const text = takeText(a, batch);
    t.equal(text, expect.slice(0, text.length));
    expect = expect.slice(text.length);
  }
  t.equal(takeText(a, sizes.reduce((x, y) => x + y, 0)), expect, 'the rest, after 20 rounds');
});

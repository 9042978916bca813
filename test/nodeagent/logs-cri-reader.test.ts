// The CRI log reader on hand-written files: parsing, P/F joining per stream, tail, since,
// timestamps, byte limits, trailing partial lines, and follow across a rotation.
import t from 'tap';
import { appendFile, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseCriLogLine, parseRfc3339Ms, readCriLog, type ReadCriLogOptions } from '../../src/daemons/nodeagent/runtime/logs/cri-log-reader.js';
import { FakeLogWriter } from '../../src/daemons/nodeagent/runtime/fake/fake-log-writer.js';
import pino from 'pino';

const dir = await mkdtemp(join(tmpdir(), 'corectl-logs-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));

async function read(path: string, opts: ReadCriLogOptions = {}): Promise<string> {
  const out: Buffer[] = [];
  for await (const c of readCriLog(path, opts)) out.push(c);
  return Buffer.concat(out).toString('utf8');
}

const sample = [
  '2026-11-22T01:01:26.038746994Z stdout F hello',
  '2026-11-22T01:01:26.1Z stderr P err-',
  '2026-11-22T01:01:27.5Z stdout P big-',
  '2026-11-22T01:01:27.6Z stderr F part',
  '2026-11-22T01:01:27.7Z stdout P middle-',
  '2026-11-22T01:01:28Z stdout F end',
  'garbage line that is not CRI',
  '2026-11-22T01:01:29.000000001Z stdout F ',
  '2026-11-22T01:01:30.25Z stdout F last words',
].join('\n') + '\n';

t.test('parse', async (t) => {
  const r = parseCriLogLine(Buffer.from('2026-11-22T01:01:26.038746994Z stdout F hello world'));
  t.ok(r);
  t.equal(r?.stream, 'stdout');
  t.equal(r?.partial, false);
  t.equal(r?.message.toString(), 'hello world');
  t.equal(r?.timeMs, Date.UTC(2026, 10, 22, 1, 1, 26, 38));
  t.equal(parseCriLogLine(Buffer.from('nonsense')), null);
  t.equal(parseCriLogLine(Buffer.from('2026-11-22T01:01:26Z stdin F x')), null);
  t.equal(parseCriLogLine(Buffer.from('2026-11-22T01:01:26Z stdout F'))?.message.length, 0, 'empty message');
  t.equal(parseRfc3339Ms('2026-11-22T01:01:26+01:00'), Date.UTC(2026, 10, 22, 0, 1, 26));
  t.ok(Number.isNaN(parseRfc3339Ms('yesterday')));
});

t.test('join, strip, filter', async (t) => {
  const p = join(dir, 'a.log');
  await writeFile(p, sample);
  t.equal(await read(p), 'hello\nerr-part\nbig-middle-end\n\nlast words\n', 'P records joined per stream, garbage skipped');
  t.equal(await read(p, { stream: 'stdout' }), 'hello\nbig-middle-end\n\nlast words\n');
  t.equal(await read(p, { stream: 'stderr' }), 'err-part\n');
  t.equal(await read(p, { tail: 2 }), '\nlast words\n');
  t.equal(await read(p, { tail: 0 }), '');
  t.equal(await read(p, { tail: 100 }), await read(p));
  t.equal(await read(p, { sinceMs: Date.UTC(2026, 10, 22, 1, 1, 27, 500) }), 'big-middle-end\n\nlast words\n', 'since uses the first part\'s time');
  t.equal(await read(p, { timestamps: true, stream: 'stderr' }), '2026-11-22T01:01:26.1Z err-part\n');
  t.equal(await read(p, { limitBytes: 8 }), 'hello\ner');
});

t.test('trailing partial line is emitted without a newline', async (t) => {
  const p = join(dir, 'b.log');
  await writeFile(p, '2026-11-22T01:01:26Z stdout F one\n2026-11-22T01:01:27Z stdout P no newline');
  t.equal(await read(p), 'one\n', 'an unterminated record is not yet a line');
  await appendFile(p, '\n');
  t.equal(await read(p), 'one\nno newline');
});

t.test('the fake log writer writes what the reader joins back', async (t) => {
  const p = join(dir, 'w', 'c', '0.log');
  const w = new FakeLogWriter(p, pino({ level: 'silent' }), 10);
  w.write('stdout', 'short\n' + 'y'.repeat(25) + '\nno-newline');
  w.write('stderr', 'e\n');
  await w.flush();
  t.equal(await read(p, { stream: 'stdout' }), `short\n${'y'.repeat(25)}\nno-newline`);
  t.equal(await read(p, { stream: 'stderr' }), 'e\n');
});

t.test('follow: new lines, rotation, and the end when inactive', async (t) => {
  const p = join(dir, 'f.log');
  await writeFile(p, '2026-11-22T01:00:00Z stdout F first\n');
  let active = true;
  const got: string[] = [];
  const done = (async () => {
    for await (const c of readCriLog(p, { follow: true, pollIntervalMs: 10, isActive: () => active })) got.push(c.toString());
  })();
  const until = async (pred: () => boolean): Promise<void> => {
    const deadline = Date.now() + 10_000;
    while (!pred()) {
      if (Date.now() > deadline) throw new Error(`timed out; got ${JSON.stringify(got)}`);
      await sleep(10);
    }
  };
  await until(() => got.join('') === 'first\n');
  await appendFile(p, '2026-11-22T01:00:01Z stdout P sec');
  // The P record's own newline arrives in a later write: the reader must wait for it.
  await appendFile(p, '\n2026-11-22T01:00:01Z stdout F ond\n');
  await until(() => got.join('') === 'first\nsecond\n');
  // Rotation: move the file away, write a last line to the old one, create a fresh file.
  await rename(p, `${p}.1`);
  await appendFile(`${p}.1`, '2026-11-22T01:00:02Z stdout F third\n');
  await writeFile(p, '2026-11-22T01:00:03Z stdout F fourth\n');
  await until(() => got.join('') === 'first\nsecond\nthird\nfourth\n');
  active = false;
  await done;
  t.equal(got.join(''), 'first\nsecond\nthird\nfourth\n');
});

t.test('follow ends on abort', async (t) => {
  const p = join(dir, 'g.log');
  await writeFile(p, '2026-11-22T01:00:00Z stdout F only\n');
  const ac = new AbortController();
  const got: string[] = [];
  const done = (async () => {
    for await (const c of readCriLog(p, { follow: true, pollIntervalMs: 10, signal: ac.signal })) {
      got.push(c.toString());
      ac.abort();
    }
  })();
  await done;
  t.same(got, ['only\n']);
});

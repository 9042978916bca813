// The disk probe: a worker appends and fdatasyncs a file next to the servers' data and tells,
// for a row's time slices, how many syncs ran, their median and maximum, and the stalls.
import t from 'tap';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { probeNow, startDiskProbe, STALL_MS, type DiskProbe } from '../../bench/lib/disk-probe.js';

/** Waits until the probe has something to say (up to 10 s: its worker loads slowly on a loaded machine). */
async function firstNote(probe: DiskProbe): Promise<void> {
  for (const end = Date.now() + 10_000; probe.note([[0, probeNow()]]) === '' && Date.now() < end;) await new Promise((r) => setTimeout(r, 20));
}

t.test('notes the syncs that started in the slices, and removes its file on stop', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'disk-probe-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const file = join(dir, 'probe');
  const probe = startDiskProbe(file);
  // The worker loads its module first: wait for its first sync.
  await firstNote(probe);
  const from = probeNow();
  await new Promise((r) => setTimeout(r, 300));
  const to = probeNow();
  const note = probe.note([[from, to]]);
  const m = /^disk: (\d+) syncs p50 ([\d.]+) max (\d+) ms, (\d+) ≥ (\d+) ms$/.exec(note);
  t.ok(m, `note has the expected form: ${note}`);
  t.ok(Number(m![1]) >= 3, 'a sync every 20 ms or so');
  t.equal(Number(m![5]), STALL_MS);
  t.ok(Number(m![4]) <= Number(m![1]));
  t.equal(probe.note([[to + 60_000, to + 120_000]]), '', 'no syncs in a slice to come: no note');
  t.equal(probe.note([]), '', 'no slices: no note');
  await probe.stop();
  t.notOk(existsSync(file), 'the probe file is removed');
});

t.test('a probe that cannot open its file says so in the note', async (t) => {
  const probe = startDiskProbe('/nonexistent-dir/for/probe');
  // The worker fails once it has loaded its module.
  await firstNote(probe);
  t.match(probe.note([[0, probeNow()]]), /^disk probe failed: /);
  await probe.stop();
});

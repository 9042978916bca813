// Instruction counts for the instructions bench: callgrind output headers, and named dumps of a
// real process running under callgrind (when valgrind is installed).
import t from 'tap';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { callgrindControl, callgrindWrapper, gcInstructions, haveCallgrind, parseCallgrindHeader, readDumps, waitForDump } from '../../bench/lib/callgrind.js';

t.test('callgrind output header', (t) => {
  const header = ['# callgrind format', 'version: 1', 'pid: 42', 'part: 2', 'thread: 3', '', 'desc: I1 cache: ', 'desc: Trigger: dump phase1', '',
    'positions: line', 'events: Ir', 'summary: 703282248', '', 'ob=/usr/bin/node', 'fn=main', '0 12'].join('\n');
  t.same(parseCallgrindHeader(header), { phase: 'phase1', thread: 3, total: 703282248 });
  t.same(parseCallgrindHeader('version: 1\nsummary: 5\n'), { phase: undefined, thread: 1, total: 5 }, 'no trigger: a dump at exit, thread 1 by default');
  t.equal(parseCallgrindHeader('version: 1\n'), undefined, 'no total');
  t.end();
});

t.test('GC instructions: inclusive costs of calls into the collector from outside it', (t) => {
  const dump = ['events: Ir', 'summary: 10000', '',
    'fn=Builtins_Foo', '0 100',
    'cfn=v8::internal::Heap::CollectGarbage(v8::internal::AllocationSpace)', 'calls=2 0', '0 3000',
    'cfn=v8::internal::IncrementalMarking::Step(double, v8::internal::StepOrigin)', 'calls=1 0', '0 400',
    'cfn=v8::internal::Factory::AllocateRaw(int)', 'calls=5 0', '0 700',
    '', 'fn=v8::internal::Heap::CollectGarbage(v8::internal::AllocationSpace)', '0 50',
    'cfn=v8::internal::IncrementalMarking::Step(double, v8::internal::StepOrigin)', 'calls=1 0', '0 900', ''].join('\n');
  t.equal(gcInstructions(dump), 3400, 'calls from outside the collector only; a step inside a collection is not counted twice');
  t.end();
});

t.test('named dumps of a process under callgrind', { skip: haveCallgrind() ? false : 'valgrind is not installed' }, async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'cg-test-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const [cmd, ...args] = callgrindWrapper(join(dir, 'cg.out'));
  // A busy process: valgrind takes commands between the blocks it runs, at once (a process
  // blocked in a system call has to be interrupted first, which a loaded machine can delay).
  const proc = spawn(cmd!, [...args, 'sh', '-c', 'while :; do :; done'], { stdio: 'ignore' });
  const exited = new Promise((r) => proc.once('exit', r));
  t.teardown(() => { proc.kill('SIGKILL'); return exited; });
  // callgrind_control reaches the process once valgrind is up.
  const deadline = Date.now() + 30_000;
  while (spawnSync('callgrind_control', ['-s', String(proc.pid)]).status !== 0) {
    if (Date.now() > deadline) throw new Error('callgrind never answered');
    await new Promise((r) => setTimeout(r, 200));
  }
  callgrindControl(proc.pid!, '--zero');
  await new Promise((r) => setTimeout(r, 500)); // a command sent before the last was taken may replace it
  callgrindControl(proc.pid!, '--dump=first');
  await waitForDump(dir, 'cg.out', 'first');
  callgrindControl(proc.pid!, '--dump=second');
  await waitForDump(dir, 'cg.out', 'second');
  const dumps = readDumps(dir, 'cg.out');
  t.same([...dumps.keys()].sort(), ['first', 'second'], 'one entry per named dump');
  const first = dumps.get('first')!;
  t.ok(first.main >= 0 && first.all >= first.main, 'all threads count at least the main thread');
  t.ok(first.main > 0, 'the loop ran between the two commands');
  t.equal(first.mainGc, 0, 'a shell collects no garbage');
});

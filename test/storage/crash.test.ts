/**
 * kill -9 durability of the LevelDB backend: a child process (fixtures/crash-writer.ts) runs a
 * concurrent create / CAS update / delete load and prints every acknowledged write; the parent
 * SIGKILLs it mid-load, then checks on the same directory that every acknowledged write is there
 * at its revision, nothing went backwards, and the store is internally consistent. Five rounds
 * accumulate in one directory, so each round also recovers what the previous rounds left; the
 * last two also compact history while writing, so some kills land mid-compaction.
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openLevelBackend } from '../../src/storage/leveldb/level-backend.js';
import { verifyLevelStore } from '../../src/storage/leveldb/verify.js';
import { collectEvents } from './conformance.js';

interface Ack {
  op: 'create' | 'update' | 'delete';
  k: string;
  r: number;
  h: string;
}

const ROUNDS = 5;
const writer = fileURLToPath(new URL('./fixtures/crash-writer.js', import.meta.url));
const hash = (b: Buffer): string => createHash('sha256').update(b).digest('hex').slice(0, 16);

/** Runs the writer until it has acknowledged `killAfter` writes, SIGKILLs it, returns every ack it printed. */
function runAndKill(dir: string, prefix: string, killAfter: number, compact: boolean): Promise<{ openRev: number; acks: Ack[]; signal: string | null; compactedTo: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [writer, dir, prefix, '64', ...(compact ? ['compact'] : [])], { stdio: ['ignore', 'pipe', 'inherit'] });
    let compactedTo = 0;
    const acks: Ack[] = [];
    let openRev = -1;
    let rest = '';
    const deadline = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.stdout.on('data', (chunk: Buffer) => {
      rest += chunk.toString('utf8');
      let nl: number;
      while ((nl = rest.indexOf('\n')) >= 0) {
        const line = rest.slice(0, nl);
        rest = rest.slice(nl + 1);
        const msg = JSON.parse(line) as Ack | { op: 'open' | 'compact'; r: number };
        if (msg.op === 'open') openRev = msg.r;
        else if (msg.op === 'compact') compactedTo = msg.r;
        else acks.push(msg as Ack);
      }
      const ready = acks.length >= killAfter && (!compact || compactedTo > 0);
      if (ready && child.exitCode === null && !child.killed) child.kill('SIGKILL');
    });
    child.on('error', reject);
    // 'close' fires after stdout is drained: acks printed just before the kill are counted too.
    child.on('close', (_code, signal) => {
      clearTimeout(deadline);
      resolve({ openRev, acks, signal, compactedTo });
    });
  });
}

t.test('acknowledged writes survive kill -9', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-crash-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  let highest = 1;
  for (let round = 1; round <= ROUNDS; round++) {
    const killAfter = 200 + Math.floor(Math.random() * 1300);
    const compacting = round > 3;
    const { openRev, acks, signal, compactedTo } = await runAndKill(dir, `/crash/${round}/`, killAfter, compacting);
    t.equal(signal, 'SIGKILL', `round ${round}: the writer was killed after ${acks.length} acks`);
    t.ok(openRev >= highest, `round ${round}: the writer reopened at ${openRev}, not below ${highest}`);
    t.ok(acks.length >= killAfter, 'it acknowledged writes before dying');
    const maxAck = Math.max(...acks.map((a) => a.r));

    const report = await verifyLevelStore(dir);
    t.same(report.problems, [], `round ${round}: index, history and log agree`);
    t.ok(report.revision >= maxAck, `stored revision ${report.revision} >= highest acknowledged ${maxAck}`);
    if (compacting) {
      t.ok(compactedTo > 0, `round ${round}: the writer compacted (last to ${compactedTo})`);
      t.ok(report.compactRevision >= compactedTo, `the compaction point ${report.compactRevision} did not go back below ${compactedTo}`);
    } else {
      t.equal(report.logRecords, report.revision - 1, 'the revision log has no gaps');
    }

    const b = await openLevelBackend({ dir });
    try {
      t.equal(await b.currentRevision(), report.revision);
      // Every acknowledged write is readable at its revision, with its value.
      const missing: string[] = [];
      for (let i = 0; i < acks.length; i += 256) {
        await Promise.all(acks.slice(i, i + 256).filter((a) => a.r >= report.compactRevision).map(async (a) => {
          const { kv } = await b.get(a.k, { revision: a.r });
          const ok = a.op === 'delete' ? kv === undefined : kv?.modRevision === a.r && hash(kv.value) === a.h;
          if (!ok) missing.push(`${a.op} ${a.k}@${a.r}`);
        }));
      }
      const checked = acks.filter((a) => a.r >= report.compactRevision).length;
      t.same(missing, [], `round ${round}: all ${checked} acknowledged writes above the compaction point are present at their revision`);
      // The current value of each key is its last acknowledged write or a later one.
      const last = new Map<string, Ack>();
      for (const a of acks) if ((last.get(a.k)?.r ?? 0) < a.r) last.set(a.k, a);
      const wrong: string[] = [];
      const cur = await b.range(`/crash/${round}/`, { prefix: true });
      const now = new Map(cur.kvs.map((kv) => [kv.key, kv]));
      for (const [k, a] of last) {
        const kv = now.get(k);
        if (kv && kv.modRevision < a.r) wrong.push(`${k} went back to ${kv.modRevision} from ${a.r}`);
        if (!kv && a.op !== 'delete') {
          // Only an unacknowledged delete that did reach the disk may have removed it. (Its event
          // is in history already; the generous bound only covers a heavily loaded machine.)
          const evs = await collectEvents(b.watch(k, { fromRevision: Math.max(a.r + 1, report.compactRevision) }), 1, 15_000);
          if (evs[0]?.type !== 'DELETE') {
            // What the history holds for the key from its last acknowledged write on: the
            // failure message then says which writes reached the disk unacknowledged.
            const hist = await collectEvents(b.watch(k, { fromRevision: Math.max(a.r, report.compactRevision) }), 5, 2000);
            wrong.push(`${k} vanished after ${a.op}@${a.r} (history from there: ${hist.map((x) => `${x.type}@${x.kv.modRevision}`).join(' ') || 'none'}; store at ${report.revision})`);
          }
        }
      }
      t.same(wrong, [], 'no key went backwards');
      highest = report.revision;
    } finally {
      await b.close();
    }
  }
});

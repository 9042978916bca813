import t from 'tap';
import { errors } from '../../src/api/meta/status.js';
import { ManualClock, realClock, type Clock } from '../../src/client/clock.js';
import { loadCoreconfig } from '../../src/client/coreconfig.js';
import { LeaderElector } from '../../src/client/leader-election.js';
import { LEADER_ANNOTATION, newResourceLock, type LeaderElectionRecord, type LockKind, type ResourceLock } from '../../src/client/resource-lock.js';
import { RestClient } from '../../src/client/rest-client.js';
import { startApiserver } from '../helpers/apiserver.js';

/** Wraps a lock; while `blocked`, every call hangs until its signal aborts (a partition). */
class BlockableLock implements ResourceLock {
  blocked = false;
  constructor(private readonly inner: ResourceLock) {}
  private gate(signal?: AbortSignal): Promise<void> {
    if (!this.blocked) return Promise.resolve();
    return new Promise((_, reject) => {
      if (signal?.aborted) reject(signal.reason);
      signal?.addEventListener('abort', () => reject(signal.reason), { once: true });
    });
  }
  async get(signal?: AbortSignal): Promise<LeaderElectionRecord | undefined> { await this.gate(signal); return this.inner.get(signal); }
  async create(rec: LeaderElectionRecord, signal?: AbortSignal): Promise<void> { await this.gate(signal); return this.inner.create(rec, signal); }
  async update(rec: LeaderElectionRecord, signal?: AbortSignal): Promise<void> { await this.gate(signal); return this.inner.update(rec, signal); }
  describe(): string { return this.inner.describe(); }
}

/** One lock object in memory with resourceVersion semantics; each candidate has its own view. */
class MemoryStore {
  rec: LeaderElectionRecord | undefined;
  rv = 0;
  view(): ResourceLock {
    let seen = -1;
    return {
      get: async () => { seen = this.rv; return this.rec ? { ...this.rec, version: String(this.rv) } : undefined; },
      create: async (rec) => {
        if (this.rec) throw errors.alreadyExists({ resource: 'leases', name: 'x' });
        this.rec = { ...rec }; this.rv++; seen = this.rv;
      },
      update: async (rec) => {
        if (seen !== this.rv) throw errors.conflict({ resource: 'leases', name: 'x' });
        this.rec = { ...rec }; this.rv++; seen = this.rv;
      },
      describe: () => 'memory',
    };
  }
}

interface Transition { who: string; what: 'start' | 'stop'; at: number }

function elector(name: string, lock: ResourceLock, clock: Clock, log: Transition[], durations = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 }): LeaderElector {
  return new LeaderElector({
    lock, identity: name, clock, ...durations,
    callbacks: {
      onStartedLeading: () => { log.push({ who: name, what: 'start', at: clock.now() }); },
      onStoppedLeading: () => { log.push({ who: name, what: 'stop', at: clock.now() }); },
    },
  });
}

/** Replays transitions: never two leaders at once. */
function leadersNeverOverlap(log: Transition[]): boolean {
  const leading = new Set<string>();
  for (const tr of log) {
    if (tr.what === 'start') { if (leading.size > 0) return false; leading.add(tr.who); } else leading.delete(tr.who);
  }
  return true;
}

t.test('injected clock: a blocked leader steps down before the other takes over', async (t) => {
  const clock = new ManualClock();
  const store = new MemoryStore();
  const log: Transition[] = [];
  const lockA = new BlockableLock(store.view());
  const a = elector('a', lockA, clock, log);
  const b = elector('b', store.view(), clock, log);
  const ac = new AbortController();
  const runA = a.run(ac.signal);
  await clock.advance(0);
  const runB = b.run(ac.signal);
  let bothEver = false;
  const step = async (ms: number, n: number): Promise<void> => {
    for (let i = 0; i < n; i++) { await clock.advance(ms); if (a.isLeader() && b.isLeader()) bothEver = true; }
  };
  await step(100, 100); // 10 s of renewals
  t.ok(a.isLeader(), 'a leads');
  t.notOk(b.isLeader(), 'b waits');
  t.equal(b.getLeader(), 'a');
  const blockedAt = clock.now();
  lockA.blocked = true;
  await step(100, 300); // 30 s
  t.notOk(a.isLeader(), 'a stepped down');
  t.ok(b.isLeader(), 'b took over');
  t.notOk(bothEver, 'never two leaders at once');
  t.ok(leadersNeverOverlap(log), 'transitions never overlap');
  const aStop = log.find((x) => x.who === 'a' && x.what === 'stop');
  const bStart = log.find((x) => x.who === 'b' && x.what === 'start');
  t.ok(aStop && bStart && aStop.at < bStart.at, 'a stopped strictly before b started');
  t.ok(aStop && aStop.at - blockedAt <= 10_000, 'a stopped within the renew deadline of its last renewal');
  t.equal(store.rec?.holderIdentity, 'b');
  t.equal(store.rec?.leaderTransitions, 1);
  await runA; // a's run returns once it lost the lease
  ac.abort();
  await clock.advance(0);
  await runB;
});

t.test('invalid durations are refused', async (t) => {
  const lock = new MemoryStore().view();
  const cb = { onStartedLeading: () => undefined };
  t.throws(() => new LeaderElector({ lock, leaseDurationMs: 10, renewDeadlineMs: 10, retryPeriodMs: 1, callbacks: cb }), /lease duration must be greater/);
  t.throws(() => new LeaderElector({ lock, leaseDurationMs: 100, renewDeadlineMs: 10, retryPeriodMs: 10, callbacks: cb }), /renew deadline must be greater/);
});

const api = await startApiserver();
t.teardown(() => api.stop());
const conn = await loadCoreconfig({ path: api.coreconfigPath });

for (const kind of ['leases', 'endpoints', 'configmaps'] as LockKind[]) {
  t.test(`real API server, ${kind} lock: one leader, failover without overlap`, async (t) => {
    const client = new RestClient({ connection: conn, qps: 0 });
    t.teardown(() => client.close());
    const clock: Clock = { now: () => performance.now(), sleep: realClock.sleep };
    const log: Transition[] = [];
    const durations = { leaseDurationMs: 1500, renewDeadlineMs: 1000, retryPeriodMs: 200 };
    const lockA = new BlockableLock(newResourceLock(kind, client, 'default', `ctrl-${kind}`));
    const a = elector('host-a', lockA, clock, log, durations);
    const b = elector('host-b', newResourceLock(kind, client, 'default', `ctrl-${kind}`), clock, log, durations);
    let aLeadingWhenBStarted: boolean | undefined;
    const bStarted = new Promise<void>((resolve) => {
      const orig = (b as unknown as { o: { callbacks: { onStartedLeading: (s: AbortSignal) => void } } }).o.callbacks;
      const first = orig.onStartedLeading;
      orig.onStartedLeading = (s) => { aLeadingWhenBStarted = a.isLeader(); first(s); resolve(); };
    });
    const ac = new AbortController();
    const runA = a.run(ac.signal);
    const end = Date.now() + 10_000;
    while (!a.isLeader()) { if (Date.now() > end) throw new Error('a never led'); await new Promise((r) => setTimeout(r, 20)); }
    const runB = b.run(ac.signal);
    // Let a renew a few times while b watches.
    await new Promise((r) => setTimeout(r, 700));
    t.notOk(b.isLeader());
    const ref = kind === 'leases' ? { group: 'coordination.k8s.io', version: 'v1', resource: 'leases', namespace: 'default' } : { group: '', version: 'v1', resource: kind, namespace: 'default' };
    const obj = await client.get(ref, `ctrl-${kind}`);
    if (kind === 'leases') {
      const spec = obj.spec as Record<string, unknown>;
      t.equal(spec.holderIdentity, 'host-a');
      t.equal(spec.leaseDurationSeconds, 2);
      t.match(String(spec.renewTime), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/, 'renewTime is a MicroTime');
    } else {
      const rec = JSON.parse(obj.metadata?.annotations?.[LEADER_ANNOTATION] ?? '{}') as Record<string, unknown>;
      t.equal(rec.holderIdentity, 'host-a');
      t.equal(rec.leaderTransitions, 0);
    }
    lockA.blocked = true;
    await Promise.race([bStarted, new Promise((_, rej) => setTimeout(() => rej(new Error('b never took over')), 15_000))]);
    await runA;
    t.equal(aLeadingWhenBStarted, false, 'a had stopped leading when b started');
    t.ok(leadersNeverOverlap(log), 'never two leaders at once');
    t.same(log.map((x) => `${x.who}:${x.what}`), ['host-a:start', 'host-a:stop', 'host-b:start']);
    const after = await client.get(ref, `ctrl-${kind}`);
    const holder = kind === 'leases' ? (after.spec as Record<string, unknown>).holderIdentity
      : (JSON.parse(after.metadata?.annotations?.[LEADER_ANNOTATION] ?? '{}') as Record<string, unknown>).holderIdentity;
    t.equal(holder, 'host-b');
    ac.abort();
    await runB;
  });
}

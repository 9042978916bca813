/**
 * The eviction manager with injected measurements and a clock: thresholds from the options,
 * Kubernetes' eviction order, soft thresholds and their grace period, the minimum reclaim,
 * the pressure transition period, node-level reclaim before evicting, and the message.
 */
import t from 'tap';
import { pino } from 'pino';
import { EvictionManager, type ActivePod } from '../../../src/daemons/nodeagent/eviction/eviction-manager.js';
import { rankForSignal } from '../../../src/daemons/nodeagent/eviction/rank.js';
import { thresholdsFromConfig, type Observations } from '../../../src/daemons/nodeagent/eviction/thresholds.js';
import type { PodUsage } from '../../../src/daemons/nodeagent/eviction/rank.js';
import type { Pod } from '../../../src/daemons/nodeagent/pod-types.js';

const MI = 2 ** 20;
const log = pino({ level: 'silent' });

function pod(name: string, o: { priority?: number; memRequest?: string; grace?: number; static?: boolean } = {}): Pod {
  return {
    metadata: { name, namespace: 'default', uid: `uid-${name}`, ...(o.static ? { annotations: { 'kubernetes.io/config.source': 'file' } } : {}) },
    spec: {
      ...(o.priority !== undefined ? { priority: o.priority } : {}), ...(o.grace !== undefined ? { terminationGracePeriodSeconds: o.grace } : {}),
      containers: [{ name: 'c', image: 'x', ...(o.memRequest ? { resources: { requests: { memory: o.memRequest } } } : {}) }],
    },
  } as Pod;
}

function harness(opts: { hard?: Record<string, string>; soft?: Record<string, string>; grace?: Record<string, string>; minReclaim?: Record<string, string>; maxPodGrace?: number; transitionMs?: number } = {}) {
  let now = 1_000_000;
  let obs: Observations = {};
  const usage = new Map<string, PodUsage>();
  const pods: Pod[] = [];
  const evicted: { name: string; grace: number; message: string }[] = [];
  const events: string[] = [];
  let imageReclaim = 0;
  const m = new EvictionManager({
    thresholds: thresholdsFromConfig({
      evictionHard: opts.hard ?? {}, evictionSoft: opts.soft ?? {}, evictionSoftGracePeriod: opts.grace ?? {}, evictionMinimumReclaim: opts.minReclaim ?? {},
    }),
    measure: async () => obs,
    podUsage: async () => usage,
    activePods: () => pods.filter((p) => !evicted.some((e) => e.name === p.metadata?.name)).map((p): ActivePod => ({
      pod: p, uid: p.metadata!.uid!, podDir: '/nonexistent', logDir: '/nonexistent', containers: new Map(),
      evict: async (message, grace) => { evicted.push({ name: p.metadata!.name!, grace, message }); },
    })),
    reclaim: { images: async (bytes) => { const freed = Math.min(bytes, imageReclaim); imageReclaim -= freed; const o = obs['nodefs.available']; if (o) obs = { ...obs, 'nodefs.available': { ...o, available: o.available + freed } }; return freed; } },
    pressureTransitionPeriodMs: opts.transitionMs ?? 5000, maxPodGracePeriodSeconds: opts.maxPodGrace ?? 0,
    emit: (p, _type, reason) => events.push(`${reason}:${p.metadata?.name}`), log, now: () => now,
  });
  return {
    m, pods, usage, evicted, events,
    set(o: Observations) { obs = o; }, advance(ms: number) { now += ms; }, images(bytes: number) { imageReclaim = bytes; },
  };
}

t.test('thresholds: quantities, percentages, soft grace, minimum reclaim; zero disables', async (t) => {
  const th = thresholdsFromConfig({
    evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '10%', 'imagefs.available': '0' },
    evictionSoft: { 'memory.available': '300Mi' }, evictionSoftGracePeriod: { 'memory.available': '1m30s' },
    evictionMinimumReclaim: { 'nodefs.available': '1Gi' },
  });
  t.same(th.map((x) => [x.signal, x.hard, x.gracePeriodMs]), [['memory.available', true, 0], ['nodefs.available', true, 0], ['memory.available', false, 90_000]]);
  t.same(th[1]?.value, { percentage: 0.1 });
  t.same(th[1]?.minReclaim, { quantity: 2 ** 30 });
});

t.test('memory: pods over their requests first, then lower priority, then more usage above requests', async (t) => {
  const ranked = rankForSignal('memory.available', [
    { pod: pod('within', { memRequest: '500Mi' }), usage: { memory: 100 * MI, containers: [] } },
    { pod: pod('high-prio-over', { priority: 1000 }), usage: { memory: 50 * MI, containers: [] } },
    { pod: pod('low-prio-small', { priority: 0 }), usage: { memory: 10 * MI, containers: [] } },
    { pod: pod('low-prio-big', { priority: 0 }), usage: { memory: 200 * MI, containers: [] } },
    { pod: pod('critical', { priority: 2_000_000_000 }), usage: { memory: 900 * MI, containers: [] } },
    { pod: pod('static', { static: true }), usage: { memory: 900 * MI, containers: [] } },
  ]);
  t.same(ranked.map((c) => c.pod.metadata?.name), ['low-prio-big', 'low-prio-small', 'high-prio-over', 'within']);
  const pids = rankForSignal('pid.available', [
    { pod: pod('few', { priority: 0 }), usage: { pids: 2, containers: [] } },
    { pod: pod('many', { priority: 0 }), usage: { pids: 200, containers: [] } },
    { pod: pod('prio', { priority: 5 }), usage: { pids: 900, containers: [] } },
  ]);
  t.same(pids.map((c) => c.pod.metadata?.name), ['many', 'few', 'prio']);
});

t.test('a hard threshold evicts one pod per pass with grace 0; the condition stays for the transition period', async (t) => {
  const h = harness({ hard: { 'memory.available': '100Mi' }, transitionMs: 5000 });
  h.pods.push(pod('a'), pod('b'));
  h.usage.set('uid-a', { memory: 10 * MI, containers: [{ name: 'c', memory: 10 * MI }] });
  h.usage.set('uid-b', { memory: 300 * MI, containers: [{ name: 'c', memory: 300 * MI }] });
  h.set({ 'memory.available': { available: 1000 * MI, capacity: 4096 * MI } });
  t.equal(await h.m.synchronize(), undefined);
  t.same([...h.m.conditions()], []);
  h.set({ 'memory.available': { available: 50 * MI, capacity: 4096 * MI } });
  const first = await h.m.synchronize();
  t.equal(first?.metadata?.name, 'b');
  t.same([...h.m.conditions()], ['MemoryPressure']);
  t.same(h.evicted[0], {
    name: 'b', grace: 0,
    message: 'The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. Container c was using 300Mi, request is 0, has larger consumption of memory. ',
  });
  t.same(h.events, ['Evicted:b']);
  h.set({ 'memory.available': { available: 1000 * MI, capacity: 4096 * MI } });
  h.advance(1000);
  await h.m.synchronize();
  t.ok(h.m.hasCondition('MemoryPressure'), 'still under pressure within the transition period');
  h.advance(4500);
  await h.m.synchronize();
  t.notOk(h.m.hasCondition('MemoryPressure'), 'cleared after the transition period');
  t.equal(h.evicted.length, 1);
});

t.test('a soft threshold waits for its grace period and caps the pod grace with --eviction-max-pod-grace-period', async (t) => {
  const h = harness({ soft: { 'memory.available': '500Mi' }, grace: { 'memory.available': '30s' }, maxPodGrace: 10 });
  h.pods.push(pod('a', { grace: 60 }));
  h.usage.set('uid-a', { memory: 100 * MI, containers: [] });
  h.set({ 'memory.available': { available: 400 * MI, capacity: 4096 * MI } });
  t.equal(await h.m.synchronize(), undefined);
  t.ok(h.m.hasCondition('MemoryPressure'), 'the condition is set before the grace period ends');
  h.advance(29_000);
  t.equal(await h.m.synchronize(), undefined);
  h.advance(1000);
  t.equal((await h.m.synchronize())?.metadata?.name, 'a');
  t.equal(h.evicted[0]?.grace, 10);
});

t.test('the minimum reclaim keeps a met threshold met until the signal is that much above it', async (t) => {
  const h = harness({ hard: { 'nodefs.available': '1Gi' }, minReclaim: { 'nodefs.available': '500Mi' } });
  h.pods.push(pod('a'), pod('b'));
  h.set({ 'nodefs.available': { available: 900 * MI, capacity: 100_000 * MI } });
  await h.m.synchronize();
  t.equal(h.evicted.length, 1);
  h.set({ 'nodefs.available': { available: 1200 * MI, capacity: 100_000 * MI } });
  await h.m.synchronize();
  t.equal(h.evicted.length, 2, 'above the threshold but below threshold + minimum reclaim: still evicting');
});

t.test('disk pressure reclaims images first and evicts nobody when that is enough', async (t) => {
  const h = harness({ hard: { 'nodefs.available': '1Gi' } });
  h.pods.push(pod('a'));
  h.images(600 * MI);
  h.set({ 'nodefs.available': { available: 600 * MI, capacity: 100_000 * MI } });
  t.equal(await h.m.synchronize(), undefined);
  t.equal(h.evicted.length, 0);
  t.ok(h.m.hasCondition('DiskPressure'));
});

t.test('admission under pressure: BestEffort refused under memory pressure, everything under disk pressure, critical pods always', async (t) => {
  const { admitUnderPressure } = await import('../../../src/daemons/nodeagent/eviction/eviction-admission.js');
  const burstable = pod('b', { memRequest: '10Mi' });
  const bestEffort = pod('be');
  const tolerating = { ...pod('tol'), spec: { ...pod('tol').spec, tolerations: [{ key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' }] } } as Pod;
  const critical = pod('crit', { priority: 2_000_001_000 });
  t.same(admitUnderPressure(bestEffort, new Set()), { admit: true });
  t.same(admitUnderPressure(burstable, new Set(['MemoryPressure'])), { admit: true });
  t.same(admitUnderPressure(tolerating, new Set(['MemoryPressure'])), { admit: true });
  t.same(admitUnderPressure(bestEffort, new Set(['MemoryPressure'])), { admit: false, reason: 'Evicted', message: 'The node had condition: [MemoryPressure]. ' });
  t.same(admitUnderPressure(burstable, new Set(['PIDPressure', 'DiskPressure'])), { admit: false, reason: 'Evicted', message: 'The node had condition: [DiskPressure PIDPressure]. ' });
  t.same(admitUnderPressure(critical, new Set(['DiskPressure'])), { admit: true });
});

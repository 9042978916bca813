// The HA fault suite (`make fault`; a shorter run in `make test`): a three-member etcd cluster,
// three API servers, haproxy in front for kubectl. Cases, in order, on one cluster:
//  1. concurrent Service creates spread over the three servers: no ClusterIP or NodePort twice;
//  2. an API server SIGKILLed under load: the failing-over client moves on, no acknowledged
//     write is lost, the watcher resumes without a gap or a duplicate;
//  3. one etcd member killed: writes go on;
//  4. two killed: writes fail with a clean 5xx within --request-timeout, reads and watches from
//     the cache go on, /readyz says not ready;
//  5. the quorum restored: writes and /readyz recover without a restart;
//  6. kubectl 1.33 through haproxy while an API server, then an etcd member, is killed and restarted;
//  7. controller managers and schedulers on different "machines" (processes preferring different
//     API servers): the leader's API server killed, then the leader: handed over within lease +
//     retry, never two leaders;
//  8. a node agent cut off from every API server: its pods keep running, the node goes NotReady
//     after the grace period and comes back when the cut heals; a longer cut evicts its pods;
//  9. an API server cut off from etcd (relays between it and the members): its writes fail with a
//     clean 5xx, /readyz says not ready, a failing-over client is served by another server; healed,
//     it recovers without a restart.
// Counts are printed as "# fault: ..." lines. FAULT_CREATES sets case 1's creates (default 400;
// `make fault` runs 2000).
import t, { type Test } from 'tap';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadCoreconfig } from '../../src/client/coreconfig.js';
import { RestClient } from '../../src/client/rest-client.js';
import { etcdAvailable } from '../helpers/etcd.js';
import { h2get, startHaCluster, type HaCluster } from '../helpers/ha-cluster.js';
import { kubectl } from '../helpers/kubectl.js';
import { kubectlRunner } from '../helpers/kubectl-run.js';
import { CONFIGMAPS, lostWrites, waitUntil, WatchRecorder, Writer } from './load.js';
import { LEADER_LOCK as CM_LOCK } from '../../src/daemons/controller-manager/main.js';
import { LEADER_LOCK as SCHEDULER_LOCK } from '../../src/daemons/scheduler/main.js';
import { startTcpCut, type TcpCut } from '../helpers/tcp-cut.js';
import { coreconfigVia, EVICTION_S, GRACE_S, podManifest, PODS, readyStatus, runningContainer, startFakeNode, startNodeLifecycle } from './nodes.js';
import { LEASE_MS, leaseOf, RETRY_MS, startCandidate, type LeaseView } from './leaders.js';

const CREATES = Number(process.env['FAULT_CREATES'] ?? 400);
/** FAULT_CASES=2,7 runs only those cases (a quicker look at one). */
const ONLY = process.env['FAULT_CASES']?.split(',').map((x) => x.trim());
const skipUnless = (n: string): false | string => (ONLY && !ONLY.includes(n) ? 'not in FAULT_CASES' : false);
const REQUEST_TIMEOUT_S = 8;
const SERVICES = { group: '', version: 'v1', resource: 'services' };
const report = (t: Test, line: string): void => { t.comment(`fault: ${line}`); };

// The whole suite on a loaded two-core machine: minutes, not tap's default five.
t.setTimeout(1_500_000);

if (!etcdAvailable()) {
  t.plan(0, 'etcd not installed');
} else {
  // API server 2 reaches etcd through relays (case 9 cuts them).
  const etcdCuts: TcpCut[] = [];
  const ha: HaCluster = await startHaCluster({
    haproxy: true, args: [`--request-timeout=${REQUEST_TIMEOUT_S}s`, '--service-cluster-ip-range=10.96.0.0/16'],
    kvstoreFor: async (i, endpoints) => {
      if (i !== 2) return endpoints;
      for (const e of endpoints) { const u = new URL(e); etcdCuts.push(await startTcpCut(u.hostname, Number(u.port))); }
      return etcdCuts.map((c) => `http://${c.address}`);
    },
  });
  t.teardown(async () => { await ha.stop(); for (const c of etcdCuts) await c.close(); });
  const clientFor = async (path: string, extra: Partial<ConstructorParameters<typeof RestClient>[0]> = {}): Promise<RestClient> => {
    const c = new RestClient({ connection: await loadCoreconfig({ path }), qps: 0, contentType: 'application/json', transport: { failbackMs: 600_000 }, ...extra });
    t.teardown(() => c.close());
    return c;
  };
  const all = await clientFor(ha.coreconfigPath);
  const per = await Promise.all(ha.apiservers.map((a) => clientFor(ha.coreconfigFor(a.index), { maxRetries: 0 })));
  for (const ns of ['alloc', 'load', 'quorum', 'kubectl']) await all.create({ group: '', version: 'v1', resource: 'namespaces' }, { metadata: { name: ns } });

  t.test('0. what one API server writes, the others serve', { skip: skipUnless('0'), timeout: 300_000 }, async (t) => {
    const crds = { group: 'apiextensions.k8s.io', version: 'v1', resource: 'customresourcedefinitions' };
    await per[0]!.create(crds, {
      metadata: { name: 'widgets.ha.corectl.test' },
      spec: {
        group: 'ha.corectl.test', scope: 'Namespaced', names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
        versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
      },
    });
    const crdSecs = await waitUntil('the CRD served by another server', async () => {
      await per[2]!.create({ group: 'ha.corectl.test', version: 'v1', resource: 'widgets', namespace: 'alloc' }, { apiVersion: 'ha.corectl.test/v1', kind: 'Widget', metadata: { name: 'w' } });
      return true;
    }, 60_000);
    const alice = await ha.issueClient('alice');
    const asAlice = async (): Promise<number> => (await h2get(ha.apiservers[2]!.url, '/api/v1/namespaces/alloc/configmaps', ha.caPem, alice)).status;
    t.equal(await asAlice(), 403, 'alice may not list configmaps yet');
    const rbac = { group: 'rbac.authorization.k8s.io', version: 'v1', namespace: 'alloc' };
    await per[1]!.create({ ...rbac, resource: 'roles' }, { metadata: { name: 'reader' }, rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['list'] }] });
    await per[1]!.create({ ...rbac, resource: 'rolebindings' }, { metadata: { name: 'alice-reads' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'reader' }, subjects: [{ kind: 'User', name: 'alice', apiGroup: 'rbac.authorization.k8s.io' }] });
    const rbacSecs = await waitUntil('the grant honoured by another server', async () => (await asAlice()) === 200, 60_000);
    report(t, `shared state: a CRD made on server 0 served by server 2 after ${crdSecs.toFixed(1)} s; an RBAC grant made on server 1 honoured by server 2 after ${rbacSecs.toFixed(1)} s`);
  });

  t.test('1. concurrent Service creates over three servers: no ClusterIP or NodePort twice', { skip: skipUnless('1'), timeout: 600_000 }, async (t) => {
    let next = 0, acked = 0, failed = 0;
    const reasons = new Map<string, number>();
    const start = Date.now();
    await Promise.all(Array.from({ length: 30 }, async (_, w) => {
      const client = per[w % per.length]!;
      for (let k = next++; k < CREATES; k = next++) {
        try {
          await client.create({ ...SERVICES, namespace: 'alloc' }, { metadata: { name: `s-${k}` }, spec: { type: 'NodePort', ports: [{ port: 80 }] } });
          acked++;
        } catch (e) {
          failed++;
          const r = (e as { reason?: string }).reason ?? (e as Error).message;
          reasons.set(r, (reasons.get(r) ?? 0) + 1);
        }
      }
    }));
    const secs = (Date.now() - start) / 1000;
    const items = (await all.list({ ...SERVICES, namespace: 'alloc' })).items;
    const ips = items.map((s) => (s.spec as { clusterIP: string }).clusterIP);
    const ports = items.flatMap((s) => (s.spec as { ports: { nodePort: number }[] }).ports.map((p) => p.nodePort));
    const dupIps = ips.length - new Set(ips).size, dupPorts = ports.length - new Set(ports).size;
    report(t, `${CREATES} concurrent Service creates over 3 API servers in ${secs.toFixed(1)} s: acknowledged ${acked}, failed ${failed}${reasons.size ? ` (${[...reasons].map(([r, n]) => `${r} ${n}`).join(', ')})` : ''}, stored ${items.length}`);
    report(t, `duplicate ClusterIPs ${dupIps}, duplicate NodePorts ${dupPorts}`);
    t.equal(dupIps, 0, 'no ClusterIP handed out twice');
    t.equal(dupPorts, 0, 'no NodePort handed out twice');
    t.ok(items.length >= acked, 'every acknowledged create is stored');
    // Creates may time out on a loaded machine (and are then counted as failed, not lost); the
    // allocator must not refuse them.
    t.notOk(reasons.has('Conflict') || reasons.has('InternalError'), 'no create refused by allocation contention');
    t.ok(acked >= CREATES / 2, `most creates succeed (${acked}/${CREATES})`);
  });

  t.test('2. an API server SIGKILLed under load', { skip: skipUnless('2'), timeout: 300_000 }, async (t) => {
    const watcher = new WatchRecorder(all, 'load');
    t.teardown(() => watcher.stop());
    const writer = new Writer(all, 'load', 'kill');
    writer.start(4);
    await waitUntil('writes flowing', async () => writer.acked.size >= 100, 60_000);
    // `all` talks to the first server (its first URL): kill that one.
    const killedAt = Date.now();
    await ha.kill(0);
    await waitUntil('writes after the kill', async () => writer.firstAckSentAfter(killedAt) !== undefined, 60_000);
    const failover = (writer.firstAckSentAfter(killedAt)! - killedAt) / 1000;
    await waitUntil('more writes on the other servers', async () => writer.acksSentAfter(killedAt) >= 100, 60_000);
    await writer.stop();
    const missing = await watcher.waitFor(writer.acked, 30_000);
    const lost = await lostWrites(all, 'load', writer.acked);
    report(t, `API server SIGKILL: seconds to fail over ${failover.toFixed(2)}; acknowledged writes ${writer.acked.size}, lost ${lost.length}; watch gaps ${missing.length}, duplicates ${watcher.duplicates}, out of order ${watcher.outOfOrder}, relists ${watcher.relists - 1}`);
    t.equal(lost.length, 0, 'no acknowledged write lost');
    t.equal(missing.length, 0, 'the watch missed nothing');
    t.equal(watcher.duplicates, 0, 'the watch repeated nothing');
    t.equal(watcher.outOfOrder, 0, 'the watch stayed in order across servers');
    t.ok(failover < 30, `writes went on within 30 s (${failover.toFixed(2)} s)`);
    // --endpoint-reconciler-type=lease: the dead server's lease runs out and the kubernetes
    // endpoints list the live servers only; restarted, it is listed again.
    const addresses = async (): Promise<string[]> => {
      const ep = await all.get({ group: '', version: 'v1', resource: 'endpoints', namespace: 'default' }, 'kubernetes');
      return ((ep.subsets as { addresses?: { ip: string }[] }[] | undefined) ?? []).flatMap((x) => (x.addresses ?? []).map((a) => a.ip)).sort();
    };
    const live = ha.apiservers.slice(1).map((a) => a.advertise).sort();
    await waitUntil('the dead server leaves the kubernetes endpoints', async () => JSON.stringify(await addresses()) === JSON.stringify(live), 90_000);
    const dropped = (Date.now() - killedAt) / 1000;
    await ha.restart(0);
    const back = await waitUntil('the restarted server is listed again', async () => (await addresses()).length === 3, 60_000);
    report(t, `kubernetes endpoints (lease reconciler): the killed server left them within ${dropped.toFixed(0)} s of the kill (lease TTL 15 s + reconcile 10 s), back ${back.toFixed(1)} s after its restart`);
  });

  t.test('3. one etcd member killed: writes go on', { skip: skipUnless('3'), timeout: 300_000 }, async (t) => {
    await ha.etcd.kill(0);
    const writer = new Writer(all, 'quorum', 'one-down');
    writer.start(2, 60);
    await writer.finished();
    const lost = await lostWrites(all, 'quorum', writer.acked);
    report(t, `one etcd member down: acknowledged writes ${writer.acked.size}, retried failures ${writer.failures}, lost ${lost.length}`);
    t.equal(lost.length, 0);
    ha.etcd.restart(0);
    await ha.etcd.waitHealthy(3);
  });

  t.test('4-5. quorum lost: clean 5xx within --request-timeout, cached reads and /readyz; restored without a restart', { skip: skipUnless('4'), timeout: 300_000 }, async (t) => {
    const client = per[2]!;
    const watcher = new WatchRecorder(client, 'quorum');
    t.teardown(() => watcher.stop());
    await waitUntil('watch synced', async () => watcher.relists > 0, 30_000);
    await ha.etcd.kill(0);
    await ha.etcd.kill(1);
    const started = Date.now();
    let status = 0;
    try {
      await client.create({ ...CONFIGMAPS, namespace: 'quorum' }, { metadata: { name: 'no-quorum' } }, { signal: AbortSignal.timeout(120_000) });
    } catch (e) {
      status = (e as { code?: number }).code ?? -1;
    }
    const took = (Date.now() - started) / 1000;
    report(t, `two etcd members down: a write answered ${status} after ${took.toFixed(1)} s (--request-timeout ${REQUEST_TIMEOUT_S} s)`);
    t.ok(status >= 500 && status < 600, `a 5xx (${status})`);
    t.ok(took < REQUEST_TIMEOUT_S + 10, 'within the request timeout (and margin), never a hang');
    const cached = await client.list({ ...CONFIGMAPS, namespace: 'quorum' }, { resourceVersion: '0' });
    t.ok(Array.isArray(cached.items) && cached.metadata.resourceVersion, 'a list from the cache is served without a quorum');
    const notReady = await waitUntil('/readyz not ready', async () => (await ha.get(2, '/readyz', 10_000)).status !== 200, 60_000);
    report(t, `/readyz said not ready after ${notReady.toFixed(1)} s`);

    ha.etcd.restart(0);
    ha.etcd.restart(1);
    await ha.etcd.waitHealthy(3);
    const writable = await waitUntil('writes after the quorum is back', async () => {
      await client.create({ ...CONFIGMAPS, namespace: 'quorum' }, { metadata: { name: 'quorum-back' } }).catch((e: unknown) => { if ((e as { code?: number }).code !== 409) throw e; });
      return true;
    }, 120_000);
    const ready = await waitUntil('/readyz ready again', async () => (await ha.get(2, '/readyz')).status === 200, 120_000);
    const missing = await watcher.waitFor(['quorum-back'], 60_000);
    report(t, `quorum restored (no restart): writes again ${writable.toFixed(1)} s after etcd was healthy, /readyz ready ${ready.toFixed(1)} s later, the watch saw the new write: ${missing.length === 0} (relists ${watcher.relists - 1}, duplicates ${watcher.duplicates})`);
    t.equal(missing.length, 0, 'the watch goes on after the quorum is back');
    t.equal(watcher.duplicates, 0, 'the watch repeated nothing');
  });

  const kubectl133 = kubectl(33);
  t.test('6. kubectl 1.33 through haproxy while an API server, then an etcd member, is killed and restarted', { timeout: 300_000, skip: skipUnless('6') || (!ha.haproxyCoreconfigPath ? 'haproxy not installed' : !kubectl133 ? 'kubectl.1.33 not installed' : false) }, async (t) => {
    const k = kubectlRunner(kubectl133!, ha.haproxyCoreconfigPath!, await mkdtemp(join(tmpdir(), 'corectl-ha-kubectl-')));
    await k.ok(t, ['-n', 'kubectl', 'create', 'configmap', 'before']);
    await ha.kill(1);
    for (let i = 0; i < 5; i++) await k.ok(t, ['-n', 'kubectl', 'create', 'configmap', `apiserver-down-${i}`]);
    await k.ok(t, ['-n', 'kubectl', 'get', 'configmaps']);
    await ha.restart(1);
    await ha.etcd.kill(2);
    for (let i = 0; i < 5; i++) await k.ok(t, ['-n', 'kubectl', 'create', 'configmap', `etcd-down-${i}`]);
    ha.etcd.restart(2);
    await ha.etcd.waitHealthy(3);
    const names = (await k.json(t, ['-n', 'kubectl', 'get', 'configmaps'])).items.map((o: { metadata: { name: string } }) => o.metadata.name);
    t.equal(names.filter((n: string) => /^(apiserver|etcd)-down-/.test(n)).length, 10, 'every create through haproxy is there');
    report(t, `kubectl 1.33 through haproxy: 5 creates with an API server killed, 5 with an etcd member killed, ${names.filter((n: string) => /^(apiserver|etcd)-down-/.test(n)).length} of 10 there afterwards`);
  });

  t.test('7. leader election across machines: never two leaders, handover within lease + retry', { skip: skipUnless('7'), timeout: 300_000 }, async (t) => {
    const machineA = await ha.coreconfigOrdered([0, 1, 2]), machineB = await ha.coreconfigOrdered([1, 2, 0]);
    const daemons = [['controller-manager', CM_LOCK.name], ['scheduler', SCHEDULER_LOCK.name]] as const;
    const groups = daemons.map(([daemon, lease]) => ({ daemon, lease, candidates: [startCandidate(daemon, machineA), startCandidate(daemon, machineB)] }));
    t.teardown(async () => { for (const g of groups) for (const c of g.candidates) { c.child.kill('SIGKILL'); await c.exited; } });
    // Every lease state seen, polled: a new holder must acquire only after the old lease ran out.
    const terms = new Map<string, LeaseView[]>();
    let polling = true;
    const poller = (async () => {
      while (polling) {
        for (const g of groups) {
          const l = await leaseOf(all, g.lease);
          if (!l || !l.holder) continue;
          const list = terms.get(g.lease) ?? [];
          const last = list[list.length - 1];
          if (!last || last.holder !== l.holder) list.push(l); else list[list.length - 1] = l;
          terms.set(g.lease, list);
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    const ids = await Promise.all(groups.map(async (g) => Promise.all(g.candidates.map((c) => c.identity))));
    const leaderOf = async (i: number): Promise<number> => {
      let who = -1;
      await waitUntil(`${groups[i]!.daemon} leader`, async () => { const l = await leaseOf(all, groups[i]!.lease); who = l ? ids[i]!.indexOf(l.holder) : -1; return who >= 0; }, 60_000);
      return who;
    };
    const first = await Promise.all(groups.map((_, i) => leaderOf(i)));
    // Kill the API server machine A prefers: its candidates fail over and keep (or hand over) the lease.
    await ha.kill(0);
    await new Promise((r) => setTimeout(r, LEASE_MS + 2 * RETRY_MS));
    const afterApiserverKill = await Promise.all(groups.map((_, i) => leaderOf(i)));
    await ha.restart(0);
    // Kill the leaders themselves.
    const handover: number[] = [];
    for (const [i, g] of groups.entries()) {
      const leader = afterApiserverKill[i]!;
      const killedAt = Date.now();
      g.candidates[leader]!.child.kill('SIGKILL');
      await g.candidates[leader]!.exited;
      await waitUntil(`${g.daemon} takeover`, async () => (await leaseOf(all, g.lease))?.holder === ids[i]![1 - leader], 60_000);
      handover.push((Date.now() - killedAt) / 1000);
    }
    polling = false;
    await poller;
    let overlaps = 0;
    for (const list of terms.values()) for (let k = 1; k < list.length; k++) if (list[k]!.acquire < list[k - 1]!.renew + LEASE_MS - 50) overlaps++;
    report(t, `leader election: leaders kept across the API server kill ${JSON.stringify(first.map((l, i) => l === afterApiserverKill[i]))}; handover after SIGKILL ${handover.map((x) => x.toFixed(1)).join(' s, ')} s (lease ${LEASE_MS / 1000} s + retry ${RETRY_MS / 1000} s); terms ${[...terms.values()].map((l) => l.length).join('/')}; overlapping terms ${overlaps}`);
    t.equal(overlaps, 0, 'never two leaders');
    for (const h of handover) t.ok(h <= (LEASE_MS + RETRY_MS) / 1000 + 5, `handover within lease + retry (+5 s for a loaded machine): ${h.toFixed(1)} s`);
  });

  t.test('8. a node agent cut off from every API server', { skip: skipUnless('8'), timeout: 300_000 }, async (t) => {
    const cuts = await Promise.all(ha.apiservers.map((a) => startTcpCut('127.0.0.1', a.port)));
    const root = await mkdtemp(join(tmpdir(), 'corectl-ha-nodes-'));
    const viaCut = await coreconfigVia(join(root, 'coreconfig-cut'), await readFile(ha.coreconfigFor(0), 'utf8'), cuts.map((c) => `https://${c.address}`));
    const cm = startNodeLifecycle(ha.coreconfigPath);
    const nodes = [await startFakeNode('cut-node', viaCut, join(root, 'cut')), await startFakeNode('ok-node', ha.coreconfigPath, join(root, 'ok'))];
    t.teardown(async () => {
      for (const c of cuts) c.heal();
      for (const n of nodes) await n.stop({ stopPods: true }).catch(() => undefined);
      cm.kill('SIGKILL');
      for (const c of cuts) await c.close();
      await rm(root, { recursive: true, force: true });
    });
    for (const n of ['cut-node', 'ok-node']) await waitUntil(`${n} Ready`, async () => (await readyStatus(all, n)) === 'True', 90_000);
    const pods = { ...PODS, namespace: 'quorum' };
    await all.create(pods, podManifest('on-cut-node', 'cut-node'));
    let before: { id: string; restarts: number } | undefined;
    await waitUntil('the pod running', async () => (before = runningContainer(await all.get(pods, 'on-cut-node'))) !== undefined, 60_000);

    // A cut shorter than the eviction timeout: NotReady, then Ready again, the same container running.
    for (const c of cuts) c.cut();
    const notReady = await waitUntil('NotReady', async () => (await readyStatus(all, 'cut-node')) !== 'True', 60_000);
    for (const c of cuts) c.heal();
    const ready = await waitUntil('Ready again', async () => (await readyStatus(all, 'cut-node')) === 'True', 60_000);
    const after = runningContainer(await all.get(pods, 'on-cut-node'));
    t.same(after, before, 'the pod kept running through the cut (same container, no restart)');
    t.equal(await readyStatus(all, 'ok-node'), 'True', 'the other node stayed Ready');

    // A cut longer than --pod-eviction-timeout: the pod is evicted; after the heal it goes.
    for (const c of cuts) c.cut();
    const evicted = await waitUntil('evicted', async () => {
      try { return !!(await all.get(pods, 'on-cut-node')).metadata?.deletionTimestamp; } catch { return true; }
    }, (GRACE_S + EVICTION_S + 60) * 1000);
    for (const c of cuts) c.heal();
    const gone = await waitUntil('the evicted pod gone after the heal', async () => {
      try { await all.get(pods, 'on-cut-node'); return false; } catch (e) { return (e as { code?: number }).code === 404; }
    }, 90_000);
    await waitUntil('Ready after the second cut', async () => (await readyStatus(all, 'cut-node')) === 'True', 60_000);
    report(t, `node agent cut off: NotReady after ${notReady.toFixed(1)} s (grace ${GRACE_S} s), Ready ${ready.toFixed(1)} s after the heal, its pod kept running: ${JSON.stringify(after) === JSON.stringify(before)}; a longer cut evicted the pod after ${evicted.toFixed(1)} s (grace + --pod-eviction-timeout ${EVICTION_S} s), gone ${gone.toFixed(1)} s after the heal`);
  });

  t.test('9. an API server cut off from etcd', { skip: skipUnless('9'), timeout: 300_000 }, async (t) => {
    for (const c of etcdCuts) c.cut();
    const started = Date.now();
    let status = 0;
    try {
      await per[2]!.create({ ...CONFIGMAPS, namespace: 'quorum' }, { metadata: { name: 'cut-from-etcd' } }, { signal: AbortSignal.timeout(120_000) });
    } catch (e) { status = (e as { code?: number }).code ?? -1; }
    const took = (Date.now() - started) / 1000;
    t.ok(status >= 500 && status < 600, `a 5xx (${status})`);
    t.ok(took < REQUEST_TIMEOUT_S + 10, `within the request timeout and margin (${took.toFixed(1)} s)`);
    const notReady = await waitUntil('/readyz not ready', async () => (await ha.get(2, '/readyz', 10_000)).status !== 200, 60_000);
    // A client preferring server 2: its consistent read is answered by another server.
    const prefers2 = await clientFor(await ha.coreconfigOrdered([2, 0, 1]));
    const readStart = Date.now();
    const list = await prefers2.list({ group: '', version: 'v1', resource: 'namespaces' });
    const served = (Date.now() - readStart) / 1000;
    t.ok(list.items.length > 0, 'a consistent list served by another server');
    t.not(prefers2.transport.server, ha.apiservers[2]!.url, 'the client moved to another server');
    for (const c of etcdCuts) c.heal();
    const healed = await waitUntil('server 2 ready again', async () => (await ha.get(2, '/readyz')).status === 200, 120_000);
    await per[2]!.create({ ...CONFIGMAPS, namespace: 'quorum' }, { metadata: { name: 'after-etcd-cut' } });
    report(t, `API server cut off from etcd: a write answered ${status} after ${took.toFixed(1)} s, /readyz not ready after ${notReady.toFixed(1)} s, a client preferring it served by another server in ${served.toFixed(1)} s; healed: ready ${healed.toFixed(1)} s later and writing, no restart`);
  });
}

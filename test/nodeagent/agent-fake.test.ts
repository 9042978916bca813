/**
 * The node agent against a real API server with the fake runtime: registration, Ready node,
 * Lease renewals; pods bound to the node run, report status, restart per policy with
 * crash-loop backoff, and are stopped and finally deleted; static pods run and are mirrored;
 * --max-pods admission.
 */
import { mkdtemp, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { isApiError } from '../../src/api/meta/status.js';
import type { KubeObject } from '../../src/api/resources/types.js';
import { loadCoreconfig } from '../../src/client/coreconfig.js';
import { RestClient } from '../../src/client/rest-client.js';
import { parseNodeagentArgs } from '../../src/flags/nodeagent.js';
import { startNodeAgent, type NodeAgent } from '../../src/daemons/nodeagent/main.js';
import type { Pod } from '../../src/daemons/nodeagent/pod-types.js';
import { startApiserver } from '../helpers/apiserver.js';
import { waitFor } from '../helpers/wait-for.js';


const api = await startApiserver();
const dir = await mkdtemp(join(tmpdir(), 'corectl-agent-'));
const client = new RestClient({ connection: await loadCoreconfig({ path: api.coreconfigPath }), contentType: 'application/json' });
const agents: NodeAgent[] = [];
t.teardown(async () => {
  for (const a of agents) await a.stop({ stopPods: true }).catch(() => undefined);
  client.close();
  await api.stop();
  await rm(dir, { recursive: true, force: true });
});

const PODS = { group: '', version: 'v1', resource: 'pods', namespace: 'default' };
const NODES = { group: '', version: 'v1', resource: 'nodes' };

async function agent(name: string, extra: string[] = []): Promise<NodeAgent> {
  const root = join(dir, name);
  const { config } = parseNodeagentArgs([
    '--container-runtime=fake', `--coreconfig=${api.coreconfigPath}`, `--hostname-override=${name}`, `--root-dir=${root}`,
    `--cert-dir=${join(root, 'pki')}`, '--port=0', '--read-only-port=0', '--healthz-port=0', '--fail-swap-on=false',
    '--address=127.0.0.1', '--node-status-update-frequency=1s', '--resolv-conf=', '--event-qps=0', '--core-api-qps=50', '--core-api-burst=100', '--file-check-frequency=1s', ...extra,
  ]);
  const a = await startNodeAgent(config, {
    podLogDir: join(root, 'logs'), relistPeriodMs: 100, leaseRenewIntervalMs: 300, skipProcessTweaks: true,
    backoff: { initialMs: 1500, maxMs: 3000, resetMs: 600_000 },
  });
  agents.push(a);
  return a;
}

function podManifest(name: string, node: string, opts: { image?: string; restartPolicy?: string; annotations?: Record<string, string> } = {}): KubeObject {
  return {
    apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'default', ...(opts.annotations ? { annotations: opts.annotations } : {}) },
    spec: {
      nodeName: node, restartPolicy: opts.restartPolicy ?? 'Always', terminationGracePeriodSeconds: 2,
      containers: [{ name: 'main', image: opts.image ?? 'localhost/busybox:latest', imagePullPolicy: 'IfNotPresent', env: [{ name: 'POD', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }] }],
    },
  };
}

const getPod = (name: string): Promise<Pod> => client.get<Pod>(PODS, name);

// The manifest API on, and a client CA: /manifests, /run and exec need an authenticated caller.
const a = await agent('node-a', ['--node-labels=tier=test', '--register-with-taints=dedicated=test:NoSchedule', '--enable-manifest-api=true', `--client-ca-file=${api.caFile}`]);

t.test('registers a Ready node and renews its Lease', async (t) => {
  const node = await waitFor('Ready node', async () => {
    const n = await client.get<KubeObject & { status?: { conditions?: { type: string; status: string }[] } }>(NODES, 'node-a');
    return n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ? n : undefined;
  });
  const labels = node.metadata?.labels ?? {};
  t.equal(labels['kubernetes.io/hostname'], 'node-a');
  t.equal(labels['kubernetes.io/os'], 'linux');
  t.equal(labels.tier, 'test');
  const spec = node.spec as { taints?: { key: string; effect: string }[] };
  t.same(spec.taints?.map((x) => `${x.key}:${x.effect}`), ['dedicated:NoSchedule']);
  const status = node.status as Record<string, any>;
  t.match(status.nodeInfo.kubeletVersion, /^v1\.\d+\.\d+/);
  t.equal(status.nodeInfo.containerRuntimeVersion, 'fake://0.1.0');
  t.ok(Number(status.capacity.pods) > 0);
  t.ok(status.addresses.some((x: { type: string }) => x.type === 'InternalIP'));
  t.equal(status.daemonEndpoints.kubeletEndpoint.Port, a.listeners?.securePort);
  t.ok(status.images.length > 0);
  const lease = await waitFor('lease', () => client.get({ group: 'coordination.k8s.io', version: 'v1', resource: 'leases', namespace: 'kube-node-lease' }, 'node-a'));
  const ls = lease.spec as { holderIdentity: string; leaseDurationSeconds: number; renewTime: string };
  t.equal(ls.holderIdentity, 'node-a');
  t.equal(ls.leaseDurationSeconds, 40);
  t.equal(lease.metadata?.ownerReferences?.[0]?.uid, node.metadata?.uid);
  const first = ls.renewTime;
  await waitFor('lease renewal', async () => {
    const l = await client.get({ group: 'coordination.k8s.io', version: 'v1', resource: 'leases', namespace: 'kube-node-lease' }, 'node-a');
    return (l.spec as { renewTime: string }).renewTime !== first;
  });
});

t.test('a pod bound to the node runs, reports status, and is stopped and removed on delete', async (t) => {
  await client.create(PODS, podManifest('runner', 'node-a'));
  const pod = await waitFor('Running pod', async () => { const p = await getPod('runner'); return p.status?.phase === 'Running' && p.status.containerStatuses?.[0]?.ready ? p : undefined; });
  t.match(pod.status?.podIP, /^\d+\.\d+\.\d+\.\d+$/);
  t.same(pod.status?.podIPs, [{ ip: pod.status?.podIP }]);
  t.ok(pod.status?.hostIP);
  t.ok(pod.status?.startTime);
  t.equal(pod.status?.qosClass, 'BestEffort');
  const conds = Object.fromEntries((pod.status?.conditions ?? []).map((c) => [c.type, c.status]));
  t.same({ PodScheduled: conds.PodScheduled, Initialized: conds.Initialized, ContainersReady: conds.ContainersReady, Ready: conds.Ready }, { PodScheduled: 'True', Initialized: 'True', ContainersReady: 'True', Ready: 'True' });
  const cs = pod.status?.containerStatuses?.[0];
  t.match(cs?.containerID, /^fake:\/\/[0-9a-f]+$/);
  t.ok(cs?.state.running?.startedAt);
  t.equal(cs?.restartCount, 0);
  t.match(cs?.imageID, /^sha256:/);
  const uid = pod.metadata?.uid ?? '';
  t.ok((await a.runtime.listContainers({ labelSelector: { 'io.kubernetes.pod.uid': uid } })).some((c) => c.state === 'running'));

  await client.delete(PODS, 'runner');
  await waitFor('pod removed', async () => {
    try { await getPod('runner'); return false; } catch (e) { return isApiError(e) && e.status.code === 404; }
  });
  await waitFor('containers gone', async () => (await a.runtime.listContainers({ labelSelector: { 'io.kubernetes.pod.uid': uid } })).length === 0);
  t.equal((await a.runtime.listPodSandbox({ labelSelector: { 'io.kubernetes.pod.uid': uid } })).length, 0);
});

t.test('restartPolicy Never: a failing container fails the pod without restarts', async (t) => {
  await client.create(PODS, podManifest('never', 'node-a', { image: 'fake/exit:3', restartPolicy: 'Never' }));
  const p = await waitFor('Failed pod', async () => { const x = await getPod('never'); return x.status?.phase === 'Failed' ? x : undefined; });
  const cs = p.status?.containerStatuses?.[0];
  t.equal(cs?.state.terminated?.exitCode, 3);
  t.equal(cs?.state.terminated?.reason, 'Error');
  t.equal(cs?.restartCount, 0);
  await client.delete(PODS, 'never');
});

t.test('restartPolicy OnFailure: success completes the pod, failure restarts', async (t) => {
  await client.create(PODS, podManifest('onfail-ok', 'node-a', { image: 'fake/exit:0', restartPolicy: 'OnFailure' }));
  await client.create(PODS, podManifest('onfail-bad', 'node-a', { image: 'fake/exit:1', restartPolicy: 'OnFailure' }));
  const ok = await waitFor('Succeeded pod', async () => { const x = await getPod('onfail-ok'); return x.status?.phase === 'Succeeded' ? x : undefined; });
  t.equal(ok.status?.containerStatuses?.[0]?.state.terminated?.reason, 'Completed');
  const bad = await waitFor('restarted pod', async () => { const x = await getPod('onfail-bad'); return (x.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 1 ? x : undefined; });
  t.not(bad.status?.phase, 'Failed');
  await client.delete(PODS, 'onfail-ok');
  await client.delete(PODS, 'onfail-bad');
});

t.test('restartPolicy Always: a crashing container restarts and enters CrashLoopBackOff', async (t) => {
  await client.create(PODS, podManifest('crasher', 'node-a', { image: 'fake/exit:2' }));
  const p = await waitFor('CrashLoopBackOff', async () => {
    const x = await getPod('crasher');
    const cs = x.status?.containerStatuses?.[0];
    return cs?.state.waiting?.reason === 'CrashLoopBackOff' ? x : undefined;
  });
  const cs = p.status?.containerStatuses?.[0];
  t.ok((cs?.restartCount ?? 0) >= 1);
  t.equal(cs?.lastState.terminated?.exitCode, 2);
  t.match(cs?.state.waiting?.message, /back-off \d+s restarting failed container=main/);
  t.equal(p.status?.phase, 'Running');
  const later = await waitFor('another restart', async () => { const x = await getPod('crasher'); return (x.status?.containerStatuses?.[0]?.restartCount ?? 0) > (cs?.restartCount ?? 0) ? x : undefined; });
  t.ok(later);
  await client.delete(PODS, 'crasher');
});

t.test('a static pod from --pod-manifest-path runs and is mirrored', async (t) => {
  const manifests = join(dir, 'manifests');
  await mkdir(manifests, { recursive: true });
  await writeFile(join(manifests, 'web.yaml'), 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: web\n    image: localhost/busybox:latest\n    imagePullPolicy: Never\n');
  await writeFile(join(manifests, '.hidden.yaml'), 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: hidden\nspec:\n  containers:\n  - name: x\n    image: localhost/busybox:latest\n');
  const b = await agent('node-s', [`--pod-manifest-path=${manifests}`]);
  const mirror = await waitFor('mirror pod running', async () => { const x = await getPod('web-node-s'); return x.status?.phase === 'Running' ? x : undefined; });
  const ann = mirror.metadata?.annotations ?? {};
  t.equal(ann['kubernetes.io/config.source'], 'file');
  t.ok(ann['kubernetes.io/config.mirror']);
  t.equal(ann['kubernetes.io/config.mirror'], ann['kubernetes.io/config.hash']);
  t.equal(mirror.spec?.nodeName, 'node-s');
  t.equal(b.pods.pods().length, 1, 'the dot file is ignored');
  // A deleted mirror pod comes back.
  const oldUid = mirror.metadata?.uid;
  await client.delete(PODS, 'web-node-s', { gracePeriodSeconds: 0 });
  await waitFor('mirror pod recreated', async () => { const x = await getPod('web-node-s'); return x.metadata?.uid !== oldUid; });
  // Removing the file stops the pod and deletes the mirror.
  await rm(join(manifests, 'web.yaml'));
  await waitFor('mirror pod deleted', async () => { try { await getPod('web-node-s'); return false; } catch (e) { return isApiError(e) && e.status.code === 404; } });
  await waitFor('static pod stopped', async () => (await b.runtime.listContainers()).length === 0);
});

t.test('--max-pods rejects pods beyond the limit with OutOfpods', async (t) => {
  await agent('node-m', ['--max-pods=2']);
  await waitFor('node-m registered', () => client.get(NODES, 'node-m'));
  for (const n of ['m1', 'm2']) await client.create(PODS, podManifest(n, 'node-m'));
  for (const n of ['m1', 'm2']) await waitFor(`${n} running`, async () => (await getPod(n)).status?.phase === 'Running');
  await client.create(PODS, podManifest('m3', 'node-m'));
  const p = await waitFor('m3 rejected', async () => { const x = await getPod('m3'); return x.status?.phase === 'Failed' ? x : undefined; });
  t.equal(p.status?.reason, 'OutOfpods');
  t.match(p.status?.message, /pods/);
  for (const n of ['m1', 'm2', 'm3']) await client.delete(PODS, n);
});

t.test('servers: /healthz, /pods, /containerLogs, /manifests, /run, and exec needing an upgrade', async (t) => {
  const port = a.listeners?.securePort ?? 0;
  const base = `https://127.0.0.1:${port}`;
  const [cert, key] = await Promise.all([readFile(api.clientCertFile), readFile(api.clientKeyFile)]);
  const get = async (path: string, init: RequestInit = {}): Promise<Response> => {
    const { Agent } = await import('node:https');
    const https = await import('node:https');
    return new Promise((resolve, reject) => {
      const req = https.request(`${base}${path}`, { method: init.method ?? 'GET', agent: new Agent({ rejectUnauthorized: false, cert, key }), headers: { 'content-type': 'application/yaml' } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (d: Buffer) => chunks.push(d));
        res.on('end', () => resolve(new Response(Buffer.concat(chunks), { status: res.statusCode ?? 0 })));
      });
      req.on('error', reject);
      req.end(init.body as string | undefined);
    });
  };
  t.equal(await (await get('/healthz')).text(), 'ok');
  await client.create(PODS, { ...podManifest('talker', 'node-a'), spec: { nodeName: 'node-a', containers: [{ name: 'main', image: 'localhost/busybox:latest', imagePullPolicy: 'IfNotPresent', env: [{ name: 'FAKE_STDOUT', value: 'hello from $(NAME)' }, { name: 'NAME', value: 'talker' }] }] } });
  await waitFor('talker running', async () => (await getPod('talker')).status?.phase === 'Running');
  const pods = await (await get('/pods')).json() as { kind: string; items: Pod[] };
  t.equal(pods.kind, 'PodList');
  t.ok(pods.items.some((p) => p.metadata?.name === 'talker'));
  const logs = await waitFor('logs', async () => { const r = await get('/containerLogs/default/talker/main'); const x = await r.text(); return r.status === 200 && x.includes('hello') ? x : undefined; });
  t.match(logs, /hello from/);
  const plain = await get('/exec/default/talker/main?command=ls');
  t.equal(plain.status, 400);
  t.match(await plain.text(), /Upgrade request required/);
  const ran = await get('/run/default/talker/main?cmd=echo%20hi%20there', { method: 'POST' });
  t.equal(ran.status, 200);
  t.equal(await ran.text(), 'hi there\n', '/run runs the command to completion');
  t.equal((await get('/run/default/nobody/main?cmd=true', { method: 'POST' })).status, 404);
  const posted = await get('/manifests', { method: 'POST', body: 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: pushed\nspec:\n  containers:\n  - name: c\n    image: localhost/busybox:latest\n    imagePullPolicy: Never\n' });
  t.equal(posted.status, 201);
  const pushed = await posted.json() as Pod;
  t.equal(pushed.metadata?.name, 'pushed-node-a');
  t.equal(pushed.metadata?.annotations?.['kubernetes.io/config.source'], 'server');
  await waitFor('pushed pod mirrored', async () => (await getPod('pushed-node-a')).status?.phase === 'Running');
  const list = await (await get('/manifests')).json() as { items: Pod[] };
  t.equal(list.items.length, 1);
  t.equal((await get('/manifests/default/pushed', { method: 'DELETE' })).status, 200);
  await waitFor('pushed mirror gone', async () => { try { await getPod('pushed-node-a'); return false; } catch (e) { return isApiError(e) && e.status.code === 404; } });
  t.equal((await get('/manifests', { method: 'POST', body: 'kind: Pod\nmetadata: {}\n' })).status, 400);
  await client.delete(PODS, 'talker');
});

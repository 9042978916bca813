/**
 * On a private containerd (skipped unless root with containerd installed):
 * - gRPC probes: a hostNetwork pod probed against our grpc.health.v1 server on the host's
 *   loopback (the node IP here) turns ready and unready as the server answers SERVING or
 *   NOT_SERVING, with "Readiness probe failed: ..." Unhealthy events, and a failing gRPC
 *   liveness probe restarts its container ("Liveness probe failed: ...", Killing);
 * - restarts: a node agent stopped and started again adopts the running pod instead of
 *   recreating it: same sandbox and pod IP, same container, restartCount and lastState kept,
 *   still Ready, and its readiness probe goes on (failing it makes the pod unready), no new
 *   containers in the runtime.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { KubeObject } from '../../src/api/resources/types.js';
import { loadCoreconfig } from '../../src/client/coreconfig.js';
import { RestClient } from '../../src/client/rest-client.js';
import { parseNodeagentArgs } from '../../src/flags/nodeagent.js';
import { startNodeAgent, type NodeAgent } from '../../src/daemons/nodeagent/main.js';
import type { Pod } from '../../src/daemons/nodeagent/pod-types.js';
import { startApiserver } from '../helpers/apiserver.js';
import { containerdSkipReason, startContainerd } from '../helpers/containerd.js';
import { startHealthServer } from '../helpers/grpc-health-server.js';
import { waitFor } from '../helpers/wait-for.js';

const skip = containerdSkipReason();
if (skip) {
  t.plan(0, `containerd: ${skip}`);
} else {
  await main();
}

interface Ev extends KubeObject { reason: string; message: string; type: string; count: number; involvedObject: { name: string; fieldPath?: string } }

async function main(): Promise<void> {
  const containerd = await startContainerd();
  const api = await startApiserver();
  const health = await startHealthServer('127.0.0.1', { '': 'SERVING', live: 'SERVING' });
  const dir = await mkdtemp(join(tmpdir(), 'corectl-probes-restart-'));
  const client = new RestClient({ connection: await loadCoreconfig({ path: api.coreconfigPath }), contentType: 'application/json' });
  let agent: NodeAgent | undefined;
  t.teardown(async () => {
    await agent?.stop({ stopPods: true }).catch(() => undefined);
    await health.close();
    client.close();
    await api.stop();
    await containerd.stop();
    await rm(dir, { recursive: true, force: true });
  });
  const { config } = parseNodeagentArgs([
    '--container-runtime=remote', `--container-runtime-endpoint=${containerd.endpoint}`, `--coreconfig=${api.coreconfigPath}`,
    '--hostname-override=pr-node', `--root-dir=${join(dir, 'root')}`, `--cert-dir=${join(dir, 'pki')}`, '--port=0', '--read-only-port=0',
    '--healthz-port=0', '--fail-swap-on=false', '--address=127.0.0.1', '--node-ip=127.0.0.1', '--resolv-conf=', '--event-qps=0',
  ]);
  const start = (): Promise<NodeAgent> => startNodeAgent(config, { podLogDir: join(dir, 'logs'), relistPeriodMs: 200, skipProcessTweaks: true, backoff: { initialMs: 1000, maxMs: 2000, resetMs: 600_000 } });
  agent = await start();
  const PODS = { group: '', version: 'v1', resource: 'pods', namespace: 'default' };
  const getPod = (name: string): Promise<Pod> => client.get<Pod>(PODS, name);
  const ready = (p: Pod): boolean => p.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
  const events = async (pod: string): Promise<Ev[]> => (await client.list<Ev>({ group: '', version: 'v1', resource: 'events', namespace: 'default' })).items.filter((e) => e.involvedObject.name === pod);

  t.test('a gRPC readiness probe passes and fails as the server answers', async (t) => {
    await client.create(PODS, {
      apiVersion: 'v1', kind: 'Pod', metadata: { name: 'grpc-ready' },
      spec: {
        nodeName: 'pr-node', hostNetwork: true, terminationGracePeriodSeconds: 1,
        containers: [{
          name: 'main', image: 'localhost/busybox:latest', imagePullPolicy: 'Never', command: ['sleep', '3600'],
          readinessProbe: { grpc: { port: health.port }, periodSeconds: 1, failureThreshold: 1 },
        }],
      },
    });
    await waitFor('ready while SERVING', async () => ready(await getPod('grpc-ready')), 40_000);
    health.set('', 'NOT_SERVING');
    await waitFor('unready while NOT_SERVING', async () => !ready(await getPod('grpc-ready')), 20_000);
    const ev = await waitFor('an Unhealthy event', async () => (await events('grpc-ready')).find((e) => e.reason === 'Unhealthy'), 20_000);
    t.equal(ev.type, 'Warning');
    t.equal(ev.message, 'Readiness probe failed: service unhealthy (responded with "NOT_SERVING")');
    t.equal(ev.involvedObject.fieldPath, 'spec.containers{main}');
    const repeated = await waitFor('the repeats are counted on that Event', async () => {
      const list = (await events('grpc-ready')).filter((e) => e.reason === 'Unhealthy');
      return list.length === 1 && list[0]!.count >= 2 ? list[0] : undefined;
    }, 20_000);
    t.ok(repeated);
    health.set('', 'SERVING');
    await waitFor('ready again', async () => ready(await getPod('grpc-ready')), 20_000);
    t.equal((await getPod('grpc-ready')).status?.containerStatuses?.[0]?.restartCount, 0, 'readiness never restarts');
    await client.delete(PODS, 'grpc-ready');
  });

  t.test('a failing gRPC liveness probe restarts the container', async (t) => {
    await client.create(PODS, {
      apiVersion: 'v1', kind: 'Pod', metadata: { name: 'grpc-live' },
      spec: {
        nodeName: 'pr-node', hostNetwork: true, terminationGracePeriodSeconds: 1,
        containers: [{
          name: 'main', image: 'localhost/busybox:latest', imagePullPolicy: 'Never', command: ['sleep', '3600'],
          livenessProbe: { grpc: { port: health.port, service: 'live' }, periodSeconds: 1, failureThreshold: 2 },
        }],
      },
    });
    await waitFor('running', async () => (await getPod('grpc-live')).status?.phase === 'Running', 40_000);
    // Passing: no restart for a while (several probe periods).
    await waitFor('probed', () => health.asked.filter((s) => s === 'live').length >= 3, 20_000);
    t.equal((await getPod('grpc-live')).status?.containerStatuses?.[0]?.restartCount, 0, 'no restart while SERVING');
    health.set('live', 'NOT_SERVING');
    await waitFor('restarted', async () => ((await getPod('grpc-live')).status?.containerStatuses?.[0]?.restartCount ?? 0) >= 1, 40_000);
    health.set('live', 'SERVING');
    const evs = await events('grpc-live');
    t.ok(evs.some((e) => e.reason === 'Unhealthy' && e.message === 'Liveness probe failed: service unhealthy (responded with "NOT_SERVING")'), 'Liveness probe failed event');
    t.ok(evs.some((e) => e.reason === 'Killing' && /failed liveness probe, will be restarted/.test(e.message)), 'Killing event');
    await client.delete(PODS, 'grpc-live');
  });

  t.test('a restarted node agent adopts the running pod', async (t) => {
    await client.create(PODS, {
      apiVersion: 'v1', kind: 'Pod', metadata: { name: 'keep' },
      spec: {
        nodeName: 'pr-node', terminationGracePeriodSeconds: 1, volumes: [{ name: 'data', emptyDir: {} }],
        containers: [{
          name: 'main', image: 'localhost/busybox:latest', imagePullPolicy: 'Never', volumeMounts: [{ name: 'data', mountPath: '/data' }],
          // Crashes once, then runs: restartCount 1 and a lastState to keep.
          command: ['sh', '-c', 'if [ -f /data/once ]; then touch /tmp/ready; exec sleep 3600; fi; touch /data/once; exit 3'],
          readinessProbe: { exec: { command: ['cat', '/tmp/ready'] }, periodSeconds: 1 },
        }],
      },
    });
    const before = await waitFor('running and ready after one crash', async () => {
      const p = await getPod('keep');
      return ready(p) && p.status?.containerStatuses?.[0]?.restartCount === 1 ? p : undefined;
    }, 60_000);
    const uid = before.metadata?.uid ?? '';
    const cs = before.status?.containerStatuses?.[0];
    t.equal(cs?.lastState?.terminated?.exitCode, 3);
    const containersBefore = (await agent!.runtime.listContainers({ labelSelector: { 'io.kubernetes.pod.uid': uid } })).map((c) => c.id).sort();
    const sandboxesBefore = (await agent!.runtime.listPodSandbox({ labelSelector: { 'io.kubernetes.pod.uid': uid } })).map((s) => s.id);

    await agent!.stop();
    agent = await start();
    const a = agent;
    // The new agent has synced the pod once it knows its container.
    await waitFor('the new agent knows the pod', () => a.pods.pods().find((p) => p.metadata?.name === 'keep')?.status?.containerStatuses?.[0]?.containerID === cs?.containerID, 30_000);
    // A few relists and probe periods later nothing has been recreated.
    await new Promise((r) => setTimeout(r, 3000));
    const after = await getPod('keep');
    t.equal(after.status?.podIP, before.status?.podIP, 'same pod IP');
    t.equal(after.status?.startTime, before.status?.startTime, 'same start time');
    const csAfter = after.status?.containerStatuses?.[0];
    t.equal(csAfter?.containerID, cs?.containerID, 'same container');
    t.equal(csAfter?.restartCount, 1, 'restartCount kept');
    t.equal(csAfter?.lastState?.terminated?.exitCode, 3, 'lastState kept');
    t.equal(csAfter?.state?.running?.startedAt, cs?.state?.running?.startedAt, 'still the same run');
    t.ok(ready(after), 'still Ready: its probe goes on');
    t.same((await a.runtime.listContainers({ labelSelector: { 'io.kubernetes.pod.uid': uid } })).map((c) => c.id).sort(), containersBefore, 'no new containers');
    t.same((await a.runtime.listPodSandbox({ labelSelector: { 'io.kubernetes.pod.uid': uid } })).map((s) => s.id), sandboxesBefore, 'the same sandbox');
    // The adopted container's readiness probe really runs: failing it makes the pod unready.
    await a.runtime.execSync((cs?.containerID ?? '').replace(/^containerd:\/\//, ''), ['rm', '/tmp/ready'], 5);
    await waitFor('unready once its probe fails', async () => !ready(await getPod('keep')), 20_000);
    await client.delete(PODS, 'keep');
    await waitFor('keep containers removed', async () => (await a.runtime.listContainers({ labelSelector: { 'io.kubernetes.pod.uid': uid } })).length === 0, 30_000);
  });
}

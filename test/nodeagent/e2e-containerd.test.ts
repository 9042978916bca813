/**
 * The node agent on a private containerd (skipped unless root with containerd installed): a
 * busybox pod runs with a pod IP, its logs come through the agent's /containerLogs endpoint
 * (the API server's pods/log proxy is not built yet), a failing liveness probe restarts the
 * container, and deleting the pod removes its containers from the runtime.
 */
import { request, Agent } from 'node:https';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, unlink, writeFile } from 'node:fs/promises';
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
import { containerdSkipReason, startContainerd } from '../helpers/containerd.js';
import { waitFor as waitForShared } from '../helpers/wait-for.js';

const skip = containerdSkipReason();
if (skip) {
  t.plan(0, `containerd: ${skip}`);
} else {
  await main();
}

function waitFor<T>(what: string, fn: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 30_000): Promise<T> { return waitForShared(what, fn, timeoutMs); }

function httpsGet(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent: new Agent({ rejectUnauthorized: false }) }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
    req.end();
  });
}

async function main(): Promise<void> {
  const containerd = await startContainerd();
  const api = await startApiserver();
  const dir = await mkdtemp(join(tmpdir(), 'corectl-agent-cd-'));
  const client = new RestClient({ connection: await loadCoreconfig({ path: api.coreconfigPath }), contentType: 'application/json' });
  let agent: NodeAgent | undefined;
  t.teardown(async () => {
    await agent?.stop({ stopPods: true }).catch(() => undefined);
    client.close();
    await api.stop();
    await containerd.stop();
    await rm(dir, { recursive: true, force: true });
  });
  const { config } = parseNodeagentArgs([
    '--container-runtime=remote', `--container-runtime-endpoint=${containerd.endpoint}`, `--coreconfig=${api.coreconfigPath}`,
    '--hostname-override=cd-node', `--root-dir=${join(dir, 'root')}`, `--cert-dir=${join(dir, 'pki')}`, '--port=0', '--read-only-port=0',
    '--healthz-port=0', '--fail-swap-on=false', '--address=127.0.0.1', '--node-status-update-frequency=1s', '--resolv-conf=', '--event-qps=0',
    `--pod-manifest-path=${join(dir, 'manifests')}`, '--file-check-frequency=1s',
  ]);
  await mkdir(join(dir, 'manifests'), { recursive: true });
  agent = await startNodeAgent(config, { podLogDir: join(dir, 'logs'), relistPeriodMs: 200, skipProcessTweaks: true, backoff: { initialMs: 1000, maxMs: 2000, resetMs: 600_000 } });
  const a = agent;
  const PODS = { group: '', version: 'v1', resource: 'pods', namespace: 'default' };
  const getPod = (name: string): Promise<Pod> => client.get<Pod>(PODS, name);

  t.test('node reports containerd', async (t) => {
    const n = await waitFor('node status', async () => {
      const x = await client.get<KubeObject & { status?: { nodeInfo?: { containerRuntimeVersion?: string } } }>({ group: '', version: 'v1', resource: 'nodes' }, 'cd-node');
      return x.status?.nodeInfo?.containerRuntimeVersion ? x : undefined;
    });
    t.match(n.status?.nodeInfo?.containerRuntimeVersion, /^containerd:\/\//);
  });

  t.test('a busybox pod runs with a pod IP and serves its logs', async (t) => {
    await client.create(PODS, {
      apiVersion: 'v1', kind: 'Pod', metadata: { name: 'bb' },
      spec: {
        nodeName: 'cd-node', terminationGracePeriodSeconds: 1,
        containers: [{ name: 'main', image: 'localhost/busybox:latest', imagePullPolicy: 'IfNotPresent', command: ['sh', '-c', 'echo hello from $(WHO); while true; do sleep 1; done'], env: [{ name: 'WHO', value: 'busybox' }] }],
      },
    });
    const p = await waitFor('bb running', async () => { const x = await getPod('bb'); return x.status?.phase === 'Running' ? x : undefined; });
    t.match(p.status?.podIP, /^10\.88\.\d+\.\d+$/);
    t.match(p.status?.containerStatuses?.[0]?.containerID, /^containerd:\/\//);
    const port = a.listeners?.securePort ?? 0;
    const logs = await waitFor('logs', async () => { const r = await httpsGet(`https://127.0.0.1:${port}/containerLogs/default/bb/main`); return r.status === 200 && r.body.includes('hello') ? r.body : undefined; });
    t.equal(logs, 'hello from busybox\n');
    const uid = p.metadata?.uid ?? '';
    await client.delete(PODS, 'bb');
    await waitFor('bb deleted', async () => { try { await getPod('bb'); return false; } catch (e) { return isApiError(e) && e.status.code === 404; } });
    await waitFor('bb containers removed', async () => (await a.runtime.listContainers({ labelSelector: { 'io.kubernetes.pod.uid': uid } })).length === 0);
    await waitFor('bb log directory removed', () => !existsSync(join(dir, 'logs', `default_bb_${uid}`)));
  });

  t.test('a static pod from --pod-manifest-path runs on containerd and is mirrored', async (t) => {
    const file = join(dir, 'manifests', 'static-web.yaml');
    await writeFile(file, [
      'apiVersion: v1', 'kind: Pod', 'metadata:', '  name: static-web', '  namespace: default', 'spec:',
      '  terminationGracePeriodSeconds: 1', '  containers:', '  - name: web', '    image: localhost/busybox:latest',
      '    imagePullPolicy: Never', '    command: ["sh", "-c", "sleep 600"]', '',
    ].join('\n'));
    const mirror = await waitFor('mirror pod Running', async () => {
      const x = await getPod('static-web-cd-node');
      return x.status?.phase === 'Running' ? x : undefined;
    }, 40_000);
    t.match(mirror.status?.containerStatuses?.[0]?.containerID, /^containerd:\/\//, 'a real container');
    t.equal(mirror.metadata?.annotations?.['kubernetes.io/config.mirror'] !== undefined, true, 'marked as a mirror pod');
    const uid = mirror.metadata?.annotations?.['kubernetes.io/config.mirror'] ?? '';
    await unlink(file);
    await waitFor('mirror pod gone', async () => { try { await getPod('static-web-cd-node'); return false; } catch (e) { return isApiError(e) && e.status.code === 404; } }, 40_000);
    await waitFor('static containers removed', async () => (await a.runtime.listContainers({ labelSelector: { 'io.kubernetes.pod.uid': uid } })).length === 0);
  });

  t.test('a failing liveness probe restarts the container', async (t) => {
    await client.create(PODS, {
      apiVersion: 'v1', kind: 'Pod', metadata: { name: 'live' },
      spec: {
        nodeName: 'cd-node', terminationGracePeriodSeconds: 1,
        containers: [{
          name: 'main', image: 'localhost/busybox:latest', imagePullPolicy: 'Never',
          command: ['sh', '-c', 'touch /tmp/healthy; sleep 2; rm /tmp/healthy; sleep 600'],
          livenessProbe: { exec: { command: ['cat', '/tmp/healthy'] }, periodSeconds: 1, failureThreshold: 1 },
        }],
      },
    });
    const p = await waitFor('restart', async () => { const x = await getPod('live'); return (x.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 1 ? x : undefined; }, 40_000);
    t.ok((p.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 1);
    const uid = p.metadata?.uid ?? '';
    await client.delete(PODS, 'live');
    await waitFor('live containers removed', async () => (await a.runtime.listContainers({ labelSelector: { 'io.kubernetes.pod.uid': uid } })).length === 0);
  });
}

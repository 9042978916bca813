/**
 * Air-gapped pulls through a mirror (skipped unless root with containerd and Debian's
 * docker-registry installed): a real registry (docker-registry) on loopback holds busybox
 * pushed from the offline image; containerd is configured from a registries file (k3s shape:
 * docker.io mirrored to it), and a pod with `image: busybox` (implicit :latest, so pull policy
 * Always) is pulled through the mirror and runs, with no route to Docker Hub.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { KubeObject } from '../../../src/api/resources/types.js';
import { loadCoreconfig } from '../../../src/client/coreconfig.js';
import { RestClient } from '../../../src/client/rest-client.js';
import { parseNodeagentArgs } from '../../../src/flags/nodeagent.js';
import { startNodeAgent, type NodeAgent } from '../../../src/daemons/nodeagent/main.js';
import type { Pod } from '../../../src/daemons/nodeagent/pod-types.js';
import { startApiserver } from '../../helpers/apiserver.js';
import { containerdSkipReason, startContainerd } from '../../helpers/containerd.js';
import { PAUSE_IMAGE } from '../../helpers/oci-image.js';
import { waitFor } from '../../helpers/wait-for.js';

const skip = containerdSkipReason() || (spawnSync('sh', ['-c', 'command -v docker-registry'], { stdio: 'ignore' }).status !== 0 && 'docker-registry not installed');
if (skip) t.plan(0, `registry mirror: ${skip}`);
else await main();

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-mirror-'));
  const port = await freePort();
  const mirror = `127.0.0.1:${port}`;
  await writeFile(join(dir, 'registry.yml'), `version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: ${join(dir, 'registry')}\nhttp:\n  addr: ${mirror}\n`);
  const registry: ChildProcess = spawn('docker-registry', ['serve', join(dir, 'registry.yml')], { stdio: 'ignore' });
  const containerd = await startContainerd({ registries: `mirrors:\n  docker.io:\n    endpoint:\n      - "http://${mirror}"\n` });
  const api = await startApiserver();
  const client = new RestClient({ connection: await loadCoreconfig({ path: api.coreconfigPath }), contentType: 'application/json' });
  let agent: NodeAgent | undefined;
  t.teardown(async () => {
    await agent?.stop({ stopPods: true }).catch(() => undefined);
    client.close();
    await api.stop();
    await containerd.stop();
    registry.kill();
    await rm(dir, { recursive: true, force: true });
  });
  const ctr = (...args: string[]): { ok: boolean; out: string } => {
    const r = spawnSync('ctr', ['-a', containerd.socketPath, '-n', 'k8s.io', ...args], { encoding: 'utf8', timeout: 60_000 });
    return { ok: r.status === 0, out: `${r.stdout}${r.stderr}` };
  };
  await waitFor('docker-registry answers', async () => (await fetch(`http://${mirror}/v2/`).then((r) => r.ok, () => false)) || undefined, 30_000);
  const seeded = `${mirror}/library/busybox:latest`;
  const tag = ctr('images', 'tag', 'localhost/busybox:latest', seeded);
  const push = ctr('images', 'push', '--plain-http', seeded);
  if (!tag.ok || !push.ok) throw new Error(`seeding the mirror failed: ${tag.out} ${push.out}`);
  ctr('images', 'rm', seeded);

  const { config } = parseNodeagentArgs([
    '--container-runtime=remote', `--container-runtime-endpoint=${containerd.endpoint}`, `--coreconfig=${api.coreconfigPath}`,
    '--hostname-override=mirror-node', `--root-dir=${join(dir, 'root')}`, `--cert-dir=${join(dir, 'pki')}`, '--port=0', '--read-only-port=0',
    '--healthz-port=0', '--fail-swap-on=false', '--address=127.0.0.1', '--node-status-update-frequency=1s', '--resolv-conf=', '--event-qps=0',
    `--pod-infra-container-image=${PAUSE_IMAGE}`,
  ]);
  agent = await startNodeAgent(config, { podLogDir: join(dir, 'logs'), relistPeriodMs: 200, skipProcessTweaks: true });
  const PODS = { group: '', version: 'v1', resource: 'pods', namespace: 'default' };

  t.test('image: busybox (implicit :latest, Always) is pulled through the mirror and runs', async (t) => {
    t.equal(await agent!.runtime.imageStatus('docker.io/library/busybox:latest'), null, 'not present before');
    const pod: KubeObject = {
      apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web' },
      spec: { nodeName: 'mirror-node', terminationGracePeriodSeconds: 1, containers: [{ name: 'busybox', image: 'busybox', command: ['httpd', '-f', '-p', '80'] }] },
    };
    await client.create(PODS, pod);
    const p = await waitFor('web runs', async () => {
      const x = await client.get<Pod>(PODS, 'web');
      return x.status?.phase === 'Running' ? x : undefined;
    }, 90_000);
    t.match(p.status?.containerStatuses?.[0]?.imageID, /sha256:/, 'the container runs the pulled image');
    t.ok(await agent!.runtime.imageStatus('docker.io/library/busybox:latest'), 'pulled');
  });
}

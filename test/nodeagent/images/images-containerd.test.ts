/**
 * Image management on a private containerd (skipped unless root with containerd installed),
 * pulling from a tiny registry of our own on loopback:
 * - a pull whose layer download stalls is cancelled at --image-pull-progress-deadline and the
 *   container waits with ErrImagePull and the reason (the reference's error 7);
 * - a pod's imagePullSecrets (.dockerconfigjson, matched by registry host) reach the registry
 *   as credentials through CRI, and without the secret the pull is refused;
 * - image GC above the high threshold removes an unused image and keeps one in use;
 * - an image archive in <root-dir>/images/ is imported at start (air-gapped nodes).
 */
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { pino } from 'pino';
import type { KubeObject } from '../../../src/api/resources/types.js';
import { loadCoreconfig } from '../../../src/client/coreconfig.js';
import { RestClient } from '../../../src/client/rest-client.js';
import { parseNodeagentArgs } from '../../../src/flags/nodeagent.js';
import { ImageGc } from '../../../src/daemons/nodeagent/images/image-gc.js';
import { startNodeAgent, type NodeAgent } from '../../../src/daemons/nodeagent/main.js';
import type { Pod } from '../../../src/daemons/nodeagent/pod-types.js';
import { startApiserver } from '../../helpers/apiserver.js';
import { containerdSkipReason, startContainerd } from '../../helpers/containerd.js';
import { PAUSE_IMAGE } from '../../helpers/oci-image.js';
import { startTinyRegistry } from '../../helpers/tiny-registry.js';
import { waitFor } from '../../helpers/wait-for.js';

const skip = containerdSkipReason();
if (skip) t.plan(0, `containerd: ${skip}`);
else await main();

async function main(): Promise<void> {
  const containerd = await startContainerd();
  const api = await startApiserver();
  const reg = await startTinyRegistry({ user: 'puller', password: 's3cret' });
  const dir = await mkdtemp(join(tmpdir(), 'corectl-images-'));
  const client = new RestClient({ connection: await loadCoreconfig({ path: api.coreconfigPath }), contentType: 'application/json' });
  let agent: NodeAgent | undefined;
  t.teardown(async () => {
    await agent?.stop({ stopPods: true }).catch(() => undefined);
    client.close();
    await reg.stop();
    await api.stop();
    await containerd.stop();
    await rm(dir, { recursive: true, force: true });
  });
  // An archive made by containerd itself (ctr export), its image then removed from the store.
  await mkdir(join(dir, 'root', 'images'), { recursive: true });
  const ctr = (...args: string[]): void => {
    const r = spawnSync('ctr', ['-a', containerd.socketPath, '-n', 'k8s.io', ...args], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`ctr ${args.join(' ')}: ${r.stderr}`);
  };
  ctr('images', 'tag', 'localhost/busybox:latest', 'localhost/archived:1');
  ctr('images', 'export', join(dir, 'root', 'images', 'archived.tar'), 'localhost/archived:1');
  ctr('images', 'rm', 'localhost/archived:1');
  const { config } = parseNodeagentArgs([
    '--container-runtime=remote', `--container-runtime-endpoint=${containerd.endpoint}`, `--coreconfig=${api.coreconfigPath}`,
    '--hostname-override=img-node', `--root-dir=${join(dir, 'root')}`, `--cert-dir=${join(dir, 'pki')}`, '--port=0', '--read-only-port=0',
    '--healthz-port=0', '--fail-swap-on=false', '--address=127.0.0.1', '--node-status-update-frequency=1s', '--resolv-conf=', '--event-qps=0',
    '--image-pull-progress-deadline=3s', `--pod-infra-container-image=${PAUSE_IMAGE}`,
  ]);
  agent = await startNodeAgent(config, { podLogDir: join(dir, 'logs'), relistPeriodMs: 200, skipProcessTweaks: true, backoff: { initialMs: 1000, maxMs: 2000, resetMs: 600_000 } });
  const a = agent;
  const PODS = { group: '', version: 'v1', resource: 'pods', namespace: 'default' };
  const pod = (name: string, image: string, extra: Record<string, unknown> = {}): KubeObject => ({
    apiVersion: 'v1', kind: 'Pod', metadata: { name },
    spec: { nodeName: 'img-node', terminationGracePeriodSeconds: 1, containers: [{ name: 'c', image, imagePullPolicy: 'IfNotPresent', command: ['sleep', '3600'] }], ...extra },
  });
  const waiting = async (name: string): Promise<{ reason?: string; message?: string } | undefined> =>
    (await client.get<Pod>(PODS, name)).status?.containerStatuses?.[0]?.state?.waiting;

  t.test('an image archive in <root-dir>/images/ is imported at start', async (t) => {
    t.ok(await a.runtime.imageStatus('localhost/archived:1'), 'localhost/archived:1 is in the runtime');
  });

  t.test('a stalled pull is cancelled at the progress deadline', async (t) => {
    reg.addStalledImage('stall', '1');
    const t0 = Date.now();
    await client.create(PODS, pod('stalled', `${reg.host}/stall:1`));
    const w = await waitFor('ErrImagePull', async () => {
      const x = await waiting('stalled');
      return x?.reason === 'ErrImagePull' && /no progress/.test(x.message ?? '') ? x : undefined;
    }, 60_000);
    t.comment(`measured: pull cancelled and reported ${Date.now() - t0}ms after the pod was created (deadline 3s)`);
    t.match(w.message, new RegExp(`^failed to pull image "${reg.host}/stall:1": Cancel pulling image "${reg.host}/stall:1" because of no progress for 3s, latest progress: ".+"$`));
    t.ok(a.images.pulls.cancelled >= 1);
    await client.delete(PODS, 'stalled');
  });

  t.test('pull secrets reach the registry as CRI auth; without them the pull is refused', async (t) => {
    reg.addImage('private/app', '1');
    await client.create(PODS, pod('no-secret', `${reg.host}/private/app:1`));
    const refused = await waitFor('ErrImagePull without credentials', async () => {
      const x = await waiting('no-secret');
      return x?.reason === 'ErrImagePull' || x?.reason === 'ImagePullBackOff' ? x : undefined;
    }, 60_000);
    t.ok(refused, 'refused without a secret');
    const dockerconfig = JSON.stringify({ auths: { [`http://${reg.host}`]: { auth: Buffer.from('puller:s3cret').toString('base64') }, 'other.example:5000': { username: 'x', password: 'y' } } });
    await client.create({ group: '', version: 'v1', resource: 'secrets', namespace: 'default' }, {
      apiVersion: 'v1', kind: 'Secret', metadata: { name: 'regcred' }, type: 'kubernetes.io/dockerconfigjson',
      data: { '.dockerconfigjson': Buffer.from(dockerconfig).toString('base64') },
    });
    await client.create(PODS, pod('with-secret', `${reg.host}/private/app:1`, { imagePullSecrets: [{ name: 'regcred' }] }));
    await waitFor('with-secret runs', async () => (await client.get<Pod>(PODS, 'with-secret')).status?.phase === 'Running', 60_000);
    t.ok(reg.authHeaders.includes(`Basic ${Buffer.from('puller:s3cret').toString('base64')}`), 'the registry saw the secret\'s credentials');
    t.notOk(reg.authHeaders.some((h) => h.includes(Buffer.from('x:y').toString('base64'))), 'the other registry\'s credentials were not sent');
    await client.delete(PODS, 'no-secret');
  });

  t.test('image GC above the high threshold removes an unused image and keeps the one in use', async (t) => {
    reg.addImage('unused', '1');
    await a.runtime.pullImage(`${reg.host}/unused:1`);
    t.ok(await a.runtime.imageStatus(`${reg.host}/unused:1`));
    const gc = new ImageGc({
      runtime: a.runtime, imageFs: async () => ({ capacity: 100 * 2 ** 30, available: 10 * 2 ** 30 }), // 90 % used
      highThresholdPercent: 85, lowThresholdPercent: 80, minAgeMs: 0, keep: [PAUSE_IMAGE], log: pino({ level: 'silent' }),
    });
    await gc.garbageCollect();
    t.equal(await a.runtime.imageStatus(`${reg.host}/unused:1`), null, 'the unused image is gone');
    t.ok(await a.runtime.imageStatus(`${reg.host}/private/app:1`), 'the image of the running pod is kept');
    t.ok(await a.runtime.imageStatus(PAUSE_IMAGE), 'the sandbox image is kept');
    t.ok(gc.removed.some((n) => n.includes('/unused:1')));
  });
}

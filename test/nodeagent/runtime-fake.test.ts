// Behaviour only the fake runtime has (scripting, IP range, scale) and the runtime factory.
import t from 'tap';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ContainerStatus, PodSandboxConfig, RuntimeBackend } from '../../src/daemons/nodeagent/runtime/runtime.js';
import { FakeRuntime } from '../../src/daemons/nodeagent/runtime/fake/fake-runtime.js';
import { normalizeImageName } from '../../src/daemons/nodeagent/runtime/fake/fake-images.js';
import { CriRuntime } from '../../src/daemons/nodeagent/runtime/cri/cri-runtime.js';
import { createRuntimeBackend, RuntimeConfigError } from '../../src/daemons/nodeagent/runtime/runtime-factory.js';
import { RuntimeError } from '../../src/daemons/nodeagent/runtime/runtime-errors.js';

const pod = (name: string, extra: Partial<PodSandboxConfig> = {}): PodSandboxConfig => ({
  metadata: { name, uid: `uid-${name}`, namespace: 'ns' }, hostname: name, ...extra,
});

async function waitExited(rt: RuntimeBackend, id: string): Promise<ContainerStatus> {
  const deadline = Date.now() + 10_000;
  for (let delay = 5; ; delay = Math.min(delay * 2, 100)) {
    const s = await rt.containerStatus(id);
    if (s.state === 'exited') return s;
    if (Date.now() > deadline) throw new Error(`still ${s.state}`);
    await sleep(delay);
  }
}

t.test('image names, pulls and scripted exits', async (t) => {
  const rt = new FakeRuntime({ defaultRunMs: 10 });
  t.teardown(() => rt.close());
  t.equal(normalizeImageName('nginx'), 'docker.io/library/nginx:latest');
  t.equal(normalizeImageName('fake/exit:3'), 'docker.io/fake/exit:3');
  t.equal(normalizeImageName('localhost/busybox'), 'localhost/busybox:latest');
  t.equal(normalizeImageName('registry.k8s.io/pause:3.9'), 'registry.k8s.io/pause:3.9');
  t.equal(await rt.imageStatus('nginx'), null);
  const ref = await rt.pullImage('nginx');
  t.equal((await rt.imageStatus('docker.io/library/nginx:latest'))?.id, ref, 'pulled under its normalized name');
  t.equal((await rt.imageStatus(ref))?.id, ref, 'found by id');
  await rt.removeImage('nginx');
  t.equal(await rt.imageStatus('nginx'), null);

  const sc = pod('scripted');
  const sid = await rt.runPodSandbox(sc);
  await t.rejects(rt.createContainer(sid, { metadata: { name: 'x' }, image: 'fake/exit:3' }, sc), RuntimeError, 'image must be present first');
  await rt.pullImage('fake/exit:3');
  const c3 = await rt.createContainer(sid, { metadata: { name: 'x' }, image: 'fake/exit:3' }, sc);
  await t.rejects(rt.createContainer(sid, { metadata: { name: 'x' }, image: 'fake/exit:3' }, sc), RuntimeError, 'duplicate name+attempt');
  await rt.pullImage('nginx:1');
  const oom = await rt.createContainer(sid, { metadata: { name: 'oom' }, image: 'nginx:1', annotations: { 'fake.corectl.io/oom': 'true' } }, sc);
  const echo = await rt.createContainer(sid, { metadata: { name: 'echo' }, image: 'localhost/busybox:latest', command: ['echo', 'hi'] }, sc);
  for (const id of [c3, oom, echo]) await rt.startContainer(id);
  const s3 = await waitExited(rt, c3);
  t.same([s3.exitCode, s3.reason], [3, 'Error']);
  const so = await waitExited(rt, oom);
  t.same([so.exitCode, so.reason], [137, 'OOMKilled']);
  const se = await waitExited(rt, echo);
  t.same([se.exitCode, se.reason], [0, 'Completed']);
});

t.test('stop honours or ignores SIGTERM; exec scripting', async (t) => {
  const rt = new FakeRuntime();
  t.teardown(() => rt.close());
  const sc = pod('stopper');
  const sid = await rt.runPodSandbox(sc);
  const stubborn = await rt.createContainer(sid, {
    metadata: { name: 'stubborn' }, image: 'localhost/busybox:latest',
    annotations: { 'fake.corectl.io/ignore-sigterm': 'true', 'fake.corectl.io/exec-exit-code': '1' },
  }, sc);
  const plain = await rt.createContainer(sid, { metadata: { name: 'plain' }, image: 'localhost/busybox:latest', envs: [{ key: 'A', value: 'b' }] }, sc);
  await rt.startContainer(stubborn);
  await rt.startContainer(plain);
  t.equal((await rt.execSync(stubborn, ['true'], 1)).exitCode, 1, 'exec-exit-code annotation fails every exec');
  t.equal((await rt.execSync(plain, ['env'], 1)).stdout.toString(), 'A=b\n');
  t.equal((await rt.execSync(plain, ['hostname'], 1)).stdout.toString(), 'stopper\n');
  t.equal((await rt.execSync(plain, ['no-such-binary'], 1)).exitCode, 127);
  await rt.stopContainer(plain, 30);
  t.equal((await rt.containerStatus(plain)).exitCode, 143, 'SIGTERM honoured at once');
  await rt.stopContainer(stubborn, 0);
  t.equal((await rt.containerStatus(stubborn)).exitCode, 137, 'killed after the grace period');
  await t.rejects(rt.execSync(plain, ['true'], 1), RuntimeError, 'no exec in an exited container');
});

t.test('IPs: unique, from the range, reused after removal; host network', async (t) => {
  const rt = new FakeRuntime({ podCidr: '10.99.0.0/29', nodeIp: '192.0.2.10' });
  t.teardown(() => rt.close());
  const ids: string[] = [];
  const ips = new Set<string>();
  for (let i = 0; i < 5; i++) {
    const id = await rt.runPodSandbox(pod(`p${i}`));
    ids.push(id);
    ips.add((await rt.podSandboxStatus(id)).ip);
  }
  t.same([...ips].sort(), ['10.99.0.2', '10.99.0.3', '10.99.0.4', '10.99.0.5', '10.99.0.6']);
  await t.rejects(rt.runPodSandbox(pod('full')), RuntimeError, 'range exhausted');
  await rt.removePodSandbox(ids[2] ?? '');
  const again = await rt.runPodSandbox(pod('again'));
  t.equal((await rt.podSandboxStatus(again)).ip, '10.99.0.4', 'freed IP handed out again');
  const host = await rt.runPodSandbox(pod('host', { linux: { securityContext: { namespaceOptions: { network: 'node' } } } }));
  t.equal((await rt.podSandboxStatus(host)).ip, '192.0.2.10');
});

t.test('thousands of pods', async (t) => {
  const rt = new FakeRuntime();
  t.teardown(() => rt.close());
  const N = 3000;
  await Promise.all(Array.from({ length: N }, async (_, i) => {
    const sc = pod(`bulk-${i}`, { labels: { bulk: 'yes' } });
    const sid = await rt.runPodSandbox(sc);
    const cid = await rt.createContainer(sid, { metadata: { name: 'c' }, image: 'localhost/busybox:latest' }, sc);
    await rt.startContainer(cid);
  }));
  t.equal((await rt.listPodSandbox({ labelSelector: { bulk: 'yes' }, state: 'ready' })).length, N);
  t.equal((await rt.listContainers({ state: 'running' })).length, N);
  const pods = await rt.listPodSandbox();
  await Promise.all(pods.map(async (p) => { await rt.stopPodSandbox(p.id); await rt.removePodSandbox(p.id); }));
  t.equal((await rt.listContainers()).length, 0);
});

t.test('closed runtime refuses calls; aborted signal cancels', async (t) => {
  const rt = new FakeRuntime();
  const ac = new AbortController();
  ac.abort();
  await t.rejects(rt.version({ signal: ac.signal }), { code: 'CANCELLED' });
  await rt.close();
  await t.rejects(rt.version(), { code: 'UNAVAILABLE' });
});

t.test('runtime factory', async (t) => {
  const fake = await createRuntimeBackend({ containerRuntime: 'fake', containerRuntimeEndpoint: '' });
  t.ok(fake instanceof FakeRuntime);
  await fake.close();
  const cri = await createRuntimeBackend({ containerRuntime: 'runtimeA', containerRuntimeEndpoint: 'unix:///nonexistent/corectl-test.sock', runtimeRequestTimeoutMs: 300 });
  t.ok(cri instanceof CriRuntime);
  await t.rejects(cri.version(), RuntimeError, 'an unreachable endpoint fails with a RuntimeError');
  await cri.close();
  const remote = await createRuntimeBackend({ containerRuntime: 'remote', containerRuntimeEndpoint: '/nonexistent/x.sock' });
  t.ok(remote instanceof CriRuntime);
  await remote.close();
  await t.rejects(createRuntimeBackend({ containerRuntime: 'runtimeB', containerRuntimeEndpoint: '' }), RuntimeConfigError);
  await t.rejects(createRuntimeBackend({ containerRuntime: 'runtimeB', containerRuntimeEndpoint: '' }), /runtimeB is not supported/);
  await t.rejects(createRuntimeBackend({ containerRuntime: 'docker', containerRuntimeEndpoint: '' }), /--container-runtime/);
  await t.rejects(createRuntimeBackend({ containerRuntime: 'runtimeA', containerRuntimeEndpoint: 'http://x' }), /--container-runtime-endpoint/);
});

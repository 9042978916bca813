// The same behavioural checks against every runtime backend: the fake (always) and CRI on a
// private containerd (when it can run here). Containers are configured so that both backends
// do the same thing: busybox `sh -c` for containerd, the fake's env/annotation script for the fake.
import t, { type Test } from 'tap';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ContainerConfig, ContainerStatus, PodSandboxConfig, RuntimeBackend } from '../../src/daemons/nodeagent/runtime/runtime.js';
import { RuntimeError, isRuntimeError } from '../../src/daemons/nodeagent/runtime/runtime-errors.js';
import { FakeRuntime } from '../../src/daemons/nodeagent/runtime/fake/fake-runtime.js';
import { CriRuntime } from '../../src/daemons/nodeagent/runtime/cri/cri-runtime.js';
import { readCriLog } from '../../src/daemons/nodeagent/runtime/logs/cri-log-reader.js';
import { containerdSkipReason, startContainerd } from '../helpers/containerd.js';
import { BUSYBOX_IMAGE } from '../helpers/oci-image.js';

const LONG = 'x'.repeat(20_000);

async function waitFor(rt: RuntimeBackend, id: string, pred: (s: ContainerStatus) => boolean, ms = 20_000): Promise<ContainerStatus> {
  const deadline = Date.now() + ms;
  let delay = 20;
  for (;;) {
    const s = await rt.containerStatus(id);
    if (pred(s)) return s;
    if (Date.now() > deadline) throw new Error(`container ${id} still ${s.state} after ${ms} ms`);
    await sleep(delay);
    delay = Math.min(delay * 2, 250);
  }
}

/** Passes when `p` rejects with an error satisfying `pred`. */
async function rejectsWith(t: Test, p: Promise<unknown>, pred: (e: unknown) => boolean, msg: string): Promise<void> {
  try {
    await p;
    t.fail(`${msg}: resolved`);
  } catch (e) {
    t.ok(pred(e), `${msg}${pred(e) ? '' : `: got ${String(e)}`}`);
  }
}

async function collect(path: string, opts: Parameters<typeof readCriLog>[1] = {}): Promise<string> {
  const parts: Buffer[] = [];
  for await (const chunk of readCriLog(path, opts)) parts.push(chunk);
  return Buffer.concat(parts).toString('utf8');
}

function sandboxConfig(logRoot: string, name: string): PodSandboxConfig {
  const uid = `uid-${name}`;
  return {
    metadata: { name, uid, namespace: 'default', attempt: 0 },
    hostname: `${name}-host`,
    logDirectory: join(logRoot, `default_${name}_${uid}`),
    labels: { app: 'runtime-test', pod: name },
  };
}

async function suite(t: Test, rt: RuntimeBackend, logRoot: string): Promise<void> {
  await t.test('version and status', async (t) => {
    const v = await rt.version();
    t.equal(v.runtimeApiVersion, 'v1');
    t.ok(v.runtimeName.length > 0);
    const s = await rt.status();
    t.equal(s.runtimeReady, true);
    t.equal(s.networkReady, true);
  });

  await t.test('images: present, absent, failed pull', async (t) => {
    const present = await rt.imageStatus(BUSYBOX_IMAGE);
    t.ok(present, 'busybox image present');
    t.match(present?.id ?? '', /^sha256:[0-9a-f]{64}$/);
    t.ok(present?.repoTags.includes(BUSYBOX_IMAGE));
    t.equal(await rt.imageStatus('localhost/corectl-absent:1'), null, 'absent image is null, not an error');
    const missing = 'localhost/corectl-does-not-exist:1';
    await rejectsWith(t, rt.pullImage(missing), (e) => e instanceof RuntimeError && e.message.includes(missing), 'pulling a missing image fails');
    t.ok((await rt.listImages()).some((i) => i.repoTags.includes(BUSYBOX_IMAGE)));
    t.ok((await rt.imageFsInfo()).length >= 1);
  });

  await t.test('pod with a logging container, exec, stop, remove', async (t) => {
    const sc = sandboxConfig(logRoot, 'logger');
    const sid = await rt.runPodSandbox(sc);
    const ps = await rt.podSandboxStatus(sid);
    t.equal(ps.state, 'ready');
    t.match(ps.ip, /^\d+\.\d+\.\d+\.\d+$/, 'sandbox has an IPv4 address');
    t.equal(ps.metadata.name, 'logger');
    t.ok((await rt.listPodSandbox({ labelSelector: { pod: 'logger' } })).some((p) => p.id === sid));

    const cc: ContainerConfig = {
      metadata: { name: 'main', attempt: 0 },
      image: BUSYBOX_IMAGE,
      command: ['sh', '-c', `echo hello; echo one; echo oops >&2; head -c ${LONG.length} /dev/zero | tr '\\0' x; echo; echo two; sleep 3600`],
      envs: [{ key: 'FAKE_STDOUT', value: `hello\none\n${LONG}\ntwo` }, { key: 'FAKE_STDERR', value: 'oops' }],
      logPath: 'main/0.log',
      labels: { c: 'main' },
    };
    const cid = await rt.createContainer(sid, cc, sc);
    t.equal((await rt.containerStatus(cid)).state, 'created');
    await rt.startContainer(cid);
    const running = await waitFor(rt, cid, (s) => s.state === 'running');
    t.ok(running.startedAt >= running.createdAt && running.createdAt > 0);
    t.equal(running.logPath, join(sc.logDirectory ?? '', 'main/0.log'));
    t.ok((await rt.listContainers({ podSandboxId: sid, state: 'running' })).some((c) => c.id === cid));

    // Poll the log until the last line is there, then check joining and stripping.
    const deadline = Date.now() + 15_000;
    let all = '';
    while (!all.includes('two\n')) {
      if (Date.now() > deadline) break;
      await sleep(50);
      all = await collect(running.logPath).catch(() => '');
    }
    t.equal(await collect(running.logPath, { stream: 'stdout' }), `hello\none\n${LONG}\ntwo\n`, 'stdout joined, prefixes stripped');
    t.equal(await collect(running.logPath, { stream: 'stderr' }), 'oops\n');
    t.equal(await collect(running.logPath, { tail: 1, stream: 'stdout' }), 'two\n');
    const raw = await readFile(running.logPath, 'utf8');
    t.match(raw, / stdout P x{16384}\n/, 'the long line was written as P records');
    const stamped = await collect(running.logPath, { timestamps: true, stream: 'stderr' });
    t.match(stamped, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z oops\n$/);

    const ex = await rt.execSync(cid, ['cat', '/etc/hostname'], 10);
    t.equal(ex.exitCode, 0);
    t.equal(ex.stdout.toString().trim(), 'logger-host');
    const bad = await rt.execSync(cid, ['sh', '-c', 'exit 7'], 10);
    t.equal(bad.exitCode, 7);
    t.match(await rt.exec({ containerId: cid, cmd: ['sh'], stdin: true }), /^http:\/\/127\.0\.0\.1:\d+\/exec\//);

    await rt.stopContainer(cid, 1);
    const stopped = await rt.containerStatus(cid);
    t.equal(stopped.state, 'exited');
    t.equal(stopped.reason, 'Error');
    t.ok([137, 143].includes(stopped.exitCode), `stopped with a signal exit code (${stopped.exitCode})`);
    t.ok(stopped.finishedAt >= stopped.startedAt);
    await rt.removeContainer(cid);
    await rejectsWith(t, rt.containerStatus(cid), (e) => isRuntimeError(e, 'NOT_FOUND'), 'NOT_FOUND');

    await rt.stopPodSandbox(sid);
    t.equal((await rt.podSandboxStatus(sid)).state, 'notready');
    await rt.removePodSandbox(sid);
    await rejectsWith(t, rt.podSandboxStatus(sid), (e) => isRuntimeError(e, 'NOT_FOUND'), 'NOT_FOUND');
  });

  await t.test('exit codes and reasons', async (t) => {
    const sc = sandboxConfig(logRoot, 'exits');
    const sid = await rt.runPodSandbox(sc);
    const mk = (name: string, code: number): ContainerConfig => ({
      metadata: { name }, image: BUSYBOX_IMAGE, command: ['sh', '-c', `exit ${code}`],
      annotations: { 'fake.corectl.io/exit-code': String(code), 'fake.corectl.io/run-ms': '20' }, logPath: `${name}/0.log`,
    });
    const ok = await rt.createContainer(sid, mk('ok', 0), sc);
    const bad = await rt.createContainer(sid, mk('bad', 3), sc);
    await rt.startContainer(ok);
    await rt.startContainer(bad);
    const a = await waitFor(rt, ok, (s) => s.state === 'exited');
    const b = await waitFor(rt, bad, (s) => s.state === 'exited');
    t.same([a.exitCode, a.reason], [0, 'Completed']);
    t.same([b.exitCode, b.reason], [3, 'Error']);
    await t.rejects(rt.startContainer(ok), RuntimeError, 'an exited container cannot start again');
    await rt.stopPodSandbox(sid);
    await rt.removePodSandbox(sid);
    t.equal((await rt.listContainers({ podSandboxId: sid })).length, 0, 'removing the sandbox removed its containers');
  });

  await t.test('unknown ids are NOT_FOUND', async (t) => {
    await rejectsWith(t, rt.containerStatus('0'.repeat(64)), (e) => isRuntimeError(e, 'NOT_FOUND'), 'container NOT_FOUND');
    await rejectsWith(t, rt.podSandboxStatus('0'.repeat(64)), (e) => isRuntimeError(e, 'NOT_FOUND'), 'sandbox NOT_FOUND');
  });
}

t.test('fake runtime', async (t) => {
  const logRoot = await mkdtemp(join(tmpdir(), 'corectl-fake-logs-'));
  const rt = new FakeRuntime();
  t.teardown(async () => { await rt.close(); await rm(logRoot, { recursive: true, force: true }); });
  await suite(t, rt, logRoot);
});

t.test('CRI runtime on containerd', { skip: containerdSkipReason() }, async (t) => {
  const ctrd = await startContainerd();
  const rt = new CriRuntime({ endpoint: ctrd.endpoint, requestTimeoutMs: 30_000 });
  t.teardown(async () => { await rt.close(); await ctrd.stop(); });
  await suite(t, rt, join(ctrd.dir, 'pod-logs'));
});

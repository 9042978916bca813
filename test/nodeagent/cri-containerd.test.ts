// CRI-only behaviour on a private containerd: the proto3 namespace trap is closed (a container
// gets its own PID namespace unless asked to share), log rotation with ReopenContainerLog while
// a follower reads, streaming URLs, ListImages filter. Skips where containerd cannot run.
import t from 'tap';
import { rename } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { PodSandboxConfig } from '../../src/daemons/nodeagent/runtime/runtime.js';
import { CriRuntime } from '../../src/daemons/nodeagent/runtime/cri/cri-runtime.js';
import { readCriLog } from '../../src/daemons/nodeagent/runtime/logs/cri-log-reader.js';
import { containerdSkipReason, startContainerd } from '../helpers/containerd.js';
import { BUSYBOX_IMAGE, PAUSE_IMAGE } from '../helpers/oci-image.js';

t.test('CRI on containerd', { skip: containerdSkipReason() }, async (t) => {
  const ctrd = await startContainerd();
  const rt = new CriRuntime({ endpoint: ctrd.endpoint, requestTimeoutMs: 30_000 });
  t.teardown(async () => { await rt.close(); await ctrd.stop(); });

  const sc: PodSandboxConfig = {
    metadata: { name: 'ns-pod', uid: 'uid-ns', namespace: 'default' }, hostname: 'ns-pod',
    logDirectory: join(ctrd.dir, 'pod-logs', 'default_ns-pod_uid-ns'),
  };
  const sid = await rt.runPodSandbox(sc);
  t.teardown(async () => { await rt.stopPodSandbox(sid).catch(() => undefined); await rt.removePodSandbox(sid).catch(() => undefined); });

  const own = await rt.createContainer(sid, { metadata: { name: 'own' }, image: BUSYBOX_IMAGE, command: ['sleep', '3600'] }, sc);
  const shared = await rt.createContainer(sid, {
    metadata: { name: 'shared' }, image: BUSYBOX_IMAGE, command: ['sleep', '3601'],
    linux: { securityContext: { namespaceOptions: { pid: 'pod' } } },
  }, sc);
  const ticker = await rt.createContainer(sid, {
    metadata: { name: 'ticker' }, image: BUSYBOX_IMAGE, logPath: 'ticker/0.log',
    command: ['sh', '-c', 'i=0; while true; do i=$((i+1)); echo tick $i; sleep 0.05; done'],
  }, sc);
  for (const id of [own, shared, ticker]) await rt.startContainer(id);

  await t.test('PID namespaces', async (t) => {
    const pid1 = async (id: string): Promise<string> => {
      const r = await rt.execSync(id, ['cat', '/proc/1/cmdline'], 10);
      return r.stdout.toString().split('\0').filter(Boolean).join(' ');
    };
    t.equal(await pid1(own), 'sleep 3600', 'unset pid mode: the container is PID 1 of its own namespace');
    t.equal(await pid1(shared), 'sleep 2147483647', 'pid: pod shares the sandbox (pause) namespace');
  });

  await t.test('follow across ReopenContainerLog rotation', async (t) => {
    const status = await rt.containerStatus(ticker);
    const seen: string[] = [];
    const ac = new AbortController();
    const reader = (async () => {
      for await (const chunk of readCriLog(status.logPath, { follow: true, pollIntervalMs: 20, signal: ac.signal })) {
        seen.push(...chunk.toString().split('\n').filter(Boolean));
      }
    })();
    const waitTicks = async (n: number): Promise<void> => {
      const deadline = Date.now() + 15_000;
      while (seen.length < n) {
        if (Date.now() > deadline) throw new Error(`only ${seen.length} lines`);
        await sleep(20);
      }
    };
    await waitTicks(5);
    await rename(status.logPath, `${status.logPath}.1`);
    await rt.reopenContainerLog(ticker);
    const before = seen.length;
    await waitTicks(before + 10);
    ac.abort();
    await reader;
    const numbers = seen.map((l) => Number(/^tick (\d+)$/.exec(l)?.[1] ?? NaN));
    t.ok(numbers.every((n) => Number.isInteger(n)), 'every line is a whole tick line');
    const gaps = numbers.slice(1).filter((n, i) => n !== (numbers[i] ?? 0) + 1);
    t.same(gaps, [], 'no line lost or repeated across the rotation');
  });

  await t.test('deadlines and cancellation map to error codes', async (t) => {
    const started = Date.now();
    await t.rejects(rt.execSync(own, ['sleep', '5'], 0, { timeoutMs: 200 }), { code: 'DEADLINE_EXCEEDED' });
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 200).unref();
    await t.rejects(rt.execSync(own, ['sleep', '5'], 0, { signal: ac.signal }), { code: 'CANCELLED' });
    t.ok(Date.now() - started < 5000, 'neither call waited for the command');
  });

  await t.test('streaming URLs and image listing', async (t) => {
    t.match(await rt.exec({ containerId: own, cmd: ['sh'], stdin: true, tty: true }), /^http:\/\/127\.0\.0\.1:\d+\/exec\/[\w-]+/);
    t.match(await rt.attach({ containerId: own, stdout: true }), /^http:\/\/127\.0\.0\.1:\d+\/attach\/[\w-]+/);
    t.match(await rt.portForward(sid, [80]), /^http:\/\/127\.0\.0\.1:\d+\/portforward\/[\w-]+/);
    const filtered = await rt.listImages(PAUSE_IMAGE);
    t.same(filtered.map((i) => i.repoTags).flat(), [PAUSE_IMAGE]);
    const listed = await rt.listContainers({ podSandboxId: sid });
    t.same(listed.map((c) => c.metadata.name).sort(), ['own', 'shared', 'ticker']);
  });
});

/**
 * Node agent start-up rules and standalone mode (fake runtime, no API server): swap refusal,
 * lock-file contention, --runonce, the --manifest-url source, adoption of running pods after
 * an agent restart, node capacity/allocatable arithmetic.
 */
import { createServer } from 'node:http';
import { mkdtemp, rm, writeFile, mkdir } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import t from 'tap';
import { parseNodeagentArgs } from '../../src/flags/nodeagent.js';
import { runOnce, startNodeAgent } from '../../src/daemons/nodeagent/main.js';
import { nodeResources } from '../../src/daemons/nodeagent/node-resources.js';
import { FakeRuntime } from '../../src/daemons/nodeagent/runtime/fake/fake-runtime.js';
import { acquireLockFile, activeSwaps, StartupError } from '../../src/daemons/nodeagent/startup-checks.js';
import { waitFor as waitForShared } from '../helpers/wait-for.js';

const dir = await mkdtemp(join(tmpdir(), 'corectl-agent-start-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));

function waitFor<T>(what: string, fn: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 10_000): Promise<T> { return waitForShared(what, fn, timeoutMs); }

function args(name: string, extra: string[] = []): string[] {
  const root = join(dir, name);
  return ['--container-runtime=fake', `--coreconfig=${join(root, 'absent-coreconfig')}`, `--hostname-override=${name}`, `--root-dir=${root}`,
    `--cert-dir=${join(root, 'pki')}`, '--port=0', '--read-only-port=0', '--healthz-port=0', '--fail-swap-on=false', '--address=127.0.0.1',
    '--resolv-conf=', '--file-check-frequency=200ms', '--http-check-frequency=200ms', ...extra];
}

const MANIFEST = 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: solo\nspec:\n  containers:\n  - name: c\n    image: localhost/busybox:latest\n    imagePullPolicy: Never\n';

t.test('--fail-swap-on refuses to start when swap is on', async (t) => {
  t.same(activeSwaps('Filename Type Size Used Priority\n/dev/sda2 partition 1000 0 -2\n'), ['/dev/sda2']);
  t.same(activeSwaps('Filename Type Size Used Priority\n'), []);
  const swaps = join(dir, 'swaps');
  await writeFile(swaps, 'Filename\t\tType\t\tSize\tUsed\tPriority\n/swapfile file 1024 0 -2\n');
  const { config } = parseNodeagentArgs(args('swap', ['--fail-swap-on=true']));
  await t.rejects(startNodeAgent(config, { swapsPath: swaps, skipProcessTweaks: true }), /swap/);
});

t.test('--lock-file: a second holder is refused', async (t) => {
  const lock = join(dir, 'agent.lock');
  const release = acquireLockFile(lock, true);
  // The same pid holding it counts as a stale file for us, so fake another live owner.
  await writeFile(lock, `${process.ppid}\n`);
  t.throws(() => acquireLockFile(lock, true), StartupError);
  await writeFile(lock, `${process.pid}\n`);
  release();
  const again = acquireLockFile(lock, true);
  again();
});

t.test('capacity and allocatable', async (t) => {
  const host = { nodeName: 'n', hostname: 'n', internalIp: '10.0.0.1', cpuCores: 4, memoryBytes: 8 * 2 ** 30, ephemeralStorageBytes: 100 * 2 ** 30, machineId: '', bootId: '', kernelVersion: '', osImage: '', architecture: 'amd64' };
  const r = nodeResources(host, { maxPods: 110, podsPerCore: 10, coreReserved: { cpu: '500m', memory: '1Gi' }, systemReserved: { cpu: '500m' }, evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '10%' }, ignoreEviction: false });
  t.equal(r.capacity.pods, '40');
  t.equal(r.capacity.cpu, '4');
  t.equal(r.allocatable.cpu, '3');
  t.equal(r.allocatable.memory, `${(8 * 2 ** 30 - 2 ** 30 - 100 * 2 ** 20) / 1024}Ki`);
  const ignoring = nodeResources(host, { maxPods: 110, podsPerCore: 0, coreReserved: {}, systemReserved: {}, evictionHard: { 'memory.available': '100Mi' }, ignoreEviction: true });
  t.equal(ignoring.allocatable.memory, ignoring.capacity.memory);
  t.equal(ignoring.capacity.pods, '110');
});

t.test('--runonce starts the local pods and reports them', async (t) => {
  const manifests = join(dir, 'once');
  await mkdir(manifests, { recursive: true });
  await writeFile(join(manifests, 'solo.yaml'), MANIFEST);
  const { config } = parseNodeagentArgs(args('once', ['--runonce', '--enable-server=false', `--pod-manifest-path=${manifests}`]));
  let out = '';
  const sink = new Writable({ write(chunk: Buffer, _e, cb) { out += chunk.toString(); cb(); } });
  const code = await runOnce(config, pino({ level: 'silent' }), new AbortController().signal, sink, { skipProcessTweaks: true, podLogDir: join(dir, 'once-logs') });
  t.equal(code, 0);
  const line = JSON.parse(out.trim()) as { name: string; phase: string };
  t.equal(line.name, 'solo-once');
  t.equal(line.phase, 'Running');
});

t.test('--manifest-url pods run; running pods are adopted after an agent restart', async (t) => {
  let body = MANIFEST;
  let seenHeader = '';
  const srv = createServer((req, res) => { seenHeader = String(req.headers['x-token'] ?? ''); res.end(body); });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => srv.close(() => r())));
  const url = `http://127.0.0.1:${(srv.address() as AddressInfo).port}/pods`;
  const runtime = new FakeRuntime();
  t.teardown(() => runtime.close());
  const { config } = parseNodeagentArgs(args('url', [`--manifest-url=${url}`, '--manifest-url-header=X-Token:abc']));
  const opts = { runtime, skipProcessTweaks: true, podLogDir: join(dir, 'url-logs'), relistPeriodMs: 100 };
  const first = await startNodeAgent(config, opts);
  const running = await waitFor('url pod running', () => first.pods.pods().find((p) => p.status?.phase === 'Running'));
  t.equal(seenHeader, 'abc');
  t.equal(running.metadata?.annotations?.['kubernetes.io/config.source'], 'http');
  const containerId = running.status?.containerStatuses?.[0]?.containerID;
  await first.stop();

  const second = await startNodeAgent(config, opts);
  t.teardown(() => second.stop({ stopPods: true }));
  const again = await waitFor('adopted pod running', () => second.pods.pods().find((p) => p.status?.phase === 'Running'));
  t.equal(again.status?.containerStatuses?.[0]?.containerID, containerId, 'the same container keeps running');
  t.equal((await runtime.listPodSandbox()).length, 1);
  body = '';
  await waitFor('url pod removed', async () => (await runtime.listContainers()).length === 0);
});

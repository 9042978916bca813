/**
 * Real `kubectl logs` (kubectl.1.33, else 1.27) through the API server to a real node agent on
 * the fake runtime: the whole log, --tail, --timestamps, -c and the default-container
 * annotation, the multi-container error, and `logs -f` (lines written later arrive; kubectl is
 * killed after reading them and the API server's request to the agent ends). Also `kubectl
 * exec` with 1.33 (WebSocket) and 1.27 (SPDY) against the fake runtime's own streaming server,
 * and port-forward's clear refusal there.
 */
import { execFile, spawn } from 'node:child_process';
import { appendFile, mkdtemp, rm } from 'node:fs/promises';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { KubeObject } from '../../src/api/resources/types.js';
import { loadCoreconfig } from '../../src/client/coreconfig.js';
import { RestClient } from '../../src/client/rest-client.js';
import { parseNodeagentArgs } from '../../src/flags/nodeagent.js';
import { startNodeAgent, type NodeAgent } from '../../src/daemons/nodeagent/main.js';
import type { Pod } from '../../src/daemons/nodeagent/pod-types.js';
import { formatCriLogRecord } from '../../src/daemons/nodeagent/runtime/logs/cri-log-reader.js';
import { createCA, issueCert, writePemFile } from '../../src/util/pki.js';
import { startApiserver, type StartedApiserver } from '../helpers/apiserver.js';
import { kubectl } from '../helpers/kubectl.js';
import { eventually } from '../helpers/rest-client.js';
import { kubectlRunner } from '../helpers/kubectl-run.js';

const bin = kubectl(33) ?? kubectl(27);
if (!bin) {
  t.comment('no kubectl.1.33 or kubectl.1.27 found: nothing to run');
} else {
  await run(bin);
}

async function run(bin: string): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-logs-e2e-'));
  const nodeCa = await createCA({ commonName: 'node-ca' });
  const apiClient = await issueCert({ ca: nodeCa, commonName: 'kube-apiserver-kubelet-client', organizations: ['system:masters'], usages: 'client' });
  const serving = await issueCert({ ca: nodeCa, commonName: 'node-e2e', dnsNames: ['node-e2e', 'localhost'], ips: ['127.0.0.1'], usages: 'server' });
  const file = (n: string): string => join(dir, n);
  await Promise.all([
    writePemFile(file('ca.crt'), nodeCa.certPem), writePemFile(file('client.crt'), apiClient.certPem), writePemFile(file('client.key'), apiClient.keyPem),
    writePemFile(file('serving.crt'), serving.certPem), writePemFile(file('serving.key'), serving.keyPem),
  ]);
  let api: StartedApiserver | undefined;
  let agent: NodeAgent | undefined;
  let client: RestClient | undefined;
  t.teardown(async () => {
    await agent?.stop({ stopPods: true }).catch(() => undefined);
    client?.close();
    await api?.stop();
    await rm(dir, { recursive: true, force: true });
  });
  api = await startApiserver({
    args: [
      `--nodeagent-client-certificate=${file('client.crt')}`, `--nodeagent-client-key=${file('client.key')}`,
      `--nodeagent-certificate-authority=${file('ca.crt')}`, '--nodeagent-preferred-address-types=InternalIP',
      // The node agent here listens on loopback only.
      '--nodeagent-allow-loopback=true',
    ],
  });
  client = new RestClient({ connection: await loadCoreconfig({ path: api.coreconfigPath }), contentType: 'application/json' });
  const root = file('node');
  const { config } = parseNodeagentArgs([
    '--container-runtime=fake', `--coreconfig=${api.coreconfigPath}`, '--hostname-override=node-e2e', `--root-dir=${root}`,
    `--cert-dir=${join(root, 'pki')}`, '--port=0', '--read-only-port=0', '--healthz-port=0', '--fail-swap-on=false',
    '--address=127.0.0.1', '--node-ip=127.0.0.1', '--resolv-conf=', '--event-qps=0', '--core-api-qps=50', '--core-api-burst=100',
    `--client-ca-file=${file('ca.crt')}`, `--tls-cert-file=${file('serving.crt')}`, `--tls-private-key-file=${file('serving.key')}`,
    '--anonymous-auth=false', '--streaming-connection-idle-timeout=2s',
  ]);
  agent = await startNodeAgent(config, { podLogDir: join(root, 'logs'), relistPeriodMs: 100, leaseRenewIntervalMs: 300, skipProcessTweaks: true });
  const agentPort = agent.listeners?.securePort ?? 0;
  const PODS = { group: '', version: 'v1', resource: 'pods', namespace: 'default' };
  const kubeArgs = [`--kubeconfig=${api.coreconfigPath}`, `--cache-dir=${file('cache')}`];
  const kc = kubectlRunner(bin, api.coreconfigPath, file('cache')).run;
  const container = (name: string, stdout: string): Record<string, unknown> => ({
    name, image: 'localhost/busybox:latest', imagePullPolicy: 'IfNotPresent', env: [{ name: 'FAKE_STDOUT', value: stdout }],
  });
  const pod = (name: string, containers: Array<Record<string, unknown>>, annotations?: Record<string, string>): KubeObject => ({
    apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'default', ...(annotations ? { annotations } : {}) },
    spec: { nodeName: 'node-e2e', terminationGracePeriodSeconds: 1, containers },
  });
  const running = (name: string): Promise<Pod> => eventually(async () => {
    const p = await client!.get<Pod>(PODS, name);
    return p.status?.phase === 'Running' && p.status.containerStatuses?.every((c) => c.ready) ? p : undefined;
  }, 20_000);

  await client.create(PODS, pod('web', [container('main', 'alpha\nbeta\ngamma\n')]));
  await client.create(PODS, pod('duo', [container('x', 'from x\n'), container('y', 'from y\n')], { 'kubectl.kubernetes.io/default-container': 'y' }));
  await client.create(PODS, pod('pair', [container('l', 'from l\n'), container('r', 'from r\n')]));
  const web = await running('web');
  await running('duo');
  await running('pair');
  await eventually(async () => (await kc(['logs', 'web'])).stdout === 'alpha\nbeta\ngamma\n', 15_000);

  t.test('kubectl logs prints the log; --tail and --timestamps', async (t) => {
    const all = await kc(['logs', 'web']);
    t.equal(all.code, 0, all.stderr);
    t.equal(all.stdout, 'alpha\nbeta\ngamma\n');
    const tail = await kc(['logs', '--tail=1', 'web']);
    t.equal(tail.stdout, 'gamma\n');
    const ts = await kc(['logs', '--timestamps', '--tail=2', 'web']);
    t.match(ts.stdout, /^\S+Z beta\n\S+Z gamma\n$/);
    const limited = await kc(['logs', '--limit-bytes=3', 'web']);
    t.equal(limited.stdout, 'alp');
  });

  t.test('container choice: -c, the default-container annotation, and the refusal', async (t) => {
    t.equal((await eventually(async () => { const r = await kc(['logs', 'duo']); return r.stdout === 'from y\n' ? r : undefined; })).stdout, 'from y\n');
    t.equal((await eventually(async () => { const r = await kc(['logs', 'duo', '-c', 'x']); return r.stdout === 'from x\n' ? r : undefined; })).stdout, 'from x\n');
    // kubectl chooses the first container itself (and says so on stderr) when none is named.
    const first = await eventually(async () => { const r = await kc(['logs', 'pair']); return r.stdout === 'from l\n' ? r : undefined; });
    t.equal(first.code, 0);
    const unknown = await kc(['logs', 'pair', '-c', 'nope']);
    t.not(unknown.code, 0);
    t.match(unknown.stderr, /container nope is not valid for pod pair/);
    const missing = await kc(['logs', 'ghost']);
    t.not(missing.code, 0);
    t.match(missing.stderr, /pods "ghost" not found/);
  });

  t.test('kubectl exec on simulated containers, WebSocket and SPDY', async (t) => {
    for (const v of [33, 27]) {
      const b = kubectl(v);
      if (!b) continue;
      const kv = (args: string[], input?: string): Promise<{ code: number; stdout: string; stderr: string }> => new Promise((resolve) => {
        const child = execFile(b, [...kubeArgs, ...args], { timeout: 30_000 }, (err, stdout, stderr) => {
          resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout: String(stdout), stderr: String(stderr) });
        });
        if (input !== undefined) child.stdin?.end(input);
      });
      const host = await kv(['exec', 'web', '--', 'cat', '/etc/hostname']);
      t.equal(host.code, 0, host.stderr);
      t.equal(host.stdout, 'web\n', `1.${v}: exec prints the pod's hostname`);
      const failing = await kv(['exec', 'web', '--', 'sh', '-c', 'exit 4']);
      t.equal(failing.code, 4, `1.${v}: the exit code comes back`);
      const missing = await kv(['exec', 'web', '--', 'nosuch']);
      t.equal(missing.code, 127);
      t.match(missing.stderr, /sh: nosuch: not found/, `1.${v}: stderr comes back`);
      const cat = await kv(['exec', '-i', 'web', '--', 'cat'], 'round trip\n');
      t.equal(cat.stdout, 'round trip\n', `1.${v}: stdin and its EOF`);
      const pf = await kv(['port-forward', 'pod/web', '18080:80'].concat(['--address=127.0.0.1']));
      t.not(pf.code, 0, `1.${v}: port-forward cannot work without a network`);
    }
  });

  t.test('an idle stream is closed after --streaming-connection-idle-timeout', async (t) => {
    // An attach to a simulated container carries no bytes at all: the node closes it.
    const child = spawn(bin, [...kubeArgs, 'attach', 'web'], { stdio: ['ignore', 'pipe', 'pipe'] });
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    await exited;
    clearTimeout(timer);
    t.equal(child.signalCode, null, 'kubectl attach ended on its own');
  });

  const followSockets = (): Socket[] => (process as unknown as { _getActiveHandles(): unknown[] })._getActiveHandles().filter((h): h is Socket => {
    const s = h as Socket & { _httpMessage?: { path?: string } };
    return s.remotePort === agentPort && !s.destroyed && String(s._httpMessage?.path ?? '').includes('follow=true');
  });

  t.test('kubectl logs -f streams new lines until kubectl goes away', async (t) => {
    const child = spawn(bin, [...kubeArgs, 'logs', '-f', 'web'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => { out += d.toString(); });
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    try {
      await eventually(async () => out === 'alpha\nbeta\ngamma\n', 15_000);
      const id = (web.status?.containerStatuses?.[0]?.containerID ?? '').replace(/^fake:\/\//, '');
      const logFile = (await agent!.runtime.containerStatus(id)).logPath;
      await appendFile(logFile, formatCriLogRecord(new Date(), 'stdout', false, 'delta'));
      await eventually(async () => out.endsWith('gamma\ndelta\n'), 15_000);
      t.pass('a line written later arrived');
      t.equal(followSockets().length, 1, 'one open request to the node agent');
    } finally {
      child.kill('SIGKILL');
      await exited;
    }
    await eventually(async () => followSockets().length === 0, 15_000);
    t.pass('the request to the node agent ended with kubectl');
  });
}

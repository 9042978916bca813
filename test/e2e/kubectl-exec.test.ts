/**
 * Real kubectl exec, attach and port-forward through the API server and the node agent to a
 * private containerd (skipped unless root with containerd installed). kubectl 1.33 speaks
 * WebSocket (v5 channels; port-forward SPDY tunnelled in WebSocket), kubectl 1.27 SPDY/3.1; both
 * must work: output, stdin with EOF (`echo | exec -i cat`), exit codes, a TTY, attach to a
 * running container, `run --attach` and `run -i --rm`, and a page fetched through
 * `kubectl port-forward`.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { get } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { KubeObject } from '../../src/api/resources/types.js';
import { loadCoreconfig } from '../../src/client/coreconfig.js';
import { RestClient } from '../../src/client/rest-client.js';
import { parseNodeagentArgs } from '../../src/flags/nodeagent.js';
import { startNodeAgent, type NodeAgent } from '../../src/daemons/nodeagent/main.js';
import type { Pod } from '../../src/daemons/nodeagent/pod-types.js';
import { createCA, issueCert, writePemFile } from '../../src/util/pki.js';
import { startApiserver, type StartedApiserver } from '../helpers/apiserver.js';
import { containerdSkipReason, startContainerd, type StartedContainerd } from '../helpers/containerd.js';
import { kubectl } from '../helpers/kubectl.js';
import { eventually } from '../helpers/rest-client.js';

const skip = containerdSkipReason();
const versions = [33, 27].filter((v) => kubectl(v));
if (skip || versions.length === 0) {
  t.plan(0, skip ? `containerd: ${skip}` : 'no kubectl.1.33 or kubectl.1.27');
} else {
  await main();
}

interface Result { code: number; stdout: string; stderr: string }

function fetchPage(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    get({ host: '127.0.0.1', port, path: '/index.html', agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('end', () => resolve(Buffer.concat(chunks).toString()));
    }).on('error', reject);
  });
}

/** Waits for a line matching `re` on the child's stdout. */
function waitOutput(child: ChildProcess, re: RegExp, timeoutMs = 20_000): Promise<RegExpMatchArray> {
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`timed out waiting for ${re} in: ${out}`)), timeoutMs);
    const onData = (d: Buffer): void => {
      out += d.toString();
      const m = re.exec(out);
      if (m) { clearTimeout(timer); child.stdout?.off('data', onData); resolve(m); }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', (d: Buffer) => { out += d.toString(); });
  });
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-exec-e2e-'));
  let containerd: StartedContainerd | undefined;
  let api: StartedApiserver | undefined;
  let agent: NodeAgent | undefined;
  let client: RestClient | undefined;
  const children: ChildProcess[] = [];
  t.teardown(async () => {
    for (const c of children) c.kill('SIGKILL');
    await agent?.stop({ stopPods: true }).catch(() => undefined);
    client?.close();
    await api?.stop();
    await containerd?.stop();
    await rm(dir, { recursive: true, force: true });
  });
  const file = (n: string): string => join(dir, n);
  const nodeCa = await createCA({ commonName: 'node-ca' });
  const apiClient = await issueCert({ ca: nodeCa, commonName: 'kube-apiserver-kubelet-client', organizations: ['system:masters'], usages: 'client' });
  const serving = await issueCert({ ca: nodeCa, commonName: 'exec-node', dnsNames: ['exec-node', 'localhost'], ips: ['127.0.0.1'], usages: 'server' });
  await Promise.all([
    writePemFile(file('ca.crt'), nodeCa.certPem), writePemFile(file('client.crt'), apiClient.certPem), writePemFile(file('client.key'), apiClient.keyPem),
    writePemFile(file('serving.crt'), serving.certPem), writePemFile(file('serving.key'), serving.keyPem),
  ]);
  containerd = await startContainerd();
  api = await startApiserver({
    args: [
      `--nodeagent-client-certificate=${file('client.crt')}`, `--nodeagent-client-key=${file('client.key')}`,
      `--nodeagent-certificate-authority=${file('ca.crt')}`, '--nodeagent-preferred-address-types=InternalIP',
    ],
  });
  client = new RestClient({ connection: await loadCoreconfig({ path: api.coreconfigPath }), contentType: 'application/json' });
  const { config } = parseNodeagentArgs([
    '--container-runtime=remote', `--container-runtime-endpoint=${containerd.endpoint}`, `--coreconfig=${api.coreconfigPath}`,
    '--hostname-override=exec-node', `--root-dir=${file('root')}`, `--cert-dir=${file('pki')}`, '--port=0', '--read-only-port=0',
    '--healthz-port=0', '--fail-swap-on=false', '--address=127.0.0.1', '--node-ip=127.0.0.1', '--resolv-conf=', '--event-qps=0',
    `--client-ca-file=${file('ca.crt')}`, `--tls-cert-file=${file('serving.crt')}`, `--tls-private-key-file=${file('serving.key')}`,
    '--anonymous-auth=false',
  ]);
  agent = await startNodeAgent(config, { podLogDir: file('logs'), relistPeriodMs: 200, skipProcessTweaks: true });
  const PODS = { group: '', version: 'v1', resource: 'pods', namespace: 'default' };
  const pod = (name: string, command: string[], extra: Record<string, unknown> = {}): KubeObject => ({
    apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'default' },
    spec: { nodeName: 'exec-node', terminationGracePeriodSeconds: 1, containers: [{ name: 'main', image: 'localhost/busybox:latest', imagePullPolicy: 'IfNotPresent', command, ...extra }] },
  });
  await client.create(PODS, pod('web', ['sh', '-c', 'mkdir -p /www && echo "hello through port-forward" > /www/index.html && exec httpd -f -p 8080 -h /www']));
  await client.create(PODS, pod('ticker', ['sh', '-c', 'i=0; while true; do i=$((i+1)); echo tick $i; sleep 0.5; done']));
  for (const name of ['web', 'ticker']) {
    await eventually(async () => (await client!.get<Pod>(PODS, name)).status?.phase === 'Running', 60_000);
  }

  for (const v of versions) {
    const bin = kubectl(v)!;
    const args = [`--kubeconfig=${api.coreconfigPath}`, `--cache-dir=${file(`cache-${v}`)}`];
    const kc = (a: string[], input?: string): Promise<Result> => new Promise((resolve) => {
      const child = execFile(bin, [...args, ...a], { timeout: 30_000 }, (err, stdout, stderr) => {
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout: String(stdout), stderr: String(stderr) });
      });
      if (input !== undefined) child.stdin?.end(input);
    });

    t.test(`kubectl 1.${v} exec`, async (t) => {
      const host = await kc(['exec', 'web', '--', 'cat', '/etc/hostname']);
      t.equal(host.code, 0, host.stderr);
      t.equal(host.stdout.trim(), 'web', 'prints the pod name');
      const both = await kc(['exec', 'web', '--', 'sh', '-c', 'echo out; echo err >&2']);
      t.equal(both.stdout, 'out\n');
      t.equal(both.stderr, 'err\n', 'stderr kept apart');
      const piped = await kc(['exec', '-i', 'web', '--', 'cat'], 'line one\nline two\n');
      t.equal(piped.code, 0, piped.stderr);
      t.equal(piped.stdout, 'line one\nline two\n', 'stdin reaches the command and its EOF ends it');
      const failing = await kc(['exec', 'web', '--', 'sh', '-c', 'exit 3']);
      t.equal(failing.code, 3, 'kubectl exits with the command\'s code');
      // kubectl asks for a TTY only when its own stdin is one: `script` (bsdutils) gives it a pty.
      // The first resize may land just after the command starts, hence the polling stty.
      const script = 'for i in $(seq 100); do s=$(stty size 2>/dev/null); [ "$s" = "30 100" ] && break; sleep 0.1; done; echo "size=$s"; test -t 0 && test -t 1 && echo is-a-tty';
      const line = ['stty cols 100 rows 30;', bin, ...args, 'exec', '-it', 'web', '--', 'sh', '-c', `'${script.replaceAll("'", "'\\''")}'`].join(' ');
      const tty = await new Promise<Result>((resolve) => {
        execFile('script', ['-qec', line, '/dev/null'], { timeout: 30_000 }, (err, stdout, stderr) => {
          resolve({ code: err ? 1 : 0, stdout: String(stdout), stderr: String(stderr) });
        });
      });
      t.match(tty.stdout, /is-a-tty/, `a TTY was allocated (${JSON.stringify(tty)})`);
      t.match(tty.stdout, /size=30 100/, `the terminal size was sent (${JSON.stringify(tty.stdout)})`);
      const missing = await kc(['exec', 'web', '-c', 'nope', '--', 'true']);
      t.not(missing.code, 0);
      t.match(missing.stderr, /container nope is not valid for pod web/);
    });

    t.test(`kubectl 1.${v} attach`, async (t) => {
      const child = spawn(bin, [...args, 'attach', 'ticker'], { stdio: ['ignore', 'pipe', 'pipe'] });
      children.push(child);
      const m = await waitOutput(child, /tick (\d+)\n/);
      t.ok(Number(m[1]) > 0, 'live output of the running container');
      child.kill('SIGTERM');
    });

    t.test(`kubectl 1.${v} run --attach and run -i --rm`, async (t) => {
      const over = '--overrides={"apiVersion":"v1","spec":{"nodeName":"exec-node"}}';
      const common = ['--image=localhost/busybox:latest', '--image-pull-policy=IfNotPresent', '--restart=Never', over];
      const attached = await kc(['run', `talk-${v}`, ...common, '--attach', '--', 'sh', '-c', 'sleep 2; echo attached output']);
      t.equal(attached.code, 0, attached.stderr);
      t.match(attached.stdout, /attached output/, 'output of the attached container');
      const cat = await kc(['run', `cat-${v}`, ...common, '-i', '--rm', '--', 'cat'], 'through stdin\n');
      t.equal(cat.code, 0, cat.stderr);
      t.match(cat.stdout, /through stdin/, 'stdin reached the new pod and its EOF ended it');
      await eventually(async () => (await kc(['get', 'pod', `cat-${v}`, '--ignore-not-found', '-o', 'name'])).stdout === '', 30_000);
    });

    t.test(`kubectl 1.${v} port-forward`, async (t) => {
      const child = spawn(bin, [...args, 'port-forward', 'pod/web', ':8080', '--address=127.0.0.1'], { stdio: ['ignore', 'pipe', 'pipe'] });
      children.push(child);
      const m = await waitOutput(child, /Forwarding from 127\.0\.0\.1:(\d+) -> 8080/);
      const port = Number(m[1]);
      t.equal(await fetchPage(port), 'hello through port-forward\n', 'first page');
      t.equal(await fetchPage(port), 'hello through port-forward\n', 'a second connection over the same session');
      child.kill('SIGTERM');
    });
  }
}

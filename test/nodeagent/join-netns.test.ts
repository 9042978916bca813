// A second machine joins (issue 29, items 6 and 7): on the control plane `corectl token create
// --print-join-command` prints one command; in its own network namespace (a veth pair to the
// host, private 10.201.x.0/30 addresses) that `corectl join` (discovery with the token and the CA
// hash, then the node agent with only --bootstrap-coreconfig) joins a `corectl server` (Node,RBAC)
// that runs no node of its own. The node agent gets a client certificate from a kube-apiserver-client-kubelet CSR (approved by
// csrapproving, signed by csrsigning), its serving certificate from a kubelet-serving CSR (approved
// by corectl server), becomes Ready, runs a pod, serves kubectl logs and exec through the API
// server, then rotates its client certificate (2m15s certificates) and keeps its pod running.
//
// Runtime: a private containerd started inside the namespace (its CNI bridge, pod network and
// stream server live there, as on a second machine); the fake runtime when containerd is missing.
// Needs root (ip netns, nsenter) and kubectl 1.33.
import t, { type Test } from 'tap';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes, randomInt, X509Certificate } from 'node:crypto';
import { openSync, closeSync } from 'node:fs';
import { lstat, mkdtemp, readFile, readlink, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { containerdSkipReason, startContainerd, type StartedContainerd } from '../helpers/containerd.js';
import { BUSYBOX_IMAGE } from '../helpers/oci-image.js';
import { freePort, startServer, type Running } from '../helpers/corectl-server.js';
import { kubectl as kubectlBinary } from '../helpers/kubectl.js';
import { waitFor } from '../helpers/wait-for.js';

const cli = fileURLToPath(new URL('../../src/cli.js', import.meta.url));
const SIGNING_DURATION = '2m15s';
const NODE = 'joined-node';
const kubectl = kubectlBinary(33);
const hasIp = spawnSync('sh', ['-c', 'command -v ip && command -v nsenter'], { stdio: 'ignore' }).status === 0;
const skip = process.platform !== 'linux' ? 'needs Linux network namespaces'
  : process.getuid?.() !== 0 ? 'needs root (ip netns add, veth pairs)'
    : !hasIp ? 'needs iproute2 (ip)'
      : !kubectl ? 'needs kubectl 1.33'
        : false;
if (skip) t.plan(0, skip);
else await main();

function corectl(args: string[]): { status: number | null; stdout: string; stderr: string } {
  return spawnSync(process.execPath, ['--input-type=module', '-e',
    `const m = await import(${JSON.stringify('file://' + cli)}); process.exitCode = await m.main(process.argv);`,
    'corectl', ...args], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, NODE_OPTIONS: '' } });
}

type Kubectl = (args: string[], input?: string) => { code: number | null; out: string; err: string };

/**
 * Bindings other branches give the server (until they are on main, the test lends them): the
 * bootstrap signer's Role and the certificate and root-CA publisher controllers' ClusterRoles
 * to the controller manager's user (until the controller manager acts as its service accounts), and system:kubelet-api-admin to the API server's node agent client
 * certificate, which node agents authorize through SubjectAccessReviews (kubeadm's
 * kube-apiserver-kubelet-client binding). Each only when nothing grants it yet.
 */
async function lendMissingRoles(kc: Kubectl): Promise<void> {
  const can = (as: string, verb: string, what: string, ns?: string): boolean =>
    kc(['auth', 'can-i', verb, what, `--as=${as}`, ...(ns ? ['-n', ns] : [])]).out.trim() === 'yes';
  if (!can('system:kube-controller-manager', 'update', 'configmaps/cluster-info', 'kube-public')) {
    kc(['create', 'rolebinding', 'test:signer-as-controller-manager', '-n', 'kube-public', '--role=system:controller:bootstrap-signer', '--user=system:kube-controller-manager']);
  }
  if (!can('system:kube-controller-manager', 'update', 'certificatesigningrequests/approval')) {
    kc(['create', 'clusterrolebinding', 'test:certificate-controller-as-controller-manager', '--clusterrole=system:controller:certificate-controller', '--user=system:kube-controller-manager']);
  }
  if (!can('system:kube-controller-manager', 'create', 'configmaps', 'default')) {
    kc(['create', 'clusterrolebinding', 'test:root-ca-publisher-as-controller-manager', '--clusterrole=system:controller:root-ca-cert-publisher', '--user=system:kube-controller-manager']);
  }
  if (!can('corectl-apiserver-nodeagent-client', 'get', 'nodes/proxy')) {
    kc(['create', 'clusterrolebinding', 'test:apiserver-nodeagent-client', '--clusterrole=system:kubelet-api-admin', '--user=corectl-apiserver-nodeagent-client']);
  }
}

function sh(args: string[]): string {
  const r = spawnSync(args[0] ?? '', args.slice(1), { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

interface Csr { metadata: { name: string; creationTimestamp: string }; spec: { signerName: string; username: string }; status?: { certificate?: string; conditions?: { type: string; message?: string }[] } }

async function main(): Promise<void> {
  t.setTimeout(600_000);
  const containerdSkip = containerdSkipReason();
  const dir = await mkdtemp(join(tmpdir(), 'corectl-join-'));
  const tag = randomBytes(3).toString('hex');
  const ns = `cjoin${tag}`;
  const third = randomInt(0, 250);
  const hostIp = `10.201.${third}.1`;
  const nodeIp = `10.201.${third}.2`;
  const cleanups: (() => Promise<void> | void)[] = [];
  t.teardown(async () => { for (const c of cleanups.reverse()) await Promise.resolve().then(c).catch(() => undefined); await rm(dir, { recursive: true, force: true }); });

  // The second machine's network: a namespace joined to the host by a veth pair.
  sh(['ip', 'netns', 'add', ns]);
  cleanups.push(() => { spawnSync('ip', ['netns', 'del', ns]); });
  sh(['ip', 'link', 'add', `cjh${tag}`, 'type', 'veth', 'peer', 'name', `cjn${tag}`]);
  cleanups.push(() => { spawnSync('ip', ['link', 'del', `cjh${tag}`]); });
  sh(['ip', 'link', 'set', `cjn${tag}`, 'netns', ns]);
  sh(['ip', 'addr', 'add', `${hostIp}/30`, 'dev', `cjh${tag}`]);
  sh(['ip', 'link', 'set', `cjh${tag}`, 'up']);
  sh(['ip', '-n', ns, 'addr', 'add', `${nodeIp}/30`, 'dev', `cjn${tag}`]);
  sh(['ip', '-n', ns, 'link', 'set', `cjn${tag}`, 'up']);
  sh(['ip', '-n', ns, 'link', 'set', 'lo', 'up']);

  // The control plane, without a node of its own, as kubeadm runs it (Node,RBAC; anonymous
  // requests on, so that the joining machine can read cluster-info).
  const dataDir = join(dir, 'data');
  const port = await freePort();
  const server: Running = startServer([
    `--data-dir=${dataDir}`, `--bind-address=${hostIp}`, `--secure-port=${port}`, '--disable-agent',
    '--apiserver-arg=--authorization-mode=Node,RBAC', '--apiserver-arg=--anonymous-auth=true',
    `--controller-manager-arg=--experimental-cluster-signing-duration=${SIGNING_DURATION}`,
  ]);
  cleanups.push(async () => { await server.stop(); });
  await server.waitFor(/controller-manager started/, 90_000);
  const admin = join(dataDir, 'admin.coreconfig');
  const kc = (args: string[], input?: string): { code: number | null; out: string; err: string } => {
    const r = spawnSync(kubectl ?? 'kubectl', ['--kubeconfig', admin, ...args], { encoding: 'utf8', timeout: 30_000, ...(input ? { input } : {}) });
    return { code: r.status, out: r.stdout, err: r.stderr };
  };
  await lendMissingRoles(kc);
  const csrs = (): Csr[] => {
    const r = kc(['get', 'csr', '-o', 'json']);
    return r.code === 0 ? (JSON.parse(r.out) as { items: Csr[] }).items : [];
  };

  // On the control plane: a token and the one command that joins (as kubeadm token create).
  const created = corectl(['token', 'create', `--data-dir=${dataDir}`, '--print-join-command']);
  const joinLine = created.stdout.trim();
  if (!/^corectl join \S+ --token [a-z0-9]{6}\.[a-z0-9]{16} --discovery-token-ca-cert-hash sha256:[0-9a-f]{64}$/.test(joinLine)) {
    throw new Error(`corectl token create --print-join-command did not print one join command (exit ${created.status}): ${created.stdout}${created.stderr}`);
  }
  const joinArgs = joinLine.split(' ').slice(1);
  const tokenId = (joinArgs[joinArgs.indexOf('--token') + 1] ?? '').split('.')[0] ?? '';
  const secret = (joinArgs[joinArgs.indexOf('--token') + 1] ?? '').split('.')[1] ?? '';
  let containerd: StartedContainerd | undefined;
  if (!containerdSkip) {
    containerd = await startContainerd({ netns: ns });
    const c = containerd;
    cleanups.push(() => c.stop());
  }
  t.comment(containerd ? 'runtime: containerd in the namespace' : `runtime: fake (${containerdSkip})`);
  const nodeDir = join(dir, 'node');
  const certDir = join(nodeDir, 'pki');
  const coreconfig = join(nodeDir, 'coreconfig');
  const logFile = join(dir, 'nodeagent.log');
  const logFd = openSync(logFile, 'a');
  // nsenter: the network namespace only (`ip netns exec` would also remount /sys).
  // On the joining machine: that command, with this machine's own node agent options.
  const agent: ChildProcess = spawn('nsenter', [
    `--net=/var/run/netns/${ns}`, process.execPath, '--input-type=module', '-e',
    `const m = await import(${JSON.stringify('file://' + cli)}); process.exitCode = await m.main(process.argv);`,
    'corectl', ...joinArgs, '--',
    `--root-dir=${nodeDir}`, `--seccomp-profile-root=${join(nodeDir, 'seccomp')}`, `--hostname-override=${NODE}`, `--node-ip=${nodeIp}`,
    '--read-only-port=0', '--healthz-port=0', '--fail-swap-on=false', '--resolv-conf=', '--node-status-update-frequency=2s',
    ...(containerd ? ['--container-runtime=remote', `--container-runtime-endpoint=${containerd.endpoint}`] : ['--container-runtime=fake']),
  ], { stdio: ['ignore', logFd, logFd], env: { ...process.env, NODE_OPTIONS: '' } });
  closeSync(logFd);
  const agentExited = new Promise<void>((r) => agent.once('exit', () => r()));
  cleanups.push(async () => { if (agent.exitCode === null) { agent.kill('SIGTERM'); await Promise.race([agentExited, new Promise((r) => setTimeout(r, 20_000))]); } });
  const agentLog = async (): Promise<string> => (await readFile(logFile, 'utf8').catch(() => '')).slice(-4000);

  // Each step needs the one before: after a failure the rest is skipped, not waited for.
  let failed = false;
  const step = async (name: string, fn: (t: Test) => Promise<void>): Promise<void> => {
    if (failed) { t.comment(`skipped (an earlier step failed): ${name}`); return; }
    await t.test(name, async (t) => { await fn(t); if (!t.passing()) failed = true; });
  };

  await step('joins with the token only: client certificate from a nodeclient CSR, coreconfig written', async (t) => {
    t.match(joinLine, `--token ${tokenId}.`, `token create printed: ${joinLine.replace(secret, '<secret>')}`);
    const csr = await waitFor('the bootstrap CSR, signed', () => csrs().find((c) => c.spec.username === `system:bootstrap:${tokenId}` && c.status?.certificate), 60_000)
      .catch(async (e: Error) => { throw new Error(`${e.message}\n${await agentLog()}\n${server.stderr().slice(-2000)}`); });
    t.equal(csr.spec.signerName, 'kubernetes.io/kube-apiserver-client-kubelet');
    t.equal(csr.status?.conditions?.find((c) => c.type === 'Approved')?.message, 'Auto approving kubelet client certificate after SubjectAccessReview.');
    await waitFor('--coreconfig', () => readFile(coreconfig, 'utf8'), 30_000);
    const text = await readFile(coreconfig, 'utf8');
    t.match(text, `client-certificate: ${join(certDir, 'nodeagent-client-current.pem')}`);
    t.notMatch(text, secret, 'the token is not in the node\'s coreconfig');
    t.equal((await lstat(coreconfig)).mode & 0o777, 0o600, 'the coreconfig is private');
    const link = await readlink(join(certDir, 'nodeagent-client-current.pem'));
    t.match(link, /^nodeagent-client-\d{4}-\d\d-\d\d-\d\d-\d\d-\d\d\.pem$/, 'current is a symlink to a dated pair file');
    t.equal(((await lstat(join(certDir, link))).mode & 0o777), 0o600, 'the pair file is private');
    const cert = new X509Certificate(await readFile(join(certDir, link)));
    t.match(cert.subject, /O=system:nodes/);
    t.match(cert.subject, `CN=system:node:${NODE}`);
  });

  await step('Ready, with a serving certificate approved by corectl server', async (t) => {
    await waitFor('node Ready', () => kc(['get', 'node', NODE, '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].status}']).out === 'True', 90_000)
      .catch(async (e: Error) => { throw new Error(`${e.message}\n${await agentLog()}`); });
    const serving = await waitFor('serving CSR', () => csrs().find((c) => c.spec.signerName === 'kubernetes.io/kubelet-serving' && c.status?.certificate), 60_000);
    t.equal(serving.spec.username, `system:node:${NODE}`);
    t.match(serving.status?.conditions?.find((c) => c.type === 'Approved')?.message, /corectl server/);
    t.equal(kc(['get', 'node', NODE, '-o', 'jsonpath={.status.addresses[?(@.type=="InternalIP")].address}']).out, nodeIp);
  });

  let podState = '';
  await step('runs a pod; kubectl logs and exec through the API server', async (t) => {
    await waitFor('default service account', () => kc(['get', 'serviceaccount', 'default']).code === 0, 60_000);
    const run = kc(['run', 'joined', `--image=${BUSYBOX_IMAGE}`, '--image-pull-policy=IfNotPresent', '--restart=Never', '--', 'sh', '-c', 'echo hello from the joined node; sleep 3600']);
    t.equal(run.code, 0, run.err);
    await waitFor('pod Running', () => kc(['get', 'pod', 'joined', '-o', 'jsonpath={.status.phase}']).out === 'Running', 120_000)
      .catch(async (e: Error) => { throw new Error(`${e.message}\n${kc(['describe', 'pod', 'joined']).out.slice(0, 3000)}\n${await agentLog()}`); });
    t.equal(kc(['get', 'pod', 'joined', '-o', 'jsonpath={.spec.nodeName}']).out, NODE);
    podState = kc(['get', 'pod', 'joined', '-o', 'jsonpath={.status.containerStatuses[0].containerID} {.status.containerStatuses[0].restartCount}']).out;
    const logs = await waitFor('logs', () => { const r = kc(['logs', 'joined']); return r.code === 0 && r.out.includes('hello') ? r : undefined; }, 30_000)
      .catch((e: Error) => { throw new Error(`${e.message}: ${kc(['logs', 'joined']).err}`); });
    t.match(logs.out, 'hello from the joined node');
    const exec = kc(['exec', 'joined', '--', 'echo', 'exec-ok']);
    t.equal(exec.code, 0, exec.err);
    t.match(exec.out, 'exec-ok');
  });

  await step('rotates its client certificate and keeps running its pod', async (t) => {
    const firstLink = await readlink(join(certDir, 'nodeagent-client-current.pem'));
    const first = new X509Certificate(await readFile(join(certDir, firstLink)));
    const before = new Set(csrs().map((c) => c.metadata.name));
    // 2m15s certificates, backdated 5 minutes: renewal comes 5 s to 1.5 min after issue.
    const renewal = await waitFor('a new self-renewal CSR, signed', () => csrs().find((c) => !before.has(c.metadata.name) && c.spec.username === `system:node:${NODE}` && c.spec.signerName === 'kubernetes.io/kube-apiserver-client-kubelet' && c.status?.certificate), 150_000)
      .catch(async (e: Error) => { throw new Error(`${e.message}\n${await agentLog()}`); });
    t.equal(renewal.status?.conditions?.find((c) => c.type === 'Approved')?.message, 'Auto approving self kubelet client certificate after SubjectAccessReview.');
    await waitFor('current pair replaced', async () => (await readlink(join(certDir, 'nodeagent-client-current.pem'))) !== firstLink || new X509Certificate(await readFile(join(certDir, 'nodeagent-client-current.pem'))).serialNumber !== first.serialNumber, 30_000);
    t.equal(agent.exitCode, null, 'the same node agent process (no restart)');
    // Past the first certificate's end the node still renews its Lease and stays Ready.
    const firstEnd = Date.parse(first.validTo);
    await waitFor('the first certificate to expire', () => Date.now() > firstEnd + 1000, 180_000);
    const leaseAfter = (): number => Date.parse(kc(['get', 'lease', NODE, '-n', 'kube-node-lease', '-o', 'jsonpath={.spec.renewTime}']).out);
    await waitFor('a Lease renewal after the first certificate expired', () => leaseAfter() > firstEnd, 60_000);
    t.equal(kc(['get', 'node', NODE, '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].status}']).out, 'True', 'still Ready');
    t.equal(kc(['get', 'pod', 'joined', '-o', 'jsonpath={.status.containerStatuses[0].containerID} {.status.containerStatuses[0].restartCount}']).out, podState, 'the same container, never restarted');
    const exec = kc(['exec', 'joined', '--', 'echo', 'after-rotation']);
    t.equal(exec.code, 0, exec.err);
    t.match(exec.out, 'after-rotation');
    t.equal(agent.exitCode, null, 'the node agent still runs');
    t.notMatch(await readFile(logFile, 'utf8'), secret, 'the token secret is in no log line');
  });
}

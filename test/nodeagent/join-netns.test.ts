// A second machine joins (issue 29, items 6 and 7): a node agent in its own network namespace
// (a veth pair to the host, private 10.201.x.0/30 addresses) with nothing but a bootstrap
// coreconfig (a bootstrap token and the cluster CA) joins a `corectl server` that runs no node
// of its own: it gets a client certificate from a kube-apiserver-client-kubelet CSR (approved by
// csrapproving, signed by csrsigning), its serving certificate from a kubelet-serving CSR (approved
// by corectl server), becomes Ready, runs a pod, serves kubectl logs and exec through the API
// server, then rotates its client certificate (2m15s certificates) and keeps its pod running.
//
// Runtime: a private containerd started inside the namespace (its CNI bridge, pod network and
// stream server live there, as on a second machine); the fake runtime when containerd is missing.
// The token comes from --token-auth-file (group system:bootstrappers) until bootstrap-token
// Secrets are on main. Needs root (ip netns) and kubectl 1.33.
import t from 'tap';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes, randomInt, X509Certificate } from 'node:crypto';
import { openSync, closeSync } from 'node:fs';
import { lstat, mkdtemp, readFile, readlink, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bootstrapCoreconfigText } from '../../src/client/bootstrap-coreconfig.js';
import { containerdSkipReason, startContainerd, type StartedContainerd } from '../helpers/containerd.js';
import { BUSYBOX_IMAGE } from '../helpers/oci-image.js';
import { freePort, startServer, type Running } from '../helpers/corectl-server.js';
import { kubectl as kubectlBinary } from '../helpers/kubectl.js';
import { waitFor } from '../helpers/wait-for.js';

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

  // The control plane, without a node of its own; one bootstrap token in system:bootstrappers.
  const tokenId = randomBytes(3).toString('hex');
  const token = `${tokenId}.${randomBytes(8).toString('hex')}`;
  const tokenFile = join(dir, 'tokens.csv');
  await writeFile(tokenFile, `${token},system:bootstrap:${tokenId},${tokenId},"system:bootstrappers"\n`, { mode: 0o600 });
  const dataDir = join(dir, 'data');
  const port = await freePort();
  const server: Running = startServer([
    `--data-dir=${dataDir}`, `--bind-address=${hostIp}`, `--secure-port=${port}`, '--disable-agent',
    `--apiserver-arg=--token-auth-file=${tokenFile}`,
    `--controller-manager-arg=--experimental-cluster-signing-duration=${SIGNING_DURATION}`,
  ]);
  cleanups.push(async () => { await server.stop(); });
  await server.waitFor(/cluster admin credentials/, 90_000);
  const admin = join(dataDir, 'admin.coreconfig');
  const kc = (args: string[]): { code: number | null; out: string; err: string } => {
    const r = spawnSync(kubectl ?? 'kubectl', ['--kubeconfig', admin, ...args], { encoding: 'utf8', timeout: 30_000 });
    return { code: r.status, out: r.stdout, err: r.stderr };
  };
  const csrs = (): Csr[] => {
    const r = kc(['get', 'csr', '-o', 'json']);
    return r.code === 0 ? (JSON.parse(r.out) as { items: Csr[] }).items : [];
  };

  // The joining machine has the token and the CA, nothing else (as kubeadm join writes them).
  const nodeDir = join(dir, 'node');
  const bootstrapFile = join(dir, 'bootstrap-coreconfig');
  await writeFile(bootstrapFile, bootstrapCoreconfigText({ server: `https://${hostIp}:${port}`, caPem: await readFile(join(dataDir, 'pki', 'ca.crt'), 'utf8'), token }), { mode: 0o600 });
  const caFile = join(dir, 'ca.crt');
  await writeFile(caFile, await readFile(join(dataDir, 'pki', 'ca.crt')));
  let containerd: StartedContainerd | undefined;
  if (!containerdSkip) {
    containerd = await startContainerd({ netns: ns });
    const c = containerd;
    cleanups.push(() => c.stop());
  }
  t.comment(containerd ? 'runtime: containerd in the namespace' : `runtime: fake (${containerdSkip})`);
  const certDir = join(nodeDir, 'pki');
  const coreconfig = join(nodeDir, 'coreconfig');
  const logFile = join(dir, 'nodeagent.log');
  const logFd = openSync(logFile, 'a');
  const cli = fileURLToPath(new URL('../../src/cli.js', import.meta.url));
  // nsenter: the network namespace only (`ip netns exec` would also remount /sys).
  const agent: ChildProcess = spawn('nsenter', [
    `--net=/var/run/netns/${ns}`, process.execPath, '--input-type=module', '-e',
    `const m = await import(${JSON.stringify('file://' + cli)}); process.exitCode = await m.main(process.argv);`,
    'corectl', 'nodeagent',
    `--bootstrap-coreconfig=${bootstrapFile}`, `--coreconfig=${coreconfig}`, `--cert-dir=${certDir}`, `--root-dir=${join(nodeDir, 'root')}`,
    `--seccomp-profile-root=${join(nodeDir, 'seccomp')}`, `--hostname-override=${NODE}`, `--node-ip=${nodeIp}`,
    '--rotate-certificates', '--feature-gates=RotateNodeagentServerCertificate=true',
    `--client-ca-file=${caFile}`, '--anonymous-auth=false', '--authentication-token-webhook=true', '--authorization-mode=Webhook',
    '--read-only-port=0', '--healthz-port=0', '--fail-swap-on=false', '--resolv-conf=', '--node-status-update-frequency=2s',
    ...(containerd ? ['--container-runtime=remote', `--container-runtime-endpoint=${containerd.endpoint}`] : ['--container-runtime=fake']),
  ], { stdio: ['ignore', logFd, logFd], env: { ...process.env, NODE_OPTIONS: '' } });
  closeSync(logFd);
  const agentExited = new Promise<void>((r) => agent.once('exit', () => r()));
  cleanups.push(async () => { if (agent.exitCode === null) { agent.kill('SIGTERM'); await Promise.race([agentExited, new Promise((r) => setTimeout(r, 20_000))]); } });
  const agentLog = async (): Promise<string> => (await readFile(logFile, 'utf8').catch(() => '')).slice(-4000);

  await t.test('joins with the token only: client certificate from a nodeclient CSR, coreconfig written', async (t) => {
    const csr = await waitFor('the bootstrap CSR, signed', () => csrs().find((c) => c.spec.username === `system:bootstrap:${tokenId}` && c.status?.certificate), 60_000)
      .catch(async (e: Error) => { throw new Error(`${e.message}\n${await agentLog()}\n${server.stderr().slice(-2000)}`); });
    t.equal(csr.spec.signerName, 'kubernetes.io/kube-apiserver-client-kubelet');
    t.equal(csr.status?.conditions?.find((c) => c.type === 'Approved')?.message, 'Auto approving kubelet client certificate after SubjectAccessReview.');
    await waitFor('--coreconfig', () => readFile(coreconfig, 'utf8'), 30_000);
    const text = await readFile(coreconfig, 'utf8');
    t.match(text, `client-certificate: ${join(certDir, 'nodeagent-client-current.pem')}`);
    t.notMatch(text, token.split('.')[1] ?? 'x', 'the token is not in the node\'s coreconfig');
    const link = await readlink(join(certDir, 'nodeagent-client-current.pem'));
    t.match(link, /^nodeagent-client-\d{4}-\d\d-\d\d-\d\d-\d\d-\d\d\.pem$/, 'current is a symlink to a dated pair file');
    t.equal(((await lstat(join(certDir, link))).mode & 0o777), 0o600, 'the pair file is private');
    const cert = new X509Certificate(await readFile(join(certDir, link)));
    t.match(cert.subject, /O=system:nodes/);
    t.match(cert.subject, `CN=system:node:${NODE}`);
  });

  await t.test('Ready, with a serving certificate approved by corectl server', async (t) => {
    await waitFor('node Ready', () => kc(['get', 'node', NODE, '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].status}']).out === 'True', 90_000)
      .catch(async (e: Error) => { throw new Error(`${e.message}\n${await agentLog()}`); });
    const serving = await waitFor('serving CSR', () => csrs().find((c) => c.spec.signerName === 'kubernetes.io/kubelet-serving' && c.status?.certificate), 60_000);
    t.equal(serving.spec.username, `system:node:${NODE}`);
    t.match(serving.status?.conditions?.find((c) => c.type === 'Approved')?.message, /corectl server/);
    t.equal(kc(['get', 'node', NODE, '-o', 'jsonpath={.status.addresses[?(@.type=="InternalIP")].address}']).out, nodeIp);
  });

  let podState = '';
  await t.test('runs a pod; kubectl logs and exec through the API server', async (t) => {
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

  await t.test('rotates its client certificate and keeps running its pod', async (t) => {
    const firstLink = await readlink(join(certDir, 'nodeagent-client-current.pem'));
    const first = new X509Certificate(await readFile(join(certDir, firstLink)));
    // 2m15s certificates, backdated 5 minutes: renewal comes 5 s to 1.5 min after issue.
    const renewal = await waitFor('a self-renewal CSR, signed', () => csrs().find((c) => c.spec.username === `system:node:${NODE}` && c.spec.signerName === 'kubernetes.io/kube-apiserver-client-kubelet' && c.status?.certificate), 150_000)
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
  });
}

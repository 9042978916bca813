// `corectl server` options: its own table, the prefixed pass-through options checked by each
// daemon's parser, the --config file, and the layering (derived < file < --<daemon>-arg).
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseServerArgs } from '../../src/flags/server.js';
import { FlagError } from '../../src/flags/flag-error.js';
import { configFileArgs, resolveNodeName, resolveRuntime } from '../../src/daemons/server/daemon-args.js';
import { planServer } from '../../src/daemons/server/plan.js';

const cli = fileURLToPath(new URL('../../src/cli.js', import.meta.url));
const dir = await mkdtemp(join(tmpdir(), 'corectl-server-opts-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));

/** Runs `corectl server <args>` through the real entry point. */
function server(args: string[]): { code: number | null; out: string; err: string } {
  const r = spawnSync(process.execPath, [
    '--input-type=module', '-e',
    `const m = await import(${JSON.stringify('file://' + cli)}); process.exitCode = await m.main(process.argv);`,
    'corectl', 'server', ...args,
  ], { encoding: 'utf8', timeout: 30_000, env: { ...process.env, NODE_OPTIONS: '' } });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

t.test('defaults', async (t) => {
  const { config } = parseServerArgs([]);
  t.equal(config.dataDir, '/var/lib/core');
  t.equal(config.securePort, 6443);
  t.equal(config.bindAddress, '0.0.0.0');
  t.equal(config.containerRuntime, '');
  t.same(config.apiserverArg, []);
  t.equal(resolveRuntime(config), 'fake');
  t.equal(resolveRuntime({ containerRuntime: '', containerRuntimeEndpoint: 'unix:///run/x.sock' }), 'remote');
  t.throws(() => resolveRuntime({ containerRuntime: 'remote', containerRuntimeEndpoint: '' }), /needs --container-runtime-endpoint/);
  t.equal(resolveNodeName({ nodeName: '' }, 'My-Host'), 'my-host');
  t.throws(() => resolveNodeName({ nodeName: 'bad_name' }), FlagError);
});

t.test('pass-through options are checked by the daemon parser: one line, exit 2', async (t) => {
  const bad = server(['--apiserver-arg=--no-such-option=1']);
  t.equal(bad.code, 2);
  t.equal(bad.err.trim().split('\n').length, 1, 'one line');
  t.match(bad.err, /^server: --apiserver-arg: unknown option --no-such-option/);
  const badValue = server(['--nodeagent-arg=--max-pods=many']);
  t.equal(badValue.code, 2);
  t.match(badValue.err, /--nodeagent-arg: invalid value "many" for --max-pods/);
  const badScheduler = server(['--scheduler-arg=--leader-elect-resource-lock=files']);
  t.equal(badScheduler.code, 2);
  t.match(badScheduler.err, /--scheduler-arg: .*--leader-elect-resource-lock/);
  const badOwn = server(['--container-runtime=docker']);
  t.equal(badOwn.code, 2);
  t.match(badOwn.err, /--container-runtime/);
  const help = server(['--help']);
  t.equal(help.code, 0);
  t.match(help.out, /--apiserver-arg stringArray/);
});

t.test('layers: derived, then the config file, then --<daemon>-arg', async (t) => {
  const file = join(dir, 'server.yaml');
  await writeFile(file, [
    'apiserver:',
    '  --event-ttl: 2h',
    '  max-requests-inflight: 100',
    '  watch-cache-sizes: [pods#500, nodes#50]',
    'controller-manager:',
    '  concurrent-deployment-syncs: 7',
    '  controllers: ["*", "-ttl"]',
    'nodeagent:',
    '  node-labels: { zone: a, tier: web }',
    '  max-pods: 50',
    'scheduler:',
    '',
  ].join('\n'));
  const { config } = parseServerArgs([
    `--data-dir=${join(dir, 'data')}`, '--bind-address=127.0.0.1', '--secure-port=7443', '--node-name=n1',
    `--config=${file}`,
    '--apiserver-arg=--max-requests-inflight=300',
    '--nodeagent-arg=max-pods=60',
    '--scheduler-arg=--port=10259',
  ]);
  const plan = await planServer(config);
  const a = plan.apiserver.config;
  t.equal(a.eventTtl, 2 * 3600_000, 'file value');
  t.equal(a.maxRequestsInflight, 300, 'command line beats the file');
  t.same(a.watchCacheSizes, ['pods#500', 'nodes#50'], 'lists repeat the option');
  t.equal(a.securePort, 7443, 'derived from --secure-port');
  t.equal(a.dataDir, join(dir, 'data', 'db'));
  t.equal(a.logsDir, join(dir, 'data', 'logs'), '/logs/ shows <data-dir>/logs, never the data dir with its keys');
  t.equal(a.clientCaFile, join(dir, 'data', 'pki', 'ca.crt'));
  // kubeadm's secure defaults (issue 28).
  t.equal(a.anonymousAuth, true);
  t.equal(a.authorizationMode, 'Node,RBAC');
  t.ok(a.enableAdmissionPlugins.includes('NodeRestriction'));
  t.equal(plan.controllerManager.config.useServiceAccountCredentials, true);
  t.equal(a.nodeagentAllowLoopback, true, 'bound to loopback, the node is there too: the API server may reach it');
  t.equal(plan.nodeagent.config.nodeIp, '127.0.0.1');
  t.equal(plan.nodeagent.config.enableManifestApi, false, 'the manifest API stays off');
  t.equal(plan.controllerManager.config.concurrentDeploymentSyncs, 7);
  t.same(plan.controllerManager.config.controllers, ['*', '-ttl']);
  t.equal(plan.controllerManager.config.leaderElect, false);
  t.same(plan.nodeagent.config.nodeLabels, { zone: 'a', tier: 'web' }, 'maps become k=v lists');
  t.equal(plan.nodeagent.config.maxPods, 60, 'k3s-style name=value works too');
  t.equal(plan.nodeagent.config.hostnameOverride, 'n1');
  t.equal(plan.nodeagent.config.containerRuntime, 'fake');
  t.equal(plan.scheduler.config.port, 10259, 'the user option replaces the derived --port=0');
  t.equal(plan.scheduler.config.coreconfig, join(dir, 'data', 'coreconfig', 'scheduler.coreconfig'));
  t.equal(plan.apiserverUrl, 'https://127.0.0.1:7443');
  t.ok(plan.certificates.apiserverIps.includes('10.0.0.1'), 'first service IP in the SANs');
  t.ok(plan.certificates.apiserverDnsNames.includes('kubernetes.default.svc.cluster.local'));
  t.same(plan.enabled, ['apiserver', 'controller-manager', 'scheduler', 'nodeagent']);
  t.same(plan.controllerManager.warnings, [], 'no deprecation warning for the derived --port=0');
});

t.test('a node on a non-loopback address: loopback node addresses stay refused', async (t) => {
  const { config } = parseServerArgs([`--data-dir=${join(dir, 'data2')}`, '--advertise-address=192.0.2.10', '--secure-port=7443', '--node-name=n2']);
  const plan = await planServer(config);
  t.equal(plan.apiserver.config.nodeagentAllowLoopback, false);
  t.equal(plan.nodeagent.config.nodeIp, '192.0.2.10');
});

t.test('config file problems name the file and the section', async (t) => {
  t.throws(() => configFileArgs('etcd:\n  x: 1\n', 'f.yaml'), /--config f.yaml: unknown section "etcd"/);
  t.throws(() => configFileArgs('apiserver: [1]\n', 'f.yaml'), /apiserver must be a map/);
  t.throws(() => configFileArgs('apiserver:\n  a: {b: [1]}\n', 'f.yaml'), /apiserver.a/);
  const file = join(dir, 'bad.yaml');
  await writeFile(file, 'controller-manager:\n  no-such-option: 1\n');
  const r = server([`--config=${file}`, `--data-dir=${join(dir, 'never')}`]);
  t.equal(r.code, 2);
  t.match(r.err, new RegExp(`server: --config ${file} \\(controller-manager\\): unknown option --no-such-option`));
});

t.test('--disable-* leave parts out', async (t) => {
  const { config } = parseServerArgs([`--data-dir=${dir}`, '--disable-agent', '--disable-scheduler', '--node-name=x']);
  const plan = await planServer(config);
  t.same(plan.enabled, ['apiserver', 'controller-manager']);
});

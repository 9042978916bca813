// The table-driven parser: Go-style forms, defaults, repetition, feature gates, deprecation,
// and the derived config types.
import t from 'tap';
import { parseApiserverArgs, type ApiserverConfig } from '../../src/flags/apiserver.js';
import { parseControllerManagerArgs, type ControllerManagerConfig } from '../../src/flags/controller-manager.js';
import { parseNodeagentArgs, type NodeagentConfig } from '../../src/flags/nodeagent.js';
import { parseSchedulerArgs, type SchedulerConfig } from '../../src/flags/scheduler.js';
import { FlagError } from '../../src/flags/flag-error.js';
import { camelCase } from '../../src/flags/option-spec.js';
import { enabledControllers } from '../../src/flags/known-names.js';

type Asserts = Pick<typeof t, 'fail' | 'ok' | 'match' | 'equal' | 'notOk'>;

function flagError(t: Asserts, fn: () => unknown, option: string | undefined, pattern: RegExp): void {
  try {
    fn();
    t.fail(`expected a FlagError matching ${pattern}`);
  } catch (err) {
    t.ok(err instanceof FlagError, 'FlagError');
    if (err instanceof FlagError) {
      t.match(err.message, pattern);
      if (option !== undefined) t.equal(err.option, option);
      t.notOk(err.message.includes('\n'), 'one line');
    }
  }
}

t.test('derived config types use camelCase field names', async (t) => {
  const a: ApiserverConfig = parseApiserverArgs([]).config;
  const servers: string[] = a.kvstoreServers;
  const range: { base: number; size: number } = a.serviceNodePortRange;
  const cm: ControllerManagerConfig = parseControllerManagerArgs([]).config;
  const rc: number = cm.concurrentRcSyncs;
  const qps: number = cm.coreApiQps;
  const n: NodeagentConfig = parseNodeagentArgs([]).config;
  const taints: { key: string; value: string; effect: string }[] = n.registerWithTaints;
  const s: SchedulerConfig = parseSchedulerArgs([]).config;
  t.same(servers, []);
  t.same(range, { base: 30000, size: 2768 });
  t.equal(rc, 5);
  t.equal(qps, 20);
  t.same(taints, []);
  t.equal(s.port, 10251);
  t.equal(s.schedulerName, 'default-scheduler');
  t.equal(camelCase('concurrent_rc_syncs'), 'concurrentRcSyncs');
  t.equal(camelCase('runtimeA-disable-shared-pid'), 'runtimeADisableSharedPid');
});

t.test('defaults are filled with typed values', async (t) => {
  const a = parseApiserverArgs([]).config;
  t.equal(a.securePort, 6443);
  t.equal(a.requestTimeout, 60_000, 'duration in ms');
  t.equal(a.bindAddress, '0.0.0.0');
  t.equal(a.serviceClusterIpRange, '10.0.0.0/24');
  t.equal(a.anonymousAuth, true);
  t.equal(a.advertiseAddress, '', 'no default: zero value');
  t.equal(a.auditLogMaxage, 0);
  t.same(a.oidcSigningAlgs, ['RS256']);
  t.same(a.nodeagentPreferredAddressTypes, ['Hostname', 'InternalDNS', 'InternalIP', 'ExternalDNS', 'ExternalIP']);
  t.same(a.runtimeConfig, {});
  t.equal(a.dataDir, '/var/lib/core');
  t.equal(a.v, 0);
  t.equal(a.logFormat, 'json');
  t.equal(a.featureGates['AdvancedAuditing'], true);
  t.equal(a.featureGates['TokenRequest'], false);
  const cm = parseControllerManagerArgs([]).config;
  t.same(cm.controllers, ['*']);
  t.equal(cm.experimentalClusterSigningDuration, 8760 * 3600 * 1000);
  t.equal(cm.horizontalPodAutoscalerTolerance, 0.1);
  const n = parseNodeagentArgs([]).config;
  t.same(n.evictionHard, { 'imagefs.available': '15%', 'memory.available': '100Mi', 'nodefs.available': '10%', 'nodefs.inodesFree': '5%' });
  t.same(n.enforceNodeAllocatable, ['pods']);
  t.equal(n.oomScoreAdj, -999);
  t.equal(n.featureGates['AllowExtTrafficLocalEndpoints'], true);
});

t.test('Go-style forms', async (t) => {
  const a = parseApiserverArgs(['--secure-port=7443', '--bind-address', '127.0.0.1', '-v=3', '--watch-cache=false', '--profiling', '--kvstore-servers=http://127.0.0.1:2379']).config;
  t.equal(a.securePort, 7443);
  t.equal(a.bindAddress, '127.0.0.1');
  t.equal(a.v, 3);
  t.equal(a.watchCache, false);
  t.equal(a.profiling, true);
  t.same(a.kvstoreServers, ['http://127.0.0.1:2379']);
  t.equal(parseApiserverArgs(['-v', '4']).config.v, 4);
  t.equal(parseApiserverArgs(['-v5']).config.v, 5);
  t.equal(parseApiserverArgs(['--v=2']).config.v, 2);
  t.equal(parseApiserverArgs(['--anonymous-auth', 'x=1'].slice(0, 1)).config.anonymousAuth, true);
  t.equal(parseApiserverArgs(['--help']).config.help, true);
  t.equal(parseApiserverArgs(['-h']).config.help, true);
  t.equal(parseApiserverArgs(['--version']).config.version, true);
  t.equal(parseApiserverArgs(['--version=raw']).config.version, 'raw');
  t.equal(parseApiserverArgs(['--version=false']).config.version, false);
  t.equal(parseApiserverArgs(['--']).config.securePort, 6443);
});

t.test('underscores and dashes are interchangeable', async (t) => {
  t.equal(parseControllerManagerArgs(['--concurrent_rc_syncs=9']).config.concurrentRcSyncs, 9);
  t.equal(parseControllerManagerArgs(['--concurrent-rc-syncs=8']).config.concurrentRcSyncs, 8);
  t.equal(parseControllerManagerArgs(['--concurrent_deployment_syncs=7']).config.concurrentDeploymentSyncs, 7);
});

t.test('bad command lines', async (t) => {
  flagError(t, () => parseApiserverArgs(['--no-such-option=1']), undefined, /unknown option --no-such-option/);
  flagError(t, () => parseApiserverArgs(['-x']), undefined, /unknown option -x/);
  flagError(t, () => parseApiserverArgs(['--secure-prot=1']), undefined, /did you mean --secure-port\?/);
  flagError(t, () => parseApiserverArgs(['-secure-port=1']), undefined, /two dashes: --secure-port=1/);
  flagError(t, () => parseApiserverArgs(['stray']), undefined, /unexpected argument "stray"/);
  flagError(t, () => parseApiserverArgs(['--', 'stray']), undefined, /unexpected argument "stray"/);
  flagError(t, () => parseApiserverArgs(['--secure-port']), 'secure-port', /--secure-port needs a value/);
  flagError(t, () => parseApiserverArgs(['--secure-port=abc']), 'secure-port', /invalid value "abc" for --secure-port/);
  flagError(t, () => parseApiserverArgs(['--watch-cache=maybe']), 'watch-cache', /--watch-cache/);
  flagError(t, () => parseApiserverArgs(['--bind-address=1.2.3']), 'bind-address', /--bind-address: not an IP/);
  flagError(t, () => parseApiserverArgs(['--request-timeout=10']), 'request-timeout', /--request-timeout/);
  flagError(t, () => parseApiserverArgs(['--service-cluster-ip-range=10.0.0.0']), 'service-cluster-ip-range', /CIDR/);
  flagError(t, () => parseApiserverArgs(['--service-node-port-range=2-1']), 'service-node-port-range', /range/);
  flagError(t, () => parseApiserverArgs(['--version=full']), 'version', /--version/);
});

t.test('repetition: scalars keep the last, slices replace the default then append, maps merge', async (t) => {
  t.equal(parseApiserverArgs(['--secure-port=1', '--secure-port=2']).config.securePort, 2);
  t.same(parseApiserverArgs(['--oidc-signing-algs=ES256', '--oidc-signing-algs=PS256,RS512']).config.oidcSigningAlgs, ['ES256', 'PS256', 'RS512']);
  t.same(parseApiserverArgs(['--service-account-key-file=a', '--service-account-key-file=b,c']).config.serviceAccountKeyFile, ['a', 'b,c']);
  t.same(parseApiserverArgs(['--runtime-config=api/all=false', '--runtime-config=apps/v1=true']).config.runtimeConfig, { 'api/all': 'false', 'apps/v1': 'true' });
  t.same(parseApiserverArgs(['--tls-sni-cert-key=a,b', '--tls-sni-cert-key=c,d:x.io']).config.tlsSniCertKey, [
    { certFile: 'a', keyFile: 'b', names: [] }, { certFile: 'c', keyFile: 'd', names: ['x.io'] },
  ]);
  t.same(parseNodeagentArgs(['--eviction-hard=memory.available<1Gi']).config.evictionHard, { 'memory.available': '1Gi' }, 'explicit map replaces the default');
  t.equal(parseNodeagentArgs(['--manifest-url-header=a:1', '--manifest-url-header=b:2']).config.manifestUrlHeader, 'a:1,b:2');
  t.same(parseNodeagentArgs(['--register-with-taints=a=b:NoSchedule', '--register-with-taints=c:NoExecute']).config.registerWithTaints.length, 2);
});

t.test('feature gates resolve fully', async (t) => {
  const g = parseApiserverArgs(['--feature-gates=TokenRequest=true,APIListChunking=false']).config.featureGates;
  t.equal(g['TokenRequest'], true);
  t.equal(g['APIListChunking'], false);
  t.equal(g['AdvancedAuditing'], true, 'others keep defaults');
  t.equal(Object.keys(g).length, 47, 'every gate present');
  const all = parseApiserverArgs(['--feature-gates=AllAlpha=true,PodPriority=false']).config.featureGates;
  t.equal(all['Initializers'], true, 'AllAlpha turns alpha gates on');
  t.equal(all['TokenRequest'], true);
  t.equal(all['PodPriority'], false, 'explicit setting wins over AllAlpha');
  t.equal(all['ExperimentalHostUserNamespaceDefaulting'], false, 'beta gates untouched');
  const merged = parseApiserverArgs(['--feature-gates=TokenRequest=true', '--feature-gates=RunAsGroup=true']).config.featureGates;
  t.ok(merged['TokenRequest'] && merged['RunAsGroup'], 'repeated --feature-gates merge');
  flagError(t, () => parseApiserverArgs(['--feature-gates=NoSuchGate=true']), 'feature-gates', /unknown feature gate "NoSuchGate"/);
  flagError(t, () => parseApiserverArgs(['--feature-gates=TokenRequest=yes']), 'feature-gates', /not a boolean/);
  flagError(t, () => parseNodeagentArgs(['--feature-gates=GCERegionalPersistentDisk=true']), 'feature-gates', /unknown feature gate/);
  t.equal(parseNodeagentArgs(['--feature-gates=NodeagentConfigFile=true']).config.featureGates['NodeagentConfigFile'], true);
});

t.test('deprecated options work and warn once', async (t) => {
  const r = parseControllerManagerArgs(['--address=127.0.0.1', '--port=0', '--port=0']);
  t.equal(r.config.address, '127.0.0.1');
  t.equal(r.config.port, 0);
  t.equal(r.warnings.length, 2);
  t.match(r.warnings[0], /--address is deprecated/);
  t.match(r.warnings[1], /--port is deprecated/);
  t.same(parseApiserverArgs(['--master-service-namespace=kube']).warnings.length, 1);
  t.same(parseApiserverArgs(['--nodeagent-read-only-port=1']).warnings.length, 1);
  const n = parseNodeagentArgs(['--experimental-bootstrap-coreconfig=/b.conf']);
  t.equal(n.config.bootstrapCoreconfig, '/b.conf', 'old name fills the new option');
  t.match(n.warnings[0], /use --bootstrap-coreconfig/);
  t.equal(parseNodeagentArgs(['--experimental-bootstrap-coreconfig=/b', '--bootstrap-coreconfig=/a']).config.bootstrapCoreconfig, '/a', 'new name wins');
  t.same(parseApiserverArgs([]).warnings, []);
});

t.test('--help and --version skip cross-option checks', async (t) => {
  t.equal(parseNodeagentArgs(['--runonce', '--help']).config.help, true);
  t.equal(parseNodeagentArgs(['--runonce', '--version']).config.version, true);
});

t.test('controller selection', async (t) => {
  const all = enabledControllers(['*']);
  t.equal(all.length, 32, "the reference's 30 on-by-default controllers, root-ca-cert-publisher and endpointslice (ours)");
  t.ok(all.includes('root-ca-cert-publisher'));
  t.notOk(all.includes('tokencleaner'));
  t.same(enabledControllers(['*', '-job', 'tokencleaner']).filter((n) => n === 'job' || n === 'tokencleaner'), ['tokencleaner']);
  t.same(enabledControllers(['job']), ['job']);
});

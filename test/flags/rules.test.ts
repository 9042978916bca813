// Each cross-option rule and enumeration: a bad command line is refused with one line naming
// the option, and a near-identical good one is accepted (so a missing rule fails here).
import t from 'tap';
import { parseApiserverArgs } from '../../src/flags/apiserver.js';
import { parseControllerManagerArgs } from '../../src/flags/controller-manager.js';
import { parseNodeagentArgs } from '../../src/flags/nodeagent.js';
import { parseSchedulerArgs } from '../../src/flags/scheduler.js';
import { FlagError } from '../../src/flags/flag-error.js';

type Parse = (argv: readonly string[]) => unknown;
const daemons: Record<string, Parse> = {
  apiserver: parseApiserverArgs,
  cm: parseControllerManagerArgs,
  nodeagent: parseNodeagentArgs,
  scheduler: parseSchedulerArgs,
};

/** [daemon, rejected argv, option named, message pattern, accepted argv] */
type Case = [string, string[], string, RegExp, string[]];

const cases: Record<string, Case[]> = {
  'gate dependencies': [
    ['nodeagent', ['--config=/etc/na.yaml'], 'config', /requires feature gate NodeagentConfigFile/, ['--config=/etc/na.yaml', '--feature-gates=NodeagentConfigFile=true']],
    ['nodeagent', ['--dynamic-config-dir=/d'], 'dynamic-config-dir', /DynamicNodeagentConfig/, ['--dynamic-config-dir=/d', '--feature-gates=DynamicNodeagentConfig=true']],
    ['apiserver', ['--audit-log-format=legacy', '--feature-gates=AdvancedAuditing=false'], 'audit-log-format', /AdvancedAuditing/, ['--audit-log-format=legacy']],
    ['apiserver', ['--audit-policy-file=/p', '--feature-gates=AdvancedAuditing=false'], 'audit-policy-file', /AdvancedAuditing/, ['--audit-policy-file=/p']],
    ['apiserver', ['--audit-webhook-config-file=/w', '--feature-gates=AdvancedAuditing=false'], 'audit-webhook-config-file', /AdvancedAuditing/, ['--audit-webhook-config-file=/w']],
    ['apiserver', ['--service-account-signing-key-file=/k'], 'service-account-signing-key-file', /TokenRequest/, ['--service-account-signing-key-file=/k', '--feature-gates=TokenRequest=true']],
    ['apiserver', ['--service-account-signing-key-file=/k', '--feature-gates=AllAlpha=true,TokenRequest=false'], 'service-account-signing-key-file', /TokenRequest/, ['--service-account-signing-key-file=/k', '--feature-gates=AllAlpha=true']],
  ],
  'numeric relations and ranges': [
    ['cm', ['--leader-elect-renew-deadline=20s'], 'leader-elect-renew-deadline', /must not exceed --leader-elect-lease-duration/, ['--leader-elect-renew-deadline=15s']],
    ['cm', ['--leader-elect-lease-duration=5s'], 'leader-elect-renew-deadline', /must not exceed/, ['--leader-elect-lease-duration=5s', '--leader-elect-renew-deadline=4s']],
    ['scheduler', ['--leader-elect-renew-deadline=1m'], 'leader-elect-renew-deadline', /must not exceed/, ['--leader-elect-renew-deadline=3s']],
    ['cm', ['--attach-detach-reconcile-sync-period=1s'], 'attach-detach-reconcile-sync-period', /longer than 1s/, ['--attach-detach-reconcile-sync-period=1001ms']],
    ['cm', ['--cluster-cidr=10.244.0.0/16'], 'cluster-cidr', /requires --allocate-node-cidrs/, ['--cluster-cidr=10.244.0.0/16', '--allocate-node-cidrs']],
    ['cm', ['--service-cluster-ip-range=10.96.0.0/12'], 'service-cluster-ip-range', /requires --allocate-node-cidrs/, ['--service-cluster-ip-range=10.96.0.0/12', '--allocate-node-cidrs=true']],
    ['cm', ['--cluster-cidr=banana', '--allocate-node-cidrs'], 'cluster-cidr', /not a CIDR/, ['--cluster-cidr=10.0.0.0/8', '--allocate-node-cidrs']],
    ['nodeagent', ['--oom-score-adj=-1001'], 'oom-score-adj', /\[-1000,1000\]/, ['--oom-score-adj=-1000']],
    ['nodeagent', ['--oom-score-adj=1001'], 'oom-score-adj', /\[-1000,1000\]/, ['--oom-score-adj=1000']],
    ['nodeagent', ['--iptables-drop-bit=32'], 'iptables-drop-bit', /\[0,31\]/, ['--iptables-drop-bit=31']],
    ['nodeagent', ['--iptables-masquerade-bit=-1'], 'iptables-masquerade-bit', /\[0,31\]/, ['--iptables-masquerade-bit=0']],
    ['nodeagent', ['--image-gc-high-threshold=70'], 'image-gc-high-threshold', /must not be below --image-gc-low-threshold/, ['--image-gc-high-threshold=80']],
    ['nodeagent', ['--runonce'], 'runonce', /--enable-server/, ['--runonce', '--enable-server=false']],
    ['apiserver', ['--apiserver-count=0'], 'apiserver-count', /positive/, ['--apiserver-count=3']],
    ['apiserver', ['--core-service-node-port=30000', '--service-node-port-range=31000-31999'], 'core-service-node-port', /30000 must be within --service-node-port-range 31000-31999/, ['--core-service-node-port=31000', '--service-node-port-range=31000-31999']],
    ['apiserver', ['--core-service-node-port=32768'], 'core-service-node-port', /must be within --service-node-port-range 30000-32767/, ['--core-service-node-port=32767']],
    ['apiserver', ['--core-service-node-port=-1'], 'core-service-node-port', /must be within/, ['--core-service-node-port=0']],
    ['apiserver', ['--oidc-issuer-url=http://issuer', '--oidc-client-id=x'], 'oidc-issuer-url', /https/, ['--oidc-issuer-url=https://issuer', '--oidc-client-id=x']],
    ['apiserver', ['--oidc-issuer-url=https://issuer'], 'oidc-client-id', /required/, ['--oidc-issuer-url=https://issuer', '--oidc-client-id=x']],
  ],
  enumerations: [
    ['apiserver', ['--authorization-mode=RBAC,Magic'], 'authorization-mode', /"Magic" is not one of/, ['--authorization-mode=Node,RBAC,ABAC,Webhook,AlwaysDeny,AlwaysAllow']],
    ['nodeagent', ['--authorization-mode=RBAC'], 'authorization-mode', /not one of AlwaysAllow, Webhook/, ['--authorization-mode=Webhook']],
    ['apiserver', ['--audit-log-mode=async'], 'audit-log-mode', /not one of blocking, batch/, ['--audit-log-mode=batch']],
    ['apiserver', ['--audit-webhook-mode=sometimes'], 'audit-webhook-mode', /not one of/, ['--audit-webhook-mode=blocking']],
    ['apiserver', ['--audit-log-format=yaml'], 'audit-log-format', /not one of json, legacy/, ['--audit-log-format=json']],
    ['apiserver', ['--storage-backend=kvstore4'], 'storage-backend', /not one of kvstore3, kvstore2/, ['--storage-backend=kvstore2']],
    ['apiserver', ['--endpoint-reconciler-type=dns'], 'endpoint-reconciler-type', /not one of/, ['--endpoint-reconciler-type=lease']],
    ['cm', ['--leader-elect-resource-lock=secrets'], 'leader-elect-resource-lock', /not one of/, ['--leader-elect-resource-lock=leases']],
    ['nodeagent', ['--container-runtime=rkt'], 'container-runtime', /not one of/, ['--container-runtime=fake']],
    ['nodeagent', ['--cgroup-driver=cgroupv2'], 'cgroup-driver', /not one of cgroupfs, systemd/, ['--cgroup-driver=systemd']],
    ['nodeagent', ['--hairpin-mode=bridge'], 'hairpin-mode', /not one of/, ['--hairpin-mode=hairpin-veth']],
    ['apiserver', ['--tls-min-version=TLS12'], 'tls-min-version', /not one of VersionTLS10/, ['--tls-min-version=VersionTLS12']],
    ['cm', ['--tls-min-version=VersionTLS14'], 'tls-min-version', /not one of/, ['--tls-min-version=VersionTLS13']],
    ['apiserver', ['--tls-cipher-suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,AES128-SHA'], 'tls-cipher-suites', /unknown cipher suite "AES128-SHA"/, ['--tls-cipher-suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_AES_128_GCM_SHA256']],
    ['cm', ['--controllers=*,-nosuch'], 'controllers', /unknown controller "nosuch"/, ['--controllers=*,-ttl,tokencleaner']],
    ['apiserver', ['--enable-admission-plugins=NamespaceLifecycle,Bogus'], 'enable-admission-plugins', /"Bogus" is not one of/, ['--enable-admission-plugins=NamespaceLifecycle,NodeRestriction']],
    ['apiserver', ['--disable-admission-plugins=Bogus'], 'disable-admission-plugins', /not one of/, ['--disable-admission-plugins=ServiceAccount']],
    ['apiserver', ['--log-format=xml'], 'log-format', /not one of json, text/, ['--log-format=text']],
  ],
  'value syntax': [
    ['apiserver', ['--runtime-config=apps/v1=maybe'], 'runtime-config', /true or false/, ['--runtime-config=apps/v1=false']],
    ['apiserver', ['--runtime-config=Apps/v1=true'], 'runtime-config', /not api\/all/, ['--runtime-config=api/all=true,api/legacy=false,v1=true,batch/v2alpha1,apps/v1/deployments=false']],
    ['apiserver', ['--runtime-config=apps/version1=true'], 'runtime-config', /not api\/all/, ['--runtime-config=rbac.authorization.k8s.io/v1beta1=true']],
    ['apiserver', ['--storage-versions=apps/v1,bogus'], 'storage-versions', /not group\/version/, ['--storage-versions=apps/v1,v1,extensions=apps/v1beta1']],
    ['apiserver', ['--watch-cache-sizes=pods=100'], 'watch-cache-sizes', /resource\[\.group\]#size/, ['--watch-cache-sizes=pods#1000,deployments.apps#50']],
    ['apiserver', ['--watch-cache-sizes=pods#many'], 'watch-cache-sizes', /resource/, ['--watch-cache-sizes=pods#0']],
    ['apiserver', ['--kvstore-servers-overrides=events#http://127.0.0.1:2379'], 'kvstore-servers-overrides', /group\/resource#servers/, ['--kvstore-servers-overrides=/events#http://127.0.0.1:2379;http://127.0.0.1:2380']],
    ['apiserver', ['--kvstore-servers-overrides=apps/deployments#127.0.0.1:2379'], 'kvstore-servers-overrides', /bad server/, ['--kvstore-servers-overrides=apps/deployments#https://127.0.0.1:2379']],
    ['nodeagent', ['--eviction-hard=memory.free<100Mi'], 'eviction-hard', /unknown eviction signal "memory.free"/, ['--eviction-hard=memory.available<100Mi,pid.available<5%']],
    ['nodeagent', ['--eviction-hard=memory.available<lots'], 'eviction-hard', /quantity or percentage/, ['--eviction-hard=memory.available<1.5Gi']],
    ['nodeagent', ['--eviction-hard=nodefs.available<120%'], 'eviction-hard', /percentage/, ['--eviction-hard=nodefs.available<12.5%']],
    ['nodeagent', ['--eviction-soft=memory.available<1Gi'], 'eviction-soft-grace-period', /grace period for soft threshold "memory.available"/, ['--eviction-soft=memory.available<1Gi', '--eviction-soft-grace-period=memory.available=1m30s']],
    ['nodeagent', ['--eviction-soft-grace-period=memory.available=soon'], 'eviction-soft-grace-period', /not a duration/, ['--eviction-soft-grace-period=memory.available=90s']],
    ['nodeagent', ['--eviction-minimum-reclaim=imagefs.size=2Gi'], 'eviction-minimum-reclaim', /unknown eviction signal/, ['--eviction-minimum-reclaim=imagefs.available=2Gi']],
    ['nodeagent', ['--register-with-taints=a=b:Never'], 'register-with-taints', /unknown effect/, ['--register-with-taints=a=b:NoSchedule,c:NoExecute']],
    ['nodeagent', ['--system-reserved=gpu=1'], 'system-reserved', /unknown resource "gpu"/, ['--system-reserved=cpu=500m,memory=1Gi']],
    ['nodeagent', ['--experimental-qos-reserved=memory=150%'], 'experimental-qos-reserved', /percentage/, ['--experimental-qos-reserved=memory=50%']],
    ['nodeagent', ['--enforce-node-allocatable=pods,system-reserved'], 'enforce-node-allocatable', /--system-reserved-cgroup/, ['--enforce-node-allocatable=pods,system-reserved', '--system-reserved-cgroup=/system.slice']],
  ],
};

for (const [title, list] of Object.entries(cases)) {
  t.test(title, async (t) => {
    for (const [daemon, bad, option, pattern, good] of list) {
      const parse = daemons[daemon];
      if (!parse) throw new Error(`no daemon ${daemon}`);
      const label = `${daemon} ${bad.join(' ')}`;
      let caught: unknown;
      try {
        parse(bad);
      } catch (err) {
        caught = err;
      }
      t.ok(caught instanceof FlagError, `${label}: refused`);
      if (caught instanceof FlagError) {
        t.match(caught.message, pattern, `${label}: message`);
        t.match(caught.message, `--${option}`, `${label}: names --${option}`);
        t.equal(caught.option, option, `${label}: option field`);
        t.notOk(caught.message.includes('\n'), `${label}: one line`);
      }
      t.doesNotThrow(() => parse(good), `${daemon} ${good.join(' ')}: accepted`);
    }
  });
}

t.test('gate-dependent options are only checked when given', async (t) => {
  t.doesNotThrow(() => parseApiserverArgs(['--feature-gates=AdvancedAuditing=false']), 'audit-log-format default does not trip the rule');
});

/**
 * `corectl server` options (all ours: the reference has no all-in-one server). The server runs
 * the API server, controller manager, scheduler and node agent in one process; every option of
 * those daemons stays reachable through a prefixed pass-through (`--apiserver-arg=--name=value`,
 * repeatable) or a `--config` YAML file, and each pass-through is checked by that daemon's own
 * parser, so a bad one fails here, before anything starts, with one line naming it.
 */
import { G, HELP_VERSION_GATES, OURS_LOGGING } from './common-options.js';
import { APISERVER_FLAGS } from './apiserver.js';
import { CONTROLLER_MANAGER_FLAGS } from './controller-manager.js';
import { FlagError } from './flag-error.js';
import { NODEAGENT_FLAGS } from './nodeagent.js';
import { PROXY_FLAGS } from './proxy.js';
import { parseDaemonArgs, type CrossRule, type DaemonFlagSet, type ParseResult } from './parser.js';
import { SCHEDULER_FLAGS } from './scheduler.js';
import type { ConfigOf, OptionSpec } from './option-spec.js';

const S = {
  cluster: 'Cluster',
  node: 'Node',
  parts: 'Daemons and their options',
} as const;

const [HELP, VERSION, , LOG_FLUSH] = HELP_VERSION_GATES;

export const SERVER_OPTIONS = [
  { ...HELP, ours: true },
  { ...VERSION, ours: true },
  { ...LOG_FLUSH, ours: true },
  { name: 'data-dir', type: 'string', default: '/var/lib/core', group: S.cluster, ours: true, description: 'Directory of the whole cluster: pki/, the embedded store (db/), admin.coreconfig, node agent files; reused on restart.' },
  { name: 'bind-address', type: 'ip', default: '0.0.0.0', group: S.cluster, ours: true, description: 'Listen address of the API server and the node agent; 0.0.0.0 or :: for all interfaces.' },
  { name: 'secure-port', type: 'int', default: '6443', group: S.cluster, ours: true, description: 'HTTPS port of the API server.' },
  { name: 'advertise-address', type: 'ip', group: S.cluster, ours: true, description: 'Address announced to cluster members and put into the serving certificate; default --bind-address unless unspecified, else the first non-loopback IPv4.' },
  { name: 'node-name', type: 'string', group: S.node, ours: true, description: 'Name of this node; default the host name (lower case).' },
  { name: 'container-runtime', type: 'string', oneOf: ['remote', 'fake'], group: S.node, ours: true, description: 'remote (CRI at --container-runtime-endpoint, e.g. containerd) or fake (simulated containers); default remote when an endpoint is given, else fake.' },
  { name: 'container-runtime-endpoint', type: 'string', group: S.node, ours: true, description: 'CRI endpoint of the container runtime, e.g. unix:///run/containerd/containerd.sock.' },
  { name: 'disable-agent', type: 'bool', group: S.parts, ours: true, description: 'Do not run the node agent (a control plane without a node).' },
  { name: 'disable-scheduler', type: 'bool', group: S.parts, ours: true, description: 'Do not run the scheduler.' },
  { name: 'disable-controller-manager', type: 'bool', group: S.parts, ours: true, description: 'Do not run the controller manager.' },
  { name: 'disable-cluster-dns', type: 'bool', group: S.parts, ours: true, description: 'Do not run the cluster DNS (the kube-dns Service\'s server); pods then get the host\'s resolvers.' },
  { name: 'cluster-dns-port', type: 'int', default: '53', group: S.parts, ours: true, description: 'Port of the cluster DNS on the node\'s address (UDP and TCP); pods\' resolv.conf can only name port 53, so another port serves only through the kube-dns Service.' },
  { name: 'disable-metrics-server', type: 'bool', group: S.parts, ours: true, description: 'Do not run the metrics server (the metrics.k8s.io API of kubectl top and the autoscaler).' },
  { name: 'disable-proxy', type: 'bool', group: S.parts, ours: true, description: 'Do not run the service proxy (it runs only as root, with the nft command and a CRI runtime).' },
  { name: 'disable-local-storage', type: 'bool', group: S.parts, ours: true, description: 'Do not create the default StorageClass local-path (claims then need volumes or a class of their own).' },
  { name: 'local-storage-helper-image', type: 'string', default: 'docker.io/library/busybox:1.36', group: S.parts, ours: true, description: 'Image of the helper pod that removes a deleted local-path volume\'s directory on its node (needs rm).' },
  { name: 'config', type: 'string', group: S.parts, ours: true, description: 'YAML file with maps apiserver:, controller-manager:, scheduler:, nodeagent:, proxy: of option name to value (lists repeat the option, maps become k=v,...); the --<daemon>-arg options win over it.' },
  { name: 'apiserver-arg', type: 'stringArray', group: S.parts, ours: true, description: 'One API server option, e.g. --apiserver-arg=--audit-log-path=- (repeatable; the leading -- may be left out).' },
  { name: 'controller-manager-arg', type: 'stringArray', group: S.parts, ours: true, description: 'One controller manager option, e.g. --controller-manager-arg=--concurrent-deployment-syncs=10 (repeatable).' },
  { name: 'scheduler-arg', type: 'stringArray', group: S.parts, ours: true, description: 'One scheduler option, e.g. --scheduler-arg=--port=10251 (repeatable).' },
  { name: 'nodeagent-arg', type: 'stringArray', group: S.parts, ours: true, description: 'One node agent option, e.g. --nodeagent-arg=--max-pods=250 (repeatable).' },
  { name: 'proxy-arg', type: 'stringArray', group: S.parts, ours: true, description: 'One service proxy option, e.g. --proxy-arg=--cluster-cidr=10.42.0.0/16 (repeatable).' },
  ...OURS_LOGGING,
] as const satisfies readonly OptionSpec[];

export type ServerConfig = ConfigOf<typeof SERVER_OPTIONS>;

/** The daemons the server runs, in start order. */
export const SERVER_PARTS = ['apiserver', 'controller-manager', 'scheduler', 'nodeagent', 'proxy'] as const;
export type ServerPart = typeof SERVER_PARTS[number];

/** Each part's option table, by the name used in `--<part>-arg` and in the config file. */
export const PART_FLAGS: { readonly [P in ServerPart]: DaemonFlagSet<unknown> } = {
  apiserver: APISERVER_FLAGS as unknown as DaemonFlagSet<unknown>,
  'controller-manager': CONTROLLER_MANAGER_FLAGS as unknown as DaemonFlagSet<unknown>,
  scheduler: SCHEDULER_FLAGS as unknown as DaemonFlagSet<unknown>,
  nodeagent: NODEAGENT_FLAGS as unknown as DaemonFlagSet<unknown>,
  proxy: PROXY_FLAGS as unknown as DaemonFlagSet<unknown>,
};

/** The pass-through values of one part from the server config. */
export function passThroughArgs(config: ServerConfig, part: ServerPart): string[] {
  const list = {
    apiserver: config.apiserverArg,
    'controller-manager': config.controllerManagerArg,
    scheduler: config.schedulerArg,
    nodeagent: config.nodeagentArg,
    proxy: config.proxyArg,
  }[part];
  // k3s style (name=value without dashes) is accepted too.
  return list.map((a) => (a.startsWith('-') ? a : `--${a}`));
}

/**
 * Parses `args` with the part's own table; a FlagError is re-thrown naming where the option
 * came from (`--apiserver-arg`, or the config file section).
 */
export function parsePartArgs(part: ServerPart, args: readonly string[], source: string): ParseResult<unknown> {
  try {
    return parseDaemonArgs(PART_FLAGS[part], args);
  } catch (e) {
    if (e instanceof FlagError) throw new FlagError(`${source}: ${e.message}`, e.option);
    throw e;
  }
}

/** Every pass-through list must parse on its own in its daemon's table. */
const PASS_THROUGH_RULES: CrossRule<ServerConfig>[] = SERVER_PARTS.map((part) => ({
  option: `${part}-arg`,
  check: (config: ServerConfig): string | undefined => {
    const args = passThroughArgs(config, part);
    if (args.length === 0) return undefined;
    try {
      parsePartArgs(part, args, `--${part}-arg`);
      return undefined;
    } catch (e) {
      if (e instanceof FlagError) return e.message;
      throw e;
    }
  },
}));

export const SERVER_FLAGS: DaemonFlagSet<ServerConfig> = {
  daemon: 'server',
  summary: 'Runs a whole one-node cluster in one process: API server, controller manager, scheduler and node agent (beyond the reference).',
  options: SERVER_OPTIONS,
  gates: [],
  rules: PASS_THROUGH_RULES,
  groups: [G.generic, S.cluster, S.node, S.parts, G.logging, G.ours],
};

export function parseServerArgs(argv: readonly string[]): ParseResult<ServerConfig> {
  return parseDaemonArgs(SERVER_FLAGS, argv);
}

/**
 * `corectl proxy` options: kube-proxy's options that apply to a service proxy programming
 * nftables or iptables, with --coreconfig in place of --kubeconfig.
 */
import { G, HELP_VERSION_GATES, OURS_LOGGING } from './common-options.js';
import { CONTROL_PLANE_GATES } from './feature-gates.js';
import { parseDaemonArgs, type CrossRule, type DaemonFlagSet, type ParseResult } from './parser.js';
import type { ConfigOf, OptionSpec } from './option-spec.js';

const P = { proxy: 'Service proxy' } as const;

export const PROXY_OPTIONS = [
  ...HELP_VERSION_GATES,
  { name: 'coreconfig', type: 'string', group: G.client, description: 'coreconfig file with the API server location and credentials.' },
  { name: 'master', type: 'string', group: G.client, description: 'API server address; overrides the coreconfig file.' },
  { name: 'core-api-qps', type: 'float32', default: '5', group: G.client, description: 'Sustained requests per second to the API server.' },
  { name: 'core-api-burst', type: 'int32', default: '10', group: G.client, description: 'Burst of requests to the API server.' },
  { name: 'core-api-content-type', type: 'string', default: 'application/vnd.kubernetes.protobuf', group: G.client, description: 'Content type of requests sent to the API server.' },
  { name: 'proxy-mode', type: 'string', default: 'nftables', oneOf: ['nftables', 'iptables'], group: P.proxy, description: 'How services are programmed: nftables (one table of ours through the nft command) or iptables (chains of ours, CPX-*, through iptables-restore, with one jump from each built-in chain it hooks).' },
  { name: 'cluster-cidr', type: 'string', group: P.proxy, description: 'CIDR of the pods (comma-separated for dual stack); traffic to a service from outside it is masqueraded. Empty: only hairpin and external traffic are.' },
  { name: 'hostname-override', type: 'string', group: P.proxy, description: 'Name of this node (endpoints on it are local); default the host name.' },
  { name: 'iptables-masquerade-bit', type: 'int32', default: '14', group: P.proxy, description: 'Bit of the packet mark that asks for SNAT; range [0,31].' },
  { name: 'masquerade-all', type: 'bool', group: P.proxy, description: 'SNAT all traffic sent to a service address.' },
  { name: 'nodeport-addresses', type: 'stringSlice', group: P.proxy, description: 'CIDRs (or "primary") of the node addresses NodePorts accept connections on; default every local address but loopback.' },
  { name: 'sync-period', type: 'duration', default: '30s', group: P.proxy, description: 'Longest time between full rewrites of the rules; must be greater than 0.' },
  { name: 'min-sync-period', type: 'duration', default: '1s', group: P.proxy, description: 'Shortest time between rule syncs; changes within it are batched into one transaction. 0 syncs on every change.' },
  { name: 'config-sync-period', type: 'duration', default: '15m', group: P.proxy, description: 'How often the Service and EndpointSlice caches are resynced; must be greater than 0.' },
  { name: 'healthz-bind-address', type: 'string', default: '0.0.0.0:10256', group: P.proxy, description: 'host:port of the /healthz server; empty switches it off.' },
  { name: 'metrics-bind-address', type: 'string', default: '127.0.0.1:10249', group: P.proxy, description: 'host:port of the /metrics server; empty switches it off.' },
  { name: 'cleanup', type: 'bool', group: P.proxy, description: 'Remove every rule of ours (the nftables table and the iptables chains and jumps) and exit.' },
  ...OURS_LOGGING,
  { name: 'cleanup-on-exit', type: 'bool', group: G.ours, ours: true, description: 'Remove the rules when stopping (corectl server sets it: its routes live as long as it runs). Default: keep them, so that traffic flows across a restart.' },
  { name: 'nft-table', type: 'string', default: 'corectl-proxy', group: G.ours, ours: true, description: 'Name of the nftables table (family ip) the proxy owns in the nftables mode; it touches nothing outside it.' },
] as const satisfies readonly OptionSpec[];

export type ProxyConfig = ConfigOf<typeof PROXY_OPTIONS>;

const HOST_PORT = /^(\[[0-9a-fA-F:.]+\]|[0-9.]+|[A-Za-z0-9.-]*):(\d{1,5})$/;
const CIDR4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/;

/** True for an IPv4 CIDR such as 10.244.0.0/16. */
export function isIpv4Cidr(s: string): boolean {
  const m = CIDR4.exec(s);
  return !!m && m.slice(1, 5).every((o) => Number(o) <= 255) && Number(m[5]) <= 32;
}

const CHECKS: CrossRule<ProxyConfig>[] = [
  { option: 'iptables-masquerade-bit', check: (c) => (c.iptablesMasqueradeBit < 0 || c.iptablesMasqueradeBit > 31 ? `must be in [0,31], got ${c.iptablesMasqueradeBit}` : undefined) },
  { option: 'sync-period', check: (c) => (c.syncPeriod <= 0 ? 'must be greater than 0' : undefined) },
  { option: 'min-sync-period', check: (c) => (c.minSyncPeriod < 0 ? 'must not be negative' : c.minSyncPeriod > c.syncPeriod ? 'must not exceed --sync-period' : undefined) },
  { option: 'config-sync-period', check: (c) => (c.configSyncPeriod <= 0 ? 'must be greater than 0' : undefined) },
  {
    option: 'cluster-cidr',
    check: (c) => {
      if (!c.clusterCidr) return undefined;
      const bad = c.clusterCidr.split(',').map((s) => s.trim()).filter((s) => !isIpv4Cidr(s) && !s.includes(':'));
      return bad.length ? `"${bad.join(',')}" is not a CIDR` : undefined;
    },
  },
  {
    option: 'nodeport-addresses',
    check: (c) => {
      const bad = c.nodeportAddresses.filter((s) => s !== 'primary' && !isIpv4Cidr(s) && !s.includes(':'));
      return bad.length ? `"${bad.join(',')}" is not a CIDR or "primary"` : undefined;
    },
  },
  { option: 'healthz-bind-address', check: (c) => (c.healthzBindAddress && !HOST_PORT.test(c.healthzBindAddress) ? `"${c.healthzBindAddress}" is not host:port` : undefined) },
  { option: 'metrics-bind-address', check: (c) => (c.metricsBindAddress && !HOST_PORT.test(c.metricsBindAddress) ? `"${c.metricsBindAddress}" is not host:port` : undefined) },
  { option: 'nft-table', check: (c) => (/^[A-Za-z][A-Za-z0-9_-]{0,63}$/.test(c.nftTable) ? undefined : `"${c.nftTable}" is not a table name (letters, digits, - and _)`) },
];

/** Each message starts with the option it names. */
const RULES: CrossRule<ProxyConfig>[] = CHECKS.map((r) => ({
  option: r.option,
  check: (c, ctx) => { const m = r.check(c, ctx); return m === undefined ? undefined : `--${r.option} ${m}`; },
}));

export const PROXY_FLAGS: DaemonFlagSet<ProxyConfig> = {
  daemon: 'proxy',
  summary: 'Routes Service addresses to their endpoints on this node: kube-proxy\'s role and options (not in the reference; --coreconfig for --kubeconfig).',
  options: PROXY_OPTIONS,
  gates: CONTROL_PLANE_GATES,
  rules: RULES,
  groups: [G.generic, G.client, P.proxy, G.gates, G.logging, G.ours],
};

/** Splits host:port text (IPv6 in brackets); '' host means every address. */
export function splitHostPort(text: string): { host: string; port: number } {
  const m = HOST_PORT.exec(text);
  if (!m) throw new Error(`"${text}" is not host:port`);
  return { host: (m[1] ?? '').replace(/^\[|\]$/g, ''), port: Number(m[2]) };
}

export function parseProxyArgs(argv: readonly string[]): ParseResult<ProxyConfig> {
  return parseDaemonArgs(PROXY_FLAGS, argv);
}

/**
 * From the server's options to one typed config per in-process daemon. Each daemon's config is
 * produced by that daemon's own parser from three layers of command-line text, later layers
 * winning:
 *   1. what the server derives (paths under --data-dir, the generated PKI, ports, runtime);
 *      a derived option the user sets in layer 2 or 3 is dropped, so lists are replaced, not
 *      appended to;
 *   2. the --config file section of that daemon;
 *   3. the --<daemon>-arg options.
 * Problems are FlagErrors naming where the option came from; the server exits 2 on them.
 */
import { hostname, networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { load as loadYaml } from 'js-yaml';
import { FlagError } from '../../flags/flag-error.js';
import { normalizeName } from '../../flags/option-spec.js';
import { SERVER_PARTS, parsePartArgs, passThroughArgs, type ServerConfig, type ServerPart } from '../../flags/server.js';
import type { ServerCoreconfigs } from './admin-coreconfig.js';
import type { PkiPaths } from './pki-bootstrap.js';
import { isLoopbackIp } from '../../util/ip.js';
import { proxyDerivedArgs } from './proxy-part.js';
import { frontProxyApiserverArgs } from './front-proxy-pki.js';

export type PartArgs = Record<ServerPart, string[]>;

/** Directories under the data dir. */
export interface ServerLayout {
  readonly dataDir: string;
  readonly pkiDir: string;
  /** The embedded LevelDB store (the API server's --data-dir). */
  readonly dbDir: string;
  readonly nodeagentRoot: string;
  readonly controllerManagerDir: string;
  /** What the API server's /logs/ shows (--logs-dir); make up writes server.log here. */
  readonly logsDir: string;
}

export function serverLayout(dataDir: string): ServerLayout {
  return {
    dataDir,
    pkiDir: join(dataDir, 'pki'),
    dbDir: join(dataDir, 'db'),
    nodeagentRoot: join(dataDir, 'nodeagent'),
    controllerManagerDir: join(dataDir, 'controller-manager'),
    logsDir: join(dataDir, 'logs'),
  };
}

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** --node-name, else the host name in lower case; must be a DNS subdomain (a node's name). */
export function resolveNodeName(config: Pick<ServerConfig, 'nodeName'>, host: string = hostname()): string {
  const name = config.nodeName || host.toLowerCase();
  if (name.length > 253 || !DNS_SUBDOMAIN.test(name)) {
    const hint = config.nodeName ? '' : ' (from the host name; set --node-name)';
    throw new FlagError(`invalid node name "${name}"${hint}: lower-case letters, digits, "-" and "." only`, 'node-name');
  }
  return name;
}

/** --container-runtime, defaulted: remote when an endpoint is given, else fake. */
export function resolveRuntime(config: Pick<ServerConfig, 'containerRuntime' | 'containerRuntimeEndpoint'>): 'remote' | 'fake' {
  const runtime = config.containerRuntime || (config.containerRuntimeEndpoint ? 'remote' : 'fake');
  if (runtime === 'remote' && !config.containerRuntimeEndpoint) {
    throw new FlagError('--container-runtime=remote needs --container-runtime-endpoint (for example unix:///run/containerd/containerd.sock)', 'container-runtime');
  }
  return runtime === 'remote' ? 'remote' : 'fake';
}

export interface DeriveInput {
  readonly server: ServerConfig;
  readonly layout: ServerLayout;
  readonly pki: PkiPaths;
  readonly coreconfigs: ServerCoreconfigs;
  readonly nodeName: string;
  readonly runtime: 'remote' | 'fake';
}

/**
 * Whether the node's address is loopback: the given one, or (none given) the agent's own
 * choice when the host has no other IPv4 address.
 */
function nodeOnLoopback(nodeIp: string): boolean {
  if (nodeIp) return isLoopbackIp(nodeIp);
  return !Object.values(networkInterfaces()).some((list) => (list ?? []).some((a) => a.family === 'IPv4' && !a.internal));
}

/** Layer 1: what the server sets for each daemon. */
export function derivedArgs(d: DeriveInput): PartArgs {
  const s = d.server;
  const { pki } = d;
  const specificBind = s.bindAddress && s.bindAddress !== '0.0.0.0' && s.bindAddress !== '::' ? s.bindAddress : '';
  const nodeIp = s.advertiseAddress || specificBind;
  const apiserver = [
    `--data-dir=${d.layout.dbDir}`,
    `--cert-dir=${d.layout.pkiDir}`,
    // /logs/ shows this directory only: the data dir beside it holds keys.
    `--logs-dir=${d.layout.logsDir}`,
    `--bind-address=${s.bindAddress || '0.0.0.0'}`,
    `--secure-port=${s.securePort}`,
    ...(s.advertiseAddress ? [`--advertise-address=${s.advertiseAddress}`] : []),
    `--tls-cert-file=${pki.cert('apiserver')}`,
    `--tls-private-key-file=${pki.key('apiserver')}`,
    `--client-ca-file=${pki.caCert}`,
    // kubeadm's secure defaults: nodes by the Node authorizer, everyone else by RBAC (the
    // bootstrap policy), anonymous requests allowed in but granted only what
    // system:public-info-viewer gives system:unauthenticated (/healthz, /livez, /readyz,
    // /version), and nodes restricted to their own Node and pods.
    '--authorization-mode=Node,RBAC',
    '--anonymous-auth=true',
    '--enable-admission-plugins=NodeRestriction',
    `--service-account-key-file=${pki.serviceAccountPub}`,
    // TokenRequest (kubectl create token, projected service-account tokens) signs with the
    // same pair the token controller uses; the option needs its (alpha) gate.
    `--service-account-signing-key-file=${pki.serviceAccountKey}`,
    '--feature-gates=TokenRequest=true',
    // Nodes on other machines join with a bootstrap token (`corectl token create`), as kubeadm.
    '--enable-bootstrap-token-auth=true',
    `--nodeagent-certificate-authority=${pki.caCert}`,
    `--nodeagent-client-certificate=${pki.cert('apiserver-nodeagent-client')}`,
    `--nodeagent-client-key=${pki.key('apiserver-nodeagent-client')}`,
    // The node's InternalIP is an address its agent listens on (below); host names of nodes
    // need not resolve (kubeadm's order).
    '--nodeagent-preferred-address-types=InternalIP,ExternalIP,Hostname',
    // A server bound to loopback has its node there too: the API server must reach it (other
    // loopback, link-local and unspecified node addresses are refused, see proxyable.ts).
    ...(nodeOnLoopback(nodeIp) ? ['--nodeagent-allow-loopback=true'] : []),
    // As kubeadm: node-level workloads (network plugins, proxies) run privileged containers.
    '--allow-privileged=true',
    // The aggregation layer (extension API servers, the metrics server) with its own front-proxy CA.
    ...frontProxyApiserverArgs(pki.dir),
  ];
  // One process holds every daemon: leader election only delays the start. The health
  // listeners of the controller manager and scheduler stay off (the API server's /readyz and
  // the node's status tell the cluster's health); --<daemon>-arg turns them on.
  const controllerManager = [
    `--coreconfig=${d.coreconfigs['controller-manager']}`,
    '--leader-elect=false',
    '--port=0',
    `--cert-dir=${d.layout.controllerManagerDir}`,
    `--cluster-signing-cert-file=${pki.caCert}`,
    `--cluster-signing-key-file=${pki.caKey}`,
    `--root-ca-file=${pki.caCert}`,
    `--service-account-private-key-file=${pki.serviceAccountKey}`,
    // As kubeadm: the bootstrap-token controllers, off by default, sign cluster-info and delete expired tokens.
    '--controllers=*,bootstrapsigner,tokencleaner',
    // As kubeadm: each controller acts as its own service account (system:controller:<name>).
    '--use-service-account-credentials=true',
  ];
  const scheduler = [
    `--coreconfig=${d.coreconfigs.scheduler}`,
    '--leader-elect=false',
    '--port=0',
  ];
  const root = d.layout.nodeagentRoot;
  const nodeagent = [
    `--coreconfig=${d.coreconfigs.nodeagent}`,
    `--hostname-override=${d.nodeName}`,
    `--root-dir=${root}`,
    `--cert-dir=${join(root, 'pki')}`,
    `--seccomp-profile-root=${join(root, 'seccomp')}`,
    // As kubeadm's node agent (privileged containers allowed); the API server's own
    // --allow-privileged=true above is the gate users see.
    '--allow-privileged=true',
    `--address=${s.bindAddress || '0.0.0.0'}`,
    // The node's InternalIP must be an address the agent listens on and its certificate names:
    // the advertise address, else a specific bind address (the agent's own default otherwise).
    ...(nodeIp ? [`--node-ip=${nodeIp}`] : []),
    `--tls-cert-file=${pki.cert('nodeagent')}`,
    `--tls-private-key-file=${pki.key('nodeagent')}`,
    `--client-ca-file=${pki.caCert}`,
    '--anonymous-auth=false',
    // As kubeadm: bearer tokens via TokenReview, every request via SubjectAccessReview (the
    // API server's node agent client certificate, CN corectl-apiserver-nodeagent-client, no
    // groups, is bound to system:kubelet-api-admin by the server: see nodeagent-client-rbac.ts).
    '--authentication-token-webhook=true',
    '--authorization-mode=Webhook',
    `--container-runtime=${d.runtime}`,
    ...(d.runtime === 'remote' ? [`--container-runtime-endpoint=${s.containerRuntimeEndpoint}`] : []),
    '--read-only-port=0',
    // A development machine often has swap on; the reference's refusal would stop the node.
    '--fail-swap-on=false',
    // Upstream raised the node agent's client limits to 50/100 (v1.27): 5/10 slows pod start.
    '--core-api-qps=50',
    '--core-api-burst=100',
  ];
  const proxy = d.server.disableProxy || d.runtime === 'fake' ? [] : proxyDerivedArgs(d.coreconfigs.proxy, d.nodeName);
  return { apiserver, 'controller-manager': controllerManager, scheduler, nodeagent, proxy };
}

function emptyParts(): PartArgs {
  return { apiserver: [], 'controller-manager': [], scheduler: [], nodeagent: [], proxy: [] };
}

function isDict(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function scalarText(v: unknown, where: string): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') return String(v);
  throw new FlagError(`${where}: want a string, number or boolean`, 'config');
}

/**
 * Layer 2: the --config YAML text. Each daemon section maps option names (with or without the
 * leading dashes) to a scalar, a list (the option repeated once per item) or a map (joined as
 * k=v,k2=v2 for map options such as --feature-gates or --node-labels).
 */
export function configFileArgs(text: string, file: string): PartArgs {
  let doc: unknown;
  try {
    doc = loadYaml(text);
  } catch (e) {
    throw new FlagError(`--config ${file}: not valid YAML: ${(e as Error).message.split('\n')[0] ?? ''}`, 'config');
  }
  const out = emptyParts();
  if (doc === undefined || doc === null) return out;
  if (!isDict(doc)) throw new FlagError(`--config ${file}: want a map with keys ${SERVER_PARTS.join(', ')}`, 'config');
  for (const [section, body] of Object.entries(doc)) {
    if (!(SERVER_PARTS as readonly string[]).includes(section)) {
      throw new FlagError(`--config ${file}: unknown section "${section}" (want ${SERVER_PARTS.join(', ')})`, 'config');
    }
    const part = section as ServerPart;
    if (body === null || body === undefined) continue;
    if (!isDict(body)) throw new FlagError(`--config ${file}: ${section} must be a map of option name to value`, 'config');
    for (const [rawName, value] of Object.entries(body)) {
      const name = rawName.replace(/^-+/, '');
      const where = `--config ${file}: ${section}.${name}`;
      if (Array.isArray(value)) {
        for (const item of value) out[part].push(`--${name}=${scalarText(item, where)}`);
      } else if (isDict(value)) {
        out[part].push(`--${name}=${Object.entries(value).map(([k, v]) => `${k}=${scalarText(v, where)}`).join(',')}`);
      } else {
        out[part].push(`--${name}=${scalarText(value, where)}`);
      }
    }
  }
  return out;
}

/** Option names set by argv tokens (`--name=value`, `--name`, `-v=2`), normalised. */
export function optionNames(args: readonly string[]): Set<string> {
  const names = new Set<string>();
  for (const a of args) {
    const m = /^--?([^=]+)/.exec(a);
    if (m?.[1]) names.add(normalizeName(m[1]));
  }
  return names;
}

export interface ComposedPart<C = unknown> {
  readonly config: C;
  /** Deprecation warnings for options the user gave (not the derived ones). */
  readonly warnings: readonly string[];
  /** The full argument list handed to the parser (for logs and tests). */
  readonly args: readonly string[];
}

export type ComposedParts = Record<ServerPart, ComposedPart>;

/** Layers 1-3 through each daemon's parser; throws a FlagError naming the source. */
export function composeParts(server: ServerConfig, derived: PartArgs, file: PartArgs, fileName: string): ComposedParts {
  const out: Partial<ComposedParts> = {};
  for (const part of SERVER_PARTS) {
    const fromFile = file[part];
    const fromCli = passThroughArgs(server, part);
    // Each user layer alone first, so that the message names where a bad option came from.
    if (fromFile.length) parsePartArgs(part, fromFile, `--config ${fileName} (${part})`);
    if (fromCli.length) parsePartArgs(part, fromCli, `--${part}-arg`);
    const user = optionNames([...fromFile, ...fromCli]);
    const kept = derived[part].filter((a) => ![...optionNames([a])].some((n) => user.has(n)));
    const args = [...kept, ...fromFile, ...fromCli];
    const parsed = parsePartArgs(part, args, `${part} (options set by the server, then yours)`);
    const warnings = parsed.warnings.filter((w) => [...user].some((n) => w.includes(`--${n} `) || w.includes(`-${n} `)));
    out[part] = { config: parsed.config, warnings, args };
  }
  return out as ComposedParts;
}

/**
 * `corectl token create`: makes a bootstrap token for a node on another machine, as
 * `kubeadm token create` does: Secret kube-system/bootstrap-token-<id> (type
 * bootstrap.kubernetes.io/token) valid for --ttl, for authentication and signing, in the group
 * system:bootstrappers:corectl:default-node-token. Prints the token, or with
 * --print-join-command the one command that joins a node (README, "Joining a node"):
 *
 *   corectl join <host>:<port> --token <id>.<secret> --discovery-token-ca-cert-hash sha256:<hex>
 *
 * The address and CA come from cluster-info in kube-public (what the node will fetch), else from
 * the coreconfig; --server overrides the address. The command refuses to make a token when the
 * API server would let the token's user list Secrets (an AlwaysAllow cluster): the token would
 * then be a cluster-admin credential, not a join ticket.
 */
import { X509Certificate } from 'node:crypto';
import { join } from 'node:path';
import { isApiError } from '../api/meta/status.js';
import type { KubeObject } from '../api/resources/types.js';
import { caCertHash, parseClusterInfoKubeconfig } from '../auth/bootstrap/cluster-info.js';
import {
  BOOTSTRAP_DEFAULT_GROUP, BOOTSTRAP_TOKEN_NAMESPACE, BOOTSTRAP_TOKEN_SECRET_TYPE, BOOTSTRAP_USER_PREFIX, CLUSTER_INFO_KUBECONFIG_KEY,
  CLUSTER_INFO_NAME, CLUSTER_INFO_NAMESPACE, DEFAULT_NODE_TOKEN_GROUP, generateBootstrapToken, isValidBootstrapGroup, parseBootstrapToken,
  secretNameOf, type BootstrapToken,
} from '../auth/bootstrap/token-secret.js';
import { loadCoreconfig } from '../client/coreconfig.js';
import { RestClient } from '../client/rest-client.js';
import { splitPemCertificates } from '../util/pki.js';
import { CommandError, lastValue, parseCommandArgs, parseGoDuration } from './command-args.js';

export const TOKEN_USAGE = [
  'Usage: corectl token create [<id>.<secret>] [options]',
  '',
  'Creates a bootstrap token (Secret kube-system/bootstrap-token-<id>) and prints it.',
  '',
  'Options:',
  '      --data-dir string         the corectl server\'s data dir; its admin.coreconfig is used (default /var/lib/core)',
  '      --coreconfig string       coreconfig of a cluster administrator (default <data-dir>/admin.coreconfig)',
  '      --ttl duration            how long the token is valid, 0 for ever (default 24h0m0s)',
  '      --description string      a note stored with the token',
  `      --groups strings          extra groups, each starting with system:bootstrappers: (default ${DEFAULT_NODE_TOKEN_GROUP})`,
  '      --usages strings          signing and/or authentication (default signing,authentication)',
  '      --server string           the API server address to print in the join command (default: from cluster-info)',
  '      --print-join-command      print the command that joins a node instead of the token alone',
  '',
].join('\n');

const SECRETS = { group: '', version: 'v1', resource: 'secrets', namespace: BOOTSTRAP_TOKEN_NAMESPACE };
const CONFIG_MAPS = { group: '', version: 'v1', resource: 'configmaps', namespace: CLUSTER_INFO_NAMESPACE };
const SARS = { group: 'authorization.k8s.io', version: 'v1', resource: 'subjectaccessreviews' };

export interface TokenCreateOptions {
  coreconfig: string;
  ttlMs: number;
  description: string;
  groups: string[];
  usages: string[];
  server: string;
  printJoinCommand: boolean;
  token?: BootstrapToken;
}

export function parseTokenCreateArgs(args: readonly string[]): TokenCreateOptions {
  const p = parseCommandArgs(args, { values: ['data-dir', 'coreconfig', 'ttl', 'description', 'groups', 'usages', 'server'], booleans: ['print-join-command'] });
  if (p.rest.length) throw new CommandError(`unexpected arguments after --: ${p.rest.join(' ')}`);
  if (p.positional.length > 1) throw new CommandError(`at most one token may be given, not ${p.positional.length}`);
  let token: BootstrapToken | undefined;
  if (p.positional[0] !== undefined) {
    token = parseBootstrapToken(p.positional[0]);
    if (!token) throw new CommandError('the token must be of the form [a-z0-9]{6}.[a-z0-9]{16}');
  }
  const groups = lastValue(p, 'groups', DEFAULT_NODE_TOKEN_GROUP).split(',').map((g) => g.trim()).filter((g) => g !== '');
  for (const g of groups) if (!isValidBootstrapGroup(g)) throw new CommandError(`--groups: "${g}" must start with system:bootstrappers: (then [a-z0-9:-], ending in [a-z0-9])`);
  const usages = lastValue(p, 'usages', 'signing,authentication').split(',').map((u) => u.trim()).filter((u) => u !== '');
  for (const u of usages) if (u !== 'signing' && u !== 'authentication') throw new CommandError(`--usages: unknown usage "${u}" (signing, authentication)`);
  const dataDir = lastValue(p, 'data-dir', '/var/lib/core');
  return {
    coreconfig: lastValue(p, 'coreconfig', join(dataDir, 'admin.coreconfig')),
    ttlMs: parseGoDuration(lastValue(p, 'ttl', '24h'), 'ttl'),
    description: lastValue(p, 'description'),
    groups, usages,
    server: lastValue(p, 'server'),
    printJoinCommand: p.booleans.get('print-join-command') ?? false,
    ...(token ? { token } : {}),
  };
}

/** RFC 3339 in UTC with whole seconds, as kubeadm writes expirations. */
function rfc3339(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');
}

export function tokenSecret(token: BootstrapToken, o: Pick<TokenCreateOptions, 'ttlMs' | 'description' | 'groups' | 'usages'>, now = Date.now()): KubeObject {
  const data: Record<string, string> = { 'token-id': token.id, 'token-secret': token.secret };
  if (o.ttlMs > 0) data['expiration'] = rfc3339(now + o.ttlMs);
  if (o.description) data['description'] = o.description;
  for (const u of o.usages) data[`usage-bootstrap-${u}`] = 'true';
  if (o.groups.length) data['auth-extra-groups'] = o.groups.join(',');
  return {
    apiVersion: 'v1', kind: 'Secret', metadata: { name: secretNameOf(token.id), namespace: BOOTSTRAP_TOKEN_NAMESPACE },
    type: BOOTSTRAP_TOKEN_SECRET_TYPE,
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
  } as KubeObject;
}

/** host:port of an https URL (brackets kept around IPv6). */
function hostPort(url: string): string {
  const u = new URL(url);
  return `${u.hostname}:${u.port || '443'}`;
}

/** The join command: `corectl join <host:port> --token ... --discovery-token-ca-cert-hash ...`. */
export function joinCommand(server: string, token: BootstrapToken, caHashes: readonly string[]): string {
  return ['corectl join', hostPort(server), '--token', `${token.id}.${token.secret}`, ...caHashes.flatMap((h) => ['--discovery-token-ca-cert-hash', h])].join(' ');
}

/** Whether the API server would let this token's user list Secrets in kube-system. */
async function tokenUserCanListSecrets(client: RestClient, token: BootstrapToken, groups: string[]): Promise<boolean> {
  const review = await client.create(SARS, {
    apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview',
    spec: {
      user: BOOTSTRAP_USER_PREFIX + token.id, groups: [BOOTSTRAP_DEFAULT_GROUP, ...groups, 'system:authenticated'],
      resourceAttributes: { namespace: BOOTSTRAP_TOKEN_NAMESPACE, verb: 'list', resource: 'secrets' },
    },
  } as KubeObject);
  return (review as { status?: { allowed?: boolean } }).status?.allowed === true;
}

export async function tokenCreate(o: TokenCreateOptions, out: (text: string) => void): Promise<void> {
  const connection = await loadCoreconfig({ path: o.coreconfig });
  const client = new RestClient({ connection, contentType: 'application/json', qps: 0, maxRetries: 2 });
  try {
    const token = o.token ?? generateBootstrapToken();
    if (o.usages.includes('authentication') && await tokenUserCanListSecrets(client, token, o.groups)) {
      throw new CommandError('the API server would let a bootstrap token read Secrets (is its --authorization-mode AlwaysAllow?): '
        + 'such a token would be a cluster-admin credential; run it with --authorization-mode=Node,RBAC');
    }
    try {
      await client.create(SECRETS, tokenSecret(token, o));
    } catch (e) {
      if (isApiError(e) && e.code === 409) throw new CommandError(`a token with id ${token.id} already exists`);
      throw e;
    }
    if (!o.printJoinCommand) { out(`${token.id}.${token.secret}\n`); return; }
    let server = o.server;
    let caPem = connection.ca?.toString('utf8') ?? '';
    try {
      const cm = await client.get(CONFIG_MAPS, CLUSTER_INFO_NAME);
      const text = (cm.data as Record<string, string> | undefined)?.[CLUSTER_INFO_KUBECONFIG_KEY];
      if (text) {
        const info = parseClusterInfoKubeconfig(text);
        server ||= info.server;
        caPem = info.caPem;
      }
    } catch (e) {
      if (!(isApiError(e) && e.code === 404)) throw e;
    }
    server ||= connection.server;
    if (!caPem) throw new CommandError(`no cluster CA: neither cluster-info in kube-public nor ${o.coreconfig} has one`);
    // Only CA certificates are pinned (a bundle may carry more than one).
    const hashes = splitPemCertificates(caPem).filter(isCa).map(caCertHash);
    if (!hashes.length) throw new CommandError('the cluster CA bundle holds no CA certificate');
    out(`${joinCommand(server, token, hashes)}\n`);
  } finally {
    client.close();
  }
}

function isCa(pem: string): boolean {
  try { return new X509Certificate(pem).ca; } catch { return false; }
}

/** `corectl token <sub> ...`; the exit code. */
export async function runTokenCommand(args: readonly string[], out: (t: string) => void = (t) => process.stdout.write(t)): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === undefined || sub === '--help' || sub === '-h' || rest.includes('--help') || rest.includes('-h')) {
    out(TOKEN_USAGE);
    return sub === undefined ? 2 : 0;
  }
  if (sub !== 'create') {
    process.stderr.write(`token: unknown subcommand "${sub}" (create)\n`);
    return 2;
  }
  let o: TokenCreateOptions;
  try {
    o = parseTokenCreateArgs(rest);
  } catch (e) {
    if (e instanceof CommandError) { process.stderr.write(`token create: ${e.message}\n`); return 2; }
    throw e;
  }
  try {
    await tokenCreate(o, out);
    return 0;
  } catch (e) {
    process.stderr.write(`token create: ${(e as Error).message}\n`);
    return 1;
  }
}

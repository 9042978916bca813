/**
 * `corectl join <host>:<port> --token <id>.<secret> --discovery-token-ca-cert-hash sha256:<hex>
 * [-- <node agent options>]`: token discovery as `kubeadm join` does it, then the node agent.
 *
 *  1. GET kube-public/cluster-info anonymously, not trusting the serving certificate yet;
 *     until the signature `jws-kubeconfig-<id>` appears (the signer runs just after a token is
 *     made) it asks again every second, up to --discovery-timeout;
 *  2. the signature must verify with the token (else the answer came from someone who does not
 *     know the token), and a CA certificate of its kubeconfig must match a
 *     --discovery-token-ca-cert-hash (else the token may have leaked to whoever answered);
 *  3. GET cluster-info again, now verifying the server with that CA; it must say the same;
 *  4. write <root-dir>/ca.crt and <root-dir>/bootstrap-coreconfig (the token user; mode 0600)
 *     and run `corectl nodeagent` in this process with --bootstrap-coreconfig and the options of
 *     a node that corectl server reaches for logs and exec (README, "Joining a node"; options given
 *     after `--` win). --print-nodeagent-command writes the files and prints the command instead.
 * The token never reaches the logs or the printed command.
 */
import { X509Certificate } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { join } from 'node:path';
import { bootstrapCoreconfigText } from '../client/bootstrap-coreconfig.js';
import { detachedSignatureValid } from '../auth/bootstrap/jws.js';
import { caCertHash, parseClusterInfoKubeconfig, type ClusterInfo } from '../auth/bootstrap/cluster-info.js';
import {
  CLUSTER_INFO_KUBECONFIG_KEY, CLUSTER_INFO_NAME, CLUSTER_INFO_NAMESPACE, JWS_KEY_PREFIX, parseBootstrapToken, type BootstrapToken,
} from '../auth/bootstrap/token-secret.js';
import { splitPemCertificates } from '../util/pki.js';
import { CommandError, lastValue, parseCommandArgs, parseGoDuration } from './command-args.js';

export const JOIN_USAGE = [
  'Usage: corectl join <host>:<port> --token <id>.<secret> --discovery-token-ca-cert-hash sha256:<hex> [options] [-- <nodeagent options>]',
  '',
  'Checks the cluster with the token and the CA hash (as kubeadm join), writes the node agent\'s',
  'bootstrap coreconfig and runs the node agent, which obtains its own client certificate.',
  '',
  'Options:',
  '      --token string                           the bootstrap token (corectl token create)',
  '      --discovery-token-ca-cert-hash strings   sha256:<hex> of the cluster CA\'s public key (repeatable)',
  '      --discovery-timeout duration             how long to wait for a signed cluster-info (default 5m0s)',
  '      --print-nodeagent-command                write the files, print the node agent command instead of running it',
  '',
].join('\n');

const CLUSTER_INFO_PATH = `/api/v1/namespaces/${CLUSTER_INFO_NAMESPACE}/configmaps/${CLUSTER_INFO_NAME}`;
const HASH_RE = /^sha256:[0-9a-f]{64}$/;

export interface JoinOptions {
  endpoint: string;
  token: BootstrapToken;
  caHashes: string[];
  discoveryTimeoutMs: number;
  printNodeagentCommand: boolean;
  nodeagentArgs: string[];
}

export function parseJoinArgs(args: readonly string[]): JoinOptions {
  const p = parseCommandArgs(args, { values: ['token', 'discovery-token-ca-cert-hash', 'discovery-timeout'], booleans: ['print-nodeagent-command'] });
  if (p.positional.length !== 1) throw new CommandError('want exactly one API server address, <host>:<port>');
  const endpoint = p.positional[0]!.replace(/^https:\/\//, '').replace(/\/$/, '');
  if (!/^(\[[0-9a-fA-F:.]+\]|[^\s/:[\]]+):\d{1,5}$/.test(endpoint)) throw new CommandError(`"${p.positional[0]}" is not <host>:<port>`);
  const token = parseBootstrapToken(lastValue(p, 'token'));
  if (!token) throw new CommandError('--token: want <id>.<secret> ([a-z0-9]{6}.[a-z0-9]{16})');
  const caHashes = (p.values.get('discovery-token-ca-cert-hash') ?? []).map((h) => h.toLowerCase());
  if (!caHashes.length) throw new CommandError('--discovery-token-ca-cert-hash is required: the cluster CA must be pinned (corectl token create --print-join-command prints it)');
  for (const h of caHashes) if (!HASH_RE.test(h)) throw new CommandError(`--discovery-token-ca-cert-hash: "${h}" is not sha256:<64 hex digits>`);
  return {
    endpoint, token, caHashes,
    discoveryTimeoutMs: parseGoDuration(lastValue(p, 'discovery-timeout', '5m'), 'discovery-timeout'),
    printNodeagentCommand: p.booleans.get('print-nodeagent-command') ?? false,
    nodeagentArgs: p.rest,
  };
}

/** One GET of cluster-info: its data, or a one-line reason. `ca` undefined: the certificate is not checked. */
function getClusterInfo(endpoint: string, ca: string | undefined): Promise<Record<string, string>> {
  const url = new URL(`https://${endpoint}${CLUSTER_INFO_PATH}`);
  return new Promise((resolve, reject) => {
    const req = request(url, {
      method: 'GET', headers: { accept: 'application/json' }, timeout: 10_000,
      ...(ca ? { ca, rejectUnauthorized: true } : { rejectUnauthorized: false }),
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        if (res.statusCode !== 200) { reject(new Error(`GET ${CLUSTER_INFO_PATH}: HTTP ${res.statusCode}: ${body.slice(0, 200)}`)); return; }
        try {
          resolve(((JSON.parse(body) as { data?: Record<string, string> }).data) ?? {});
        } catch {
          reject(new Error(`GET ${CLUSTER_INFO_PATH}: not JSON`));
        }
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${url.host}: no answer within 10s`)));
    req.on('error', (e) => reject(new Error(`GET https://${url.host}${CLUSTER_INFO_PATH}: ${e.message}`)));
    req.end();
  });
}

/** The checks of steps 2 and 3 on one cluster-info answer; undefined while the signature is missing. */
export function validateClusterInfo(data: Record<string, string>, token: BootstrapToken, caHashes: readonly string[]): ClusterInfo | undefined {
  const kubeconfig = data[CLUSTER_INFO_KUBECONFIG_KEY];
  if (kubeconfig === undefined) throw new CommandError(`cluster-info has no ${CLUSTER_INFO_KUBECONFIG_KEY} key`);
  const sig = data[JWS_KEY_PREFIX + token.id];
  if (sig === undefined) return undefined;
  if (!detachedSignatureValid(sig, kubeconfig, token.id, token.secret)) {
    throw new CommandError(`the signature ${JWS_KEY_PREFIX}${token.id} of cluster-info does not verify with the token: wrong token, or not the cluster it was made for`);
  }
  const info = parseClusterInfoKubeconfig(kubeconfig);
  const found = splitPemCertificates(info.caPem).map((pem) => { try { return new X509Certificate(pem).ca ? caCertHash(pem) : ''; } catch { return ''; } });
  if (!found.some((h) => h && caHashes.includes(h))) {
    throw new CommandError(`the cluster CA (${found.filter(Boolean).join(', ') || 'none'}) matches no --discovery-token-ca-cert-hash`);
  }
  return info;
}

/** Steps 1–3: the cluster's server URL and CA, trusted. */
export async function discoverCluster(o: Pick<JoinOptions, 'endpoint' | 'token' | 'caHashes' | 'discoveryTimeoutMs'>, note: (line: string) => void = () => undefined): Promise<ClusterInfo> {
  const deadline = Date.now() + o.discoveryTimeoutMs;
  let info: ClusterInfo | undefined;
  let lastWhy = '';
  for (;;) {
    try {
      info = validateClusterInfo(await getClusterInfo(o.endpoint, undefined), o.token, o.caHashes);
      if (info) break;
      lastWhy = `cluster-info has no signature for token id ${o.token.id} yet`;
    } catch (e) {
      if (e instanceof CommandError) throw e;
      lastWhy = (e as Error).message;
    }
    if (Date.now() >= deadline) throw new CommandError(`no valid cluster-info within --discovery-timeout: ${lastWhy}`);
    note(`waiting: ${lastWhy}`);
    await new Promise((r) => setTimeout(r, 1000));
  }
  const again = validateClusterInfo(await getClusterInfo(o.endpoint, info.caPem), o.token, o.caHashes);
  if (!again || again.server !== info.server || again.caPem !== info.caPem) {
    throw new CommandError('cluster-info read over the verified connection differs from the first answer');
  }
  return info;
}

/** kubeadm's bootstrap-kubelet.conf shape: the cluster and a token user. */
export function bootstrapCoreconfig(info: ClusterInfo, token: BootstrapToken): string {
  return bootstrapCoreconfigText({ server: info.server, caPem: info.caPem, token: `${token.id}.${token.secret}` });
}

/** The value of `--name` among node agent arguments (`--name=v` or `--name v`), if given. */
function argValue(args: readonly string[], name: string): string | undefined {
  let v: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a.startsWith(`--${name}=`)) v = a.slice(name.length + 3);
    else if (a === `--${name}`) v = args[i + 1];
  }
  return v;
}

/** The node agent's arguments: ours first, dropped where the user gave the same option. */
export function nodeagentArgs(rootDir: string, user: readonly string[]): string[] {
  const given = new Set(user.filter((a) => a.startsWith('--')).map((a) => a.slice(2).split('=')[0]!));
  const ours: Array<[string, string]> = [
    ['root-dir', rootDir],
    ['bootstrap-coreconfig', join(rootDir, 'bootstrap-coreconfig')],
    ['coreconfig', join(rootDir, 'coreconfig')],
    ['cert-dir', join(rootDir, 'pki')],
    ['rotate-certificates', 'true'],
    ['feature-gates', 'RotateNodeagentServerCertificate=true'],
    // The API server reaches the node with a client certificate of the cluster CA (logs, exec).
    ['client-ca-file', join(rootDir, 'ca.crt')],
    ['anonymous-auth', 'false'],
    ['authentication-token-webhook', 'true'],
    ['authorization-mode', 'Webhook'],
  ];
  return [...ours.filter(([n]) => !given.has(n)).map(([n, v]) => `--${n}=${v}`), ...user];
}

/** Discovery and files; the node agent's arguments. */
export async function prepareJoin(o: JoinOptions, note: (line: string) => void): Promise<string[]> {
  const info = await discoverCluster(o, note);
  note(`cluster-info verified: API server ${info.server}, CA pinned`);
  const rootDir = argValue(o.nodeagentArgs, 'root-dir') ?? '/var/lib/nodeagent';
  await mkdir(rootDir, { recursive: true, mode: 0o700 });
  await writeFile(join(rootDir, 'ca.crt'), info.caPem, { mode: 0o644 });
  await writeFile(join(rootDir, 'bootstrap-coreconfig'), bootstrapCoreconfig(info, o.token), { mode: 0o600 });
  return nodeagentArgs(rootDir, o.nodeagentArgs);
}

/**
 * `corectl join ...`: the exit code, or the node agent's arguments for the caller (cli.ts) to run
 * it in this process.
 */
export async function runJoinCommand(args: readonly string[], out: (t: string) => void = (t) => process.stdout.write(t)): Promise<number | { nodeagent: string[] }> {
  const ours = args.indexOf('--') < 0 ? args : args.slice(0, args.indexOf('--'));
  if (args.length === 0 || ours.includes('--help') || ours.includes('-h')) {
    out(JOIN_USAGE);
    return args.length === 0 ? 2 : 0;
  }
  let o: JoinOptions;
  try {
    o = parseJoinArgs(args);
  } catch (e) {
    if (e instanceof CommandError) { process.stderr.write(`join: ${e.message}\n`); return 2; }
    throw e;
  }
  try {
    const nodeagent = await prepareJoin(o, (line) => out(`corectl: ${line}\n`));
    if (o.printNodeagentCommand) { out(`corectl nodeagent ${nodeagent.join(' ')}\n`); return 0; }
    out('corectl: starting the node agent\n');
    return { nodeagent };
  } catch (e) {
    process.stderr.write(`join: ${(e as Error).message}\n`);
    return 1;
  }
}

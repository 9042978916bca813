/**
 * coreconfig (kubeconfig format) files written by the server:
 *   <data-dir>/admin.coreconfig                 for kubectl: certificates embedded, so the file
 *                                               can be copied elsewhere as it is
 *   <data-dir>/coreconfig/<daemon>.coreconfig   one per in-process daemon, naming the files in
 *                                               pki/ (rotating a certificate needs no rewrite)
 * The in-process daemons reach the API server over loopback TLS with these files, exactly as
 * separate processes would: the client library has no in-process transport, and one code path
 * for both set-ups is simpler to trust. All files are 0600 (they hold or name private keys).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { dump } from 'js-yaml';
import { writeFileAtomic } from './atomic-write.js';
import { ADMIN_USER, type LeafName, type PkiPaths } from './pki-bootstrap.js';

export const CLUSTER_NAME = 'corectl';

type Credentials =
  | { readonly embed: true; readonly caPem: string; readonly certPem: string; readonly keyPem: string }
  | { readonly embed: false; readonly caFile: string; readonly certFile: string; readonly keyFile: string };

export interface CoreconfigSpec {
  /** https://host:port */
  readonly server: string;
  readonly user: string;
  readonly credentials: Credentials;
}

/** The coreconfig document as YAML text. */
export function coreconfigText(spec: CoreconfigSpec): string {
  const b64 = (s: string): string => Buffer.from(s).toString('base64');
  const c = spec.credentials;
  const cluster = c.embed
    ? { server: spec.server, 'certificate-authority-data': b64(c.caPem) }
    : { server: spec.server, 'certificate-authority': c.caFile };
  const user = c.embed
    ? { 'client-certificate-data': b64(c.certPem), 'client-key-data': b64(c.keyPem) }
    : { 'client-certificate': c.certFile, 'client-key': c.keyFile };
  const context = `${spec.user}@${CLUSTER_NAME}`;
  return dump({
    apiVersion: 'v1',
    kind: 'Config',
    'current-context': context,
    clusters: [{ name: CLUSTER_NAME, cluster }],
    users: [{ name: spec.user, user }],
    contexts: [{ name: context, context: { cluster: CLUSTER_NAME, user: spec.user } }],
    preferences: {},
  }, { lineWidth: -1 });
}

export interface ServerCoreconfigs {
  readonly admin: string;
  readonly 'controller-manager': string;
  readonly scheduler: string;
  readonly nodeagent: string;
  readonly proxy: string;
}

/** Where the coreconfig files live under the data dir. */
export function coreconfigPaths(dataDir: string): ServerCoreconfigs {
  const dir = join(dataDir, 'coreconfig');
  return {
    admin: join(dataDir, 'admin.coreconfig'),
    'controller-manager': join(dir, 'controller-manager.coreconfig'),
    scheduler: join(dir, 'scheduler.coreconfig'),
    nodeagent: join(dir, 'nodeagent.coreconfig'),
    proxy: join(dir, 'proxy.coreconfig'),
  };
}

/** Writes (or rewrites, when the server URL or credentials changed) every coreconfig file. */
export async function writeServerCoreconfigs(opts: { dataDir: string; server: string; pki: PkiPaths; nodeName: string }): Promise<ServerCoreconfigs> {
  const paths = coreconfigPaths(opts.dataDir);
  const { pki } = opts;
  const [caPem, certPem, keyPem] = await Promise.all([
    readFile(pki.caCert, 'utf8'), readFile(pki.cert('admin'), 'utf8'), readFile(pki.key('admin'), 'utf8'),
  ]);
  const files = (leaf: LeafName): Credentials => ({ embed: false, caFile: pki.caCert, certFile: pki.cert(leaf), keyFile: pki.key(leaf) });
  const docs: Array<[string, string]> = [
    [paths.admin, coreconfigText({ server: opts.server, user: ADMIN_USER, credentials: { embed: true, caPem, certPem, keyPem } })],
    [paths['controller-manager'], coreconfigText({ server: opts.server, user: 'system:kube-controller-manager', credentials: files('controller-manager') })],
    [paths.scheduler, coreconfigText({ server: opts.server, user: 'system:kube-scheduler', credentials: files('scheduler') })],
    [paths.nodeagent, coreconfigText({ server: opts.server, user: `system:node:${opts.nodeName}`, credentials: files('nodeagent-client') })],
    [paths.proxy, coreconfigText({ server: opts.server, user: 'system:kube-proxy', credentials: files('proxy') })],
  ];
  await Promise.all(docs.map(async ([path, text]) => {
    const old = await readFile(path, 'utf8').catch(() => undefined);
    if (old !== text) await writeFileAtomic(path, text, 0o600);
  }));
  return paths;
}

/**
 * The two coreconfig files of node TLS bootstrap, in the shape kubeadm writes them:
 *  - the bootstrap coreconfig (a bootstrap token and the cluster CA), given to the node agent
 *    as --bootstrap-coreconfig;
 *  - the coreconfig the node agent writes once it holds a client certificate: the same cluster,
 *    the user's certificate and key both read from one pair file (the -current.pem symlink),
 *    so that a rotated certificate needs no new coreconfig.
 */
import { dump } from 'js-yaml';

function document(server: string, caPem: string, user: string, credentials: Record<string, string>): string {
  const cluster = 'default-cluster';
  return dump({
    apiVersion: 'v1', kind: 'Config',
    clusters: [{ name: cluster, cluster: { server, 'certificate-authority-data': Buffer.from(caPem).toString('base64') } }],
    users: [{ name: user, user: credentials }],
    contexts: [{ name: `${user}@${cluster}`, context: { cluster, user } }],
    'current-context': `${user}@${cluster}`,
    preferences: {},
  }, { lineWidth: -1 });
}

/** The bootstrap coreconfig: `token` is `<id>.<secret>`; caPem the cluster CA. */
export function bootstrapCoreconfigText(o: { server: string; caPem: string; token: string }): string {
  return document(o.server, o.caPem, 'tls-bootstrap-token-user', { token: o.token });
}

/** The node agent's coreconfig pointing at its client pair file. */
export function certificateCoreconfigText(o: { server: string; caPem: string; pairFile: string }): string {
  return document(o.server, o.caPem, 'default-auth', { 'client-certificate': o.pairFile, 'client-key': o.pairFile });
}

/**
 * The pod's /etc/hosts as Kubernetes' node agent manages it: localhost lines, the pod's own
 * address with its hostname (and its FQDN <hostname>.<subdomain>.<ns>.svc.<domain> when the pod
 * names a subdomain, as StatefulSet pods do), then the pod's hostAliases. A pod on the host
 * network gets the node's file with its hostAliases. One file per pod (<pod dir>/etc-hosts),
 * mounted into every container that does not mount /etc/hosts itself.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Pod } from './pod-types.js';

interface HostAlias { ip?: string; hostnames?: string[] }

function aliases(pod: Pod): string {
  const list = ((pod.spec ?? {}) as { hostAliases?: HostAlias[] }).hostAliases ?? [];
  if (!list.length) return '';
  return `\n# Entries added by HostAliases.\n${list.map((a) => `${a.ip ?? ''}\t${(a.hostnames ?? []).join('\t')}\n`).join('')}`;
}

/** The pod's hostname (spec.hostname, else its name, at most 63 characters) and domain. */
export function podHostnameAndDomain(pod: Pod, clusterDomain: string): { hostname: string; domain: string } {
  const spec = (pod.spec ?? {}) as { hostname?: string; subdomain?: string };
  let hostname = spec.hostname || (pod.metadata?.name ?? '');
  if (hostname.length > 63) hostname = hostname.slice(0, 63).replace(/[-.]+$/, '');
  const domain = spec.subdomain ? `${spec.subdomain}.${pod.metadata?.namespace ?? 'default'}.svc.${clusterDomain}` : '';
  return { hostname, domain };
}

/** The managed file of a pod on its own network. */
export function managedHostsFile(pod: Pod, podIps: readonly string[], clusterDomain: string): string {
  const { hostname, domain } = podHostnameAndDomain(pod, clusterDomain);
  let out = '# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n'
    + 'fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n';
  for (const ip of podIps) out += domain ? `${ip}\t${hostname}.${domain}\t${hostname}\n` : `${ip}\t${hostname}\n`;
  return out + aliases(pod);
}

/**
 * Writes the pod's hosts file under `podDir`; returns its path, or undefined when there is none
 * to give (a pod network without an address yet).
 */
export async function writePodHostsFile(pod: Pod, o: { podDir: string; podIp: string; clusterDomain: string; nodeHostsPath?: string }): Promise<string | undefined> {
  let text: string;
  if (pod.spec?.hostNetwork) {
    text = (await readFile(o.nodeHostsPath ?? '/etc/hosts', 'utf8').catch(() => '')) + aliases(pod);
  } else {
    if (!o.podIp) return undefined;
    text = managedHostsFile(pod, [o.podIp], o.clusterDomain);
  }
  const path = join(o.podDir, 'etc-hosts');
  await writeFile(path, text, { mode: 0o644 });
  return path;
}

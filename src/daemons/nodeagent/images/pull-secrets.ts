/**
 * Registry credentials from pull secrets, as Kubernetes' credential keyring matches them:
 * `kubernetes.io/dockerconfigjson` (`.dockerconfigjson`: {"auths": {...}}) and
 * `kubernetes.io/dockercfg` (`.dockercfg`: the map itself). A key matches an image when its
 * host matches the image's registry host (a `*.` label matches any one label; docker.io,
 * index.docker.io and registry-1.docker.io are one registry) and its path, if any, is a prefix
 * of the image's repository path. The most specific key (longest) wins; the secrets are tried in
 * the pod's order (the pod's own, then its service account's).
 */
import { normalizeImageName } from '../runtime/image-name.js';
import type { ImageAuth } from '../runtime/runtime.js';

export interface DockerConfigEntry { auth?: string; username?: string; password?: string; email?: string; identitytoken?: string; registrytoken?: string }

/** A secret's data, decoded (ObjectReader.secret's answer). */
export type SecretData = Readonly<Record<string, string>>;

const DOCKER_HUB = new Set(['docker.io', 'index.docker.io', 'registry-1.docker.io']);

function canonicalHost(h: string): string {
  const host = h.toLowerCase();
  return DOCKER_HUB.has(host) ? 'docker.io' : host;
}

/**
 * The entries of one secret, keyed as written; {} for other secrets or bad JSON. The API server
 * validates that each of the two secret types holds its key, so the key tells the type.
 */
export function dockerEntries(d: SecretData): Record<string, DockerConfigEntry> {
  try {
    if (d['.dockerconfigjson']) return (JSON.parse(d['.dockerconfigjson']) as { auths?: Record<string, DockerConfigEntry> }).auths ?? {};
    if (d['.dockercfg']) return JSON.parse(d['.dockercfg']) as Record<string, DockerConfigEntry>;
  } catch { /* a broken secret gives no credentials, as in Kubernetes */ }
  return {};
}

/** Splits a keyring key ("https://host:port/path/", "host", "*.host") into host and path. */
export function parseKey(key: string): { host: string; path: string } {
  let k = key.trim().replace(/^[a-z]+:\/\//i, '');
  k = k.replace(/\/+$/, '');
  const slash = k.indexOf('/');
  const host = slash < 0 ? k : k.slice(0, slash);
  let path = slash < 0 ? '' : k.slice(slash + 1);
  if (/^v[12]$/.test(path)) path = ''; // "https://index.docker.io/v1/" is Docker Hub itself
  return { host: canonicalHost(host), path };
}

function hostMatches(pattern: string, host: string): boolean {
  const [pHost, pPort] = pattern.split(':');
  const [hHost, hPort] = host.split(':');
  if ((pPort ?? '') !== (hPort ?? '')) return false;
  const pl = (pHost ?? '').split('.');
  const hl = (hHost ?? '').split('.');
  if (pl.length !== hl.length) return false;
  return pl.every((l, i) => l === '*' || l === hl[i]);
}

/** The image's registry host and repository path. */
export function imageLocation(image: string): { host: string; path: string } {
  const n = normalizeImageName(image).replace(/[@].*$/, '').replace(/:[^/]*$/, '');
  const slash = n.indexOf('/');
  return { host: canonicalHost(n.slice(0, slash)), path: n.slice(slash + 1) };
}

/**
 * containerd compares the URL host of serverAddress with the registry host it pulls from and
 * drops credentials that do not match: give it a URL; none for Docker Hub, whose pull host
 * (registry-1.docker.io) is not the name in the image.
 */
function serverAddressOf(host: string): string | undefined {
  return host === 'docker.io' ? undefined : `https://${host}`;
}

function toAuth(e: DockerConfigEntry, host: string): ImageAuth {
  const serverAddress = serverAddressOf(host);
  let username = e.username;
  let password = e.password;
  if ((!username || !password) && e.auth) {
    const decoded = Buffer.from(e.auth, 'base64').toString('utf8');
    const i = decoded.indexOf(':');
    if (i > 0) { username = decoded.slice(0, i); password = decoded.slice(i + 1); }
  }
  return {
    ...(username ? { username } : {}), ...(password ? { password } : {}), ...(serverAddress ? { serverAddress } : {}),
    ...(e.identitytoken ? { identityToken: e.identitytoken } : {}), ...(e.registrytoken ? { registryToken: e.registrytoken } : {}),
  };
}

/** Credentials for the image from the secrets, best match first (Kubernetes tries each in turn). */
export function credentialsFor(image: string, secrets: readonly SecretData[]): ImageAuth[] {
  const loc = imageLocation(image);
  const out: { auth: ImageAuth; score: number; order: number }[] = [];
  let order = 0;
  for (const s of secrets) {
    for (const [key, entry] of Object.entries(dockerEntries(s))) {
      const k = parseKey(key);
      if (!hostMatches(k.host, loc.host)) continue;
      if (k.path && !(loc.path === k.path || loc.path.startsWith(`${k.path}/`))) continue;
      out.push({ auth: toAuth(entry, k.host), score: key.length, order: order++ });
    }
  }
  return out.sort((a, b) => b.score - a.score || a.order - b.order).map((x) => x.auth);
}

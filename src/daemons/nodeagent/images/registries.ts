/**
 * Registry mirrors and private-registry settings for air-gapped nodes, in k3s' registries.yaml
 * shape, turned into containerd's configuration (what `make up` writes before starting it):
 *
 *   mirrors:                       # per registry name ("docker.io", "*" for every registry)
 *     docker.io:
 *       endpoint: ["http://127.0.0.1:5000"]
 *   configs:                       # per registry host (a mirror's or the registry's own)
 *     "reg.example:5000":
 *       auth: { username: u, password: p }      # or auth: <base64 user:pass>, identity_token
 *       tls: { ca_file: ..., cert_file: ..., key_file: ..., insecure_skip_verify: true }
 *
 * Mirrors and TLS become hosts.toml files under a certs.d directory (containerd's config_path:
 * `<certs.d>/<registry>/hosts.toml`, mirrors tried in order before the registry itself); the
 * credentials become the CRI plugin's `registry.configs."<host>".auth`, which containerd 1.6
 * uses alongside config_path when a pull brings no credentials of its own.
 */
import { load } from 'js-yaml';

export interface RegistryTls { ca_file?: string; cert_file?: string; key_file?: string; insecure_skip_verify?: boolean }
export interface RegistryAuth { username?: string; password?: string; auth?: string; identity_token?: string }
export interface RegistriesFile {
  mirrors?: Record<string, { endpoint?: string[] }>;
  configs?: Record<string, { auth?: RegistryAuth; tls?: RegistryTls }>;
}

export interface ContainerdRegistryConfig {
  /** Lines to put in containerd's config.toml (version 2). */
  readonly toml: string;
  /** hosts.toml files: path relative to the certs.d directory, and content. */
  readonly hosts: readonly { readonly path: string; readonly content: string }[];
}

const q = (s: string): string => JSON.stringify(s);

export function parseRegistries(text: string): RegistriesFile {
  if (text.replace(/#.*$/gm, '').trim() === '') return {};
  const doc = load(text) as unknown;
  if (doc === null || doc === undefined) return {};
  if (typeof doc !== 'object' || Array.isArray(doc)) throw new Error('registries file: the top level must be a mapping with mirrors and configs');
  const r = doc as RegistriesFile;
  for (const [name, m] of Object.entries(r.mirrors ?? {})) {
    if (!Array.isArray(m?.endpoint) || m.endpoint.some((e) => typeof e !== 'string')) throw new Error(`registries file: mirrors.${name}.endpoint must be a list of URLs`);
  }
  return r;
}

/** The registry host of an endpoint URL ("http://127.0.0.1:5000/v2" → "127.0.0.1:5000"). */
function hostOf(endpoint: string): string {
  return endpoint.replace(/^[a-z]+:\/\//i, '').replace(/\/.*$/, '');
}

function withScheme(endpoint: string): string {
  return /^[a-z]+:\/\//i.test(endpoint) ? endpoint.replace(/\/+$/, '') : `https://${endpoint}`;
}

function tlsLines(tls: RegistryTls | undefined, indent: string): string {
  if (!tls) return '';
  let out = '';
  if (tls.ca_file) out += `${indent}ca = ${q(tls.ca_file)}\n`;
  if (tls.cert_file && tls.key_file) out += `${indent}client = [[${q(tls.cert_file)}, ${q(tls.key_file)}]]\n`;
  if (tls.insecure_skip_verify) out += `${indent}skip_verify = true\n`;
  return out;
}

/** The upstream server of a registry name, as containerd knows it. */
function upstream(name: string): string {
  return name === 'docker.io' ? 'https://registry-1.docker.io' : `https://${name}`;
}

export function containerdRegistryConfig(r: RegistriesFile, certsDir: string): ContainerdRegistryConfig {
  const hosts: { path: string; content: string }[] = [];
  const configs = r.configs ?? {};
  const covered = new Set<string>();
  for (const [name, m] of Object.entries(r.mirrors ?? {})) {
    const dir = name === '*' ? '_default' : name;
    let content = name === '*' ? '' : `server = ${q(upstream(name))}\n${tlsLines(configs[name]?.tls, '')}`;
    for (const ep of m.endpoint ?? []) {
      content += `\n[host.${q(withScheme(ep))}]\n  capabilities = ["pull", "resolve"]\n${tlsLines(configs[hostOf(ep)]?.tls, '  ')}`;
    }
    hosts.push({ path: `${dir}/hosts.toml`, content });
    covered.add(name);
  }
  for (const [host, c] of Object.entries(configs)) {
    if (covered.has(host) || !c.tls) continue;
    hosts.push({ path: `${host}/hosts.toml`, content: `server = ${q(`https://${host}`)}\n${tlsLines(c.tls, '')}` });
  }
  let toml = `[plugins."io.containerd.grpc.v1.cri".registry]\n  config_path = ${q(certsDir)}\n`;
  for (const [host, c] of Object.entries(configs)) {
    const a = c.auth;
    if (!a) continue;
    toml += `[plugins."io.containerd.grpc.v1.cri".registry.configs.${q(host)}.auth]\n`;
    if (a.username) toml += `  username = ${q(a.username)}\n`;
    if (a.password) toml += `  password = ${q(a.password)}\n`;
    if (a.auth) toml += `  auth = ${q(a.auth)}\n`;
    if (a.identity_token) toml += `  identitytoken = ${q(a.identity_token)}\n`;
  }
  return { toml, hosts };
}

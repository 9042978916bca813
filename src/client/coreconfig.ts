/**
 * Loads a coreconfig: the kubeconfig format (YAML or JSON) naming clusters, users and contexts.
 * The current context (or an explicit one) picks a cluster and a user; `master` overrides the
 * cluster's server. Relative file paths are resolved against the coreconfig's directory.
 * Every failure is one line naming the file and the entry at fault.
 */
import { readFile } from 'node:fs/promises';
import { dirname, isAbsolute, resolve } from 'node:path';
import { load as loadYaml } from 'js-yaml';

/** Everything needed to reach and authenticate to one API server. */
export interface ClientConnection {
  /** https://host:port or http://host:port, without a trailing slash. */
  server: string;
  /**
   * Every API server to use, in order, `server` first, when several were given (a
   * comma-separated `server` in the coreconfig or --master): the client fails over between them
   * (see transport.ts). Absent or one entry: only `server`.
   */
  servers?: string[];
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  token?: string;
  /** Bearer token file the token was read from (read once, at load). */
  tokenFile?: string;
  username?: string;
  password?: string;
  insecureSkipTlsVerify?: boolean;
  tlsServerName?: string;
}

export interface LoadCoreconfigOptions {
  /** Path of the coreconfig file; optional when `master` is given. */
  path?: string;
  /** API server address; overrides the cluster's server. */
  master?: string;
  /** Context to use instead of current-context. */
  context?: string;
}

type Dict = Record<string, unknown>;

function isDict(v: unknown): v is Dict {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

class CoreconfigError extends Error {
  override readonly name = 'CoreconfigError';
}

function str(d: Dict, key: string, where: string, file: string): string | undefined {
  const v = d[key];
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v !== 'string') throw new CoreconfigError(`coreconfig ${file}: ${where}.${key} must be a string`);
  return v;
}

function named(root: Dict, list: string, item: string, name: string, file: string): Dict {
  const entries = root[list];
  if (entries !== undefined && entries !== null && !Array.isArray(entries)) throw new CoreconfigError(`coreconfig ${file}: ${list} must be a list`);
  const found = (entries as unknown[] | undefined ?? []).find((e) => isDict(e) && e.name === name);
  if (!found) throw new CoreconfigError(`coreconfig ${file}: ${item} "${name}" not found in ${list}`);
  const body = (found as Dict)[item];
  if (body !== undefined && !isDict(body)) throw new CoreconfigError(`coreconfig ${file}: ${list} entry "${name}" has no ${item} map`);
  return (body as Dict | undefined) ?? {};
}

export function normalizeServer(server: string): string {
  let s = server.trim();
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(s)) s = `https://${s}`;
  let u: URL;
  try {
    u = new URL(s);
  } catch {
    throw new CoreconfigError(`invalid API server address ${JSON.stringify(server)}`);
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') throw new CoreconfigError(`API server address ${JSON.stringify(server)} must be http or https`);
  return `${u.protocol}//${u.host}${u.pathname.replace(/\/+$/, '')}`;
}

async function readPart(file: string, what: string, path: string | undefined, data: string | undefined, base: string): Promise<Buffer | undefined> {
  if (data !== undefined) {
    const buf = Buffer.from(data, 'base64');
    if (buf.length === 0) throw new CoreconfigError(`coreconfig ${file}: ${what}-data is not valid base64`);
    return buf;
  }
  if (path === undefined) return undefined;
  const p = isAbsolute(path) ? path : resolve(base, path);
  try {
    return await readFile(p);
  } catch (e) {
    throw new CoreconfigError(`coreconfig ${file}: cannot read ${what} ${p}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
}

/**
 * A server value naming one API server or several, comma-separated (corectl's components fail
 * over between them; kubectl reads only one, so for kubectl put a load balancer in front).
 */
export function serverList(value: string): Pick<ClientConnection, 'server' | 'servers'> {
  const all = value.split(',').map((s) => s.trim()).filter(Boolean).map(normalizeServer);
  if (all.length === 0) throw new CoreconfigError(`invalid API server address ${JSON.stringify(value)}`);
  return all.length > 1 ? { server: all[0]!, servers: [...new Set(all)] } : { server: all[0]! };
}

/** Parses coreconfig text (YAML or JSON) found at `file` (for messages and relative paths). */
export async function parseCoreconfig(text: string, file: string, opts: Omit<LoadCoreconfigOptions, 'path'> = {}): Promise<ClientConnection> {
  let doc: unknown;
  try {
    doc = loadYaml(text);
  } catch (e) {
    throw new CoreconfigError(`coreconfig ${file}: not valid YAML or JSON: ${(e as Error).message.split('\n')[0]}`);
  }
  if (!isDict(doc)) throw new CoreconfigError(`coreconfig ${file}: not a kubeconfig document`);
  const base = dirname(resolve(file));
  const contextName = opts.context ?? str(doc, 'current-context', 'config', file);
  if (!contextName) throw new CoreconfigError(`coreconfig ${file}: no current-context is set`);
  const context = named(doc, 'contexts', 'context', contextName, file);
  const clusterName = str(context, 'cluster', `context "${contextName}"`, file);
  if (!clusterName && !opts.master) throw new CoreconfigError(`coreconfig ${file}: context "${contextName}" names no cluster`);
  const cluster = clusterName ? named(doc, 'clusters', 'cluster', clusterName, file) : {};
  const userName = str(context, 'user', `context "${contextName}"`, file);
  const user = userName ? named(doc, 'users', 'user', userName, file) : {};
  const cw = `cluster "${clusterName ?? ''}"`;
  const uw = `user "${userName ?? ''}"`;

  const server = opts.master ?? str(cluster, 'server', cw, file);
  if (!server) throw new CoreconfigError(`coreconfig ${file}: ${cw} has no server`);
  const conn: ClientConnection = serverList(server);
  const ca = await readPart(file, 'certificate-authority', str(cluster, 'certificate-authority', cw, file), str(cluster, 'certificate-authority-data', cw, file), base);
  if (ca) conn.ca = ca;
  if (cluster['insecure-skip-tls-verify'] === true) conn.insecureSkipTlsVerify = true;
  const sn = str(cluster, 'tls-server-name', cw, file);
  if (sn) conn.tlsServerName = sn;

  const cert = await readPart(file, 'client-certificate', str(user, 'client-certificate', uw, file), str(user, 'client-certificate-data', uw, file), base);
  const key = await readPart(file, 'client-key', str(user, 'client-key', uw, file), str(user, 'client-key-data', uw, file), base);
  if ((cert === undefined) !== (key === undefined)) throw new CoreconfigError(`coreconfig ${file}: ${uw} needs both a client certificate and a client key`);
  if (cert && key) { conn.cert = cert; conn.key = key; }
  const token = str(user, 'token', uw, file);
  const tokenFile = str(user, 'tokenFile', uw, file);
  if (token) conn.token = token;
  else if (tokenFile) {
    const p = isAbsolute(tokenFile) ? tokenFile : resolve(base, tokenFile);
    const t = (await readPart(file, 'tokenFile', p, undefined, base))?.toString('utf8').trim();
    if (!t) throw new CoreconfigError(`coreconfig ${file}: token file ${p} is empty`);
    conn.token = t;
    conn.tokenFile = p;
  }
  const username = str(user, 'username', uw, file);
  const password = str(user, 'password', uw, file);
  if (username !== undefined || password !== undefined) {
    if (conn.token) throw new CoreconfigError(`coreconfig ${file}: ${uw} has both a token and basic auth`);
    conn.username = username ?? '';
    conn.password = password ?? '';
  }
  if (conn.insecureSkipTlsVerify && conn.ca) throw new CoreconfigError(`coreconfig ${file}: ${cw} sets both a certificate authority and insecure-skip-tls-verify`);
  return conn;
}

/** Loads the connection from `path` (and/or `master`). */
export async function loadCoreconfig(opts: LoadCoreconfigOptions): Promise<ClientConnection> {
  if (!opts.path) {
    if (!opts.master) throw new CoreconfigError('neither --coreconfig nor --master was given: no API server to talk to');
    return serverList(opts.master);
  }
  let text: string;
  try {
    text = await readFile(opts.path, 'utf8');
  } catch (e) {
    throw new CoreconfigError(`coreconfig ${opts.path}: cannot read: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  return parseCoreconfig(text, opts.path, opts);
}
